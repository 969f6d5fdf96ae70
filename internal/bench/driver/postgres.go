package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// pgDriver stores keys in one table (default anykv_bench) with columns
// (tbl, k, v) and primary key (tbl, k), created if missing; the bench's
// table name is the tbl column. Keys use the "C" collation so prefix scans
// are index range scans. Every statement is its own transaction.
type pgDriver struct {
	cfg   *pgx.ConnConfig
	table string
	pool  chan *pgx.Conn
	slots chan struct{}
}

var sqlIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

func openPostgres(ctx context.Context, u *url.URL, opt Options) (Driver, error) {
	q := u.Query()
	table := q.Get("table")
	if table == "" {
		table = "anykv_bench"
	}
	if !sqlIdent.MatchString(table) {
		return nil, fmt.Errorf("postgres: table %q is not a plain SQL identifier", table)
	}
	q.Del("table")
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
	}
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", fmt.Sprint(int(opt.Timeout.Seconds()+0.999)))
	}
	cu := *u
	cu.Scheme = "postgres"
	cu.RawQuery = q.Encode()
	cfg, err := pgx.ParseConfig(cu.String())
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d := &pgDriver{cfg: cfg, table: table, pool: make(chan *pgx.Conn, opt.Conns), slots: make(chan struct{}, opt.Conns)}
	for i := 0; i < opt.Conns; i++ {
		d.slots <- struct{}{}
	}
	ddl := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	tbl text COLLATE "C" NOT NULL,
	k text COLLATE "C" NOT NULL,
	v bytea NOT NULL,
	PRIMARY KEY (tbl, k))`, table)
	if err := d.with(ctx, func(c *pgx.Conn) error { _, err := c.Exec(ctx, ddl); return err }); err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres %s: %w", u.Host, err)
	}
	return d, nil
}

func (d *pgDriver) Kind() string { return "postgres" }
func (d *pgDriver) Caps() Caps   { return CapScan | CapCount | CapIncr }
func (d *pgDriver) Settings() string {
	return fmt.Sprintf("pgx to %s:%d/%s, table %s(tbl, k, v bytea), upsert per put, autocommit", d.cfg.Host, d.cfg.Port, d.cfg.Database, d.table)
}

// with runs fn on a pooled connection, dialling one when the pool is empty
// and dropping it when it failed at the connection level.
func (d *pgDriver) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	var c *pgx.Conn
	select {
	case c = <-d.pool:
	default:
		select {
		case c = <-d.pool:
		case <-d.slots:
			var err error
			c, err = pgx.ConnectConfig(ctx, d.cfg)
			if err != nil {
				d.slots <- struct{}{}
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := fn(c)
	if c.IsClosed() || (err != nil && ctx.Err() != nil) {
		c.Close(context.Background())
		d.slots <- struct{}{}
	} else {
		d.pool <- c
	}
	return err
}

func (d *pgDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	var v []byte
	err := d.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT v FROM "+d.table+" WHERE tbl = $1 AND k = $2", table, key).Scan(&v)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (d *pgDriver) Put(ctx context.Context, table, key string, value []byte) error {
	return d.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "INSERT INTO "+d.table+" (tbl, k, v) VALUES ($1, $2, $3) ON CONFLICT (tbl, k) DO UPDATE SET v = EXCLUDED.v", table, key, value)
		return err
	})
}

func (d *pgDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	var n int64
	err := d.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, "DELETE FROM "+d.table+" WHERE tbl = $1 AND k = $2", table, key)
		n = tag.RowsAffected()
		return err
	})
	return n > 0, err
}

// rangeWhere returns the condition and arguments selecting keys with prefix.
func (d *pgDriver) rangeWhere(table, prefix string) (string, []any) {
	if prefix == "" {
		return "tbl = $1", []any{table}
	}
	if end, ok := prefixEnd(prefix, 0x7e); ok && !strings.ContainsFunc(prefix, func(r rune) bool { return r > 0x7e }) {
		return "tbl = $1 AND k >= $2 AND k < $3", []any{table, prefix, end}
	}
	return "tbl = $1 AND k >= $2 AND starts_with(k, $2)", []any{table, prefix}
}

func (d *pgDriver) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	where, args := d.rangeWhere(table, prefix)
	sql := "SELECT k FROM " + d.table + " WHERE " + where + " ORDER BY k"
	if limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", limit)
	}
	var out []string
	err := d.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

func (d *pgDriver) Count(ctx context.Context, table, prefix string) (int64, error) {
	where, args := d.rangeWhere(table, prefix)
	var n int64
	err := d.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT count(*) FROM "+d.table+" WHERE "+where, args...).Scan(&n)
	})
	return n, err
}

func (d *pgDriver) Noop(ctx context.Context) error {
	return d.with(ctx, func(c *pgx.Conn) error {
		var one int
		return c.QueryRow(ctx, "SELECT 1").Scan(&one)
	})
}

func (d *pgDriver) Close() error {
	for {
		select {
		case c := <-d.pool:
			c.Close(context.Background())
		default:
			return nil
		}
	}
}
