// Package mysqlstore is the MariaDB/MySQL engine: anykv's items in one InnoDB table of a database people already
// run.
//
// Layout: table anykv_items(tbl VARBINARY(255), k VARBINARY(2816), v LONGBLOB, flags, expires, version) with
// primary key (tbl, k); flags holds the item's kind above the client flags (remote.PackFlags). Tables are a
// column, so flushing a table is one DELETE inside the commit's transaction and a table name may hold any byte.
// VARBINARY compares bytewise, so the primary key gives ordered scans and DISTINCT tbl the sorted table list.
// The primary key must fit InnoDB's 3072-byte index limit, hence the column sizes: a longer key or table name is
// refused with the server's error (the session runs in strict mode, so nothing is ever truncated).
//
// Item versions come from the one row of anykv_version, advanced in its own autocommit statement
// (UPDATE ... SET n = LAST_INSERT_ID(n + k)), so they keep growing across restarts and front ends; the version
// column doubles as the key's stamp for remote's optimistic check. The read of a batch's keys and the version
// reservation go in one round trip (multi-statement query).
//
// A commit is one InnoDB transaction at REPEATABLE READ in one round trip (multi-statement query): the keys
// Resolve read are locked with SELECT ... FOR UPDATE in key order (absent keys get gap locks, so nobody can insert
// them meanwhile), a guard statement fails with error 1242 if one's version moved (a batch that read a range of
// a table's keys locks that range first and guards it too: remote.RangeCommitter), then the flushes, deletes, one
// INSERT ... ON DUPLICATE KEY UPDATE of all puts, and COMMIT. The server stops at a statement's error, so a
// refused batch was not applied: the guard's error, a deadlock or a lock-wait timeout is a conflict to retry,
// any other is returned. A connection lost after the query was sent leaves the outcome unknown, which is
// reported and not retried.
package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the MariaDB/MySQL engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
type Store struct {
	*remote.Engine
	b *backend
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
)

type backend struct {
	db        *sql.DB
	maxPacket int // the server's max_allowed_packet
}

func init() {
	// The driver logs connection trouble to stderr; every such error is also returned and reported by anykv.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS anykv_items (
		tbl VARBINARY(255) NOT NULL, k VARBINARY(2816) NOT NULL, v LONGBLOB NOT NULL,
		flags BIGINT UNSIGNED NOT NULL, expires BIGINT NOT NULL, version BIGINT UNSIGNED NOT NULL,
		PRIMARY KEY (tbl, k), KEY anykv_items_expires (expires)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS anykv_version (id TINYINT NOT NULL PRIMARY KEY, n BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
	`INSERT IGNORE INTO anykv_version VALUES (1, 0)`,
}

// Config turns a mysql:// or mariadb:// URL (user:pw@host:port/db, optional ?tls=true|skip-verify|preferred)
// into the driver's configuration. Errors wrap remote.ErrBadURL.
func Config(raw string) (*mysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("%w: scheme %q, want mysql or mariadb", remote.ErrBadURL, u.Scheme)
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net, cfg.Addr = "tcp", u.Host
	if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if u.Hostname() == "" || cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return nil, fmt.Errorf("%w: want mysql://user:pw@host:port/database", remote.ErrBadURL)
	}
	for k, v := range u.Query() {
		if k != "tls" {
			return nil, fmt.Errorf("%w: unknown parameter %q (only tls)", remote.ErrBadURL, k)
		}
		cfg.TLSConfig = v[0]
	}
	// SET NAMES utf8mb4 on every connection, whatever the server sets (init_connect, or character-set-server
	// with skip-character-set-client-handshake): the driver escapes the keys and values it interpolates with
	// backslashes, which a multi-byte character set whose characters may end in 0x5c (GBK, Big5, SJIS) reads
	// as part of a character, letting a value end its literal and run the rest of it as SQL.
	if err := cfg.Apply(mysql.Charset("utf8mb4", "")); err != nil { // validates tls
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	cfg.Timeout = 10 * time.Second
	cfg.MultiStatements = true   // a batch's read + version reservation, and a commit's writes, in one round trip
	cfg.InterpolateParams = true // required by multi-statement queries with arguments
	// The driver's packet limit is the server's max_allowed_packet (asked on connecting), the one fits judges by:
	// under the driver's own default (64 MiB) a query between the two was prepared instead of interpolated, which
	// the server refuses for a multi-statement query as a syntax error.
	cfg.MaxAllowedPacket = 0
	// autocommit: the version reservation, the reads and the schema are statements of their own whatever the
	// server's default (autocommit=0 left a transaction open on the pooled connection: the counter row locked,
	// and that connection's later reads served from its old snapshot). sql_safe_updates off: FLUSHALL is a
	// DELETE without a key in its WHERE, which safe-updates mode refuses.
	cfg.Params = map[string]string{"sql_mode": "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'", "autocommit": "1",
		"sql_safe_updates": "0"}
	return cfg, nil
}

// Open connects to the database at raw (see Config), creates the tables if missing, and returns the engine.
func Open(ctx context.Context, raw string) (*Store, error) {
	cfg, err := Config(raw)
	if err != nil {
		return nil, err
	}
	db, err := openIsolated(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	db.SetConnMaxIdleTime(5 * time.Minute)
	for _, s := range schema {
		if _, err := db.ExecContext(ctx, s); err != nil {
			db.Close()
			return nil, err
		}
	}
	b := &backend{db: db}
	if err := db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&b.maxPacket); err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{Engine: remote.New(b), b: b}
	// Group commit: one transaction commits any keys.
	s.Engine.GroupMuts = 128
	s.Engine.Ranger = s // collection ops read ranges of members with the store's own scan
	return s, nil
}

// openIsolated returns the pool of connections to cfg's server, each session at REPEATABLE READ whatever the
// server's default: the reads (Get, a batch's read, scans) are statements of their own, and at READ UNCOMMITTED
// they answered rows other transactions had not committed (a commit that may yet fail, and is not durable). The
// variable is transaction_isolation (MySQL, MariaDB from 11.1) or, where the server does not know it, tx_isolation
// (MariaDB before 11.1); the first connection finds out which.
func openIsolated(ctx context.Context, cfg *mysql.Config) (*sql.DB, error) {
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		c := cfg.Clone()
		c.Params[name] = "'REPEATABLE-READ'"
		conn, err := mysql.NewConnector(c)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
		}
		db := sql.OpenDB(conn)
		err = db.PingContext(ctx)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1193 { // unknown system variable: try the other name
			db.Close()
			continue
		}
		if err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	return nil, errors.New("mysql: the server knows neither transaction_isolation nor tx_isolation")
}

// inSlots appends "(tbl, k) IN ((?,?),...)" for slots and their arguments.
func inSlots(q *strings.Builder, args []any, slots []remote.Slot) []any {
	q.WriteString("(tbl, k) IN (")
	for i, s := range slots {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString("(?,?)")
		args = append(args, []byte(s.Table), nonNil(s.Key))
	}
	q.WriteString(")")
	return args
}

// nonNil returns b, or an empty slice for nil (the driver would send nil as NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// row is one scanned item row: its table, key and item.
type row struct {
	tbl []byte
	remote.Entry
}

// scanItems reads rows of (tbl, k, v, flags, expires, version).
func scanItems(rows *sql.Rows) ([]row, error) {
	var out []row
	for rows.Next() {
		var r row
		var flags uint64
		if err := rows.Scan(&r.tbl, &r.Key, &r.Item.Value, &flags, &r.Item.Expires, &r.Item.Version); err != nil {
			return nil, err
		}
		remote.UnpackFlags(flags, &r.Item)
		out = append(out, r)
	}
	return out, rows.Err()
}

const itemCols = "SELECT tbl, k, v, flags, expires, version FROM anykv_items WHERE "

// Read implements remote.Backend: in one multi-statement round trip the version counter is advanced by n (its
// new value comes back through LAST_INSERT_ID) and every slot is read by one SELECT (one snapshot).
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	var q strings.Builder
	var args []any
	if n > 0 {
		q.WriteString("UPDATE anykv_version SET n = LAST_INSERT_ID(n + ?) WHERE id = 1; SELECT LAST_INSERT_ID();")
		args = append(args, n)
	}
	if len(slots) > 0 {
		q.WriteString(itemCols)
		args = inSlots(&q, args, slots)
	}
	if err := b.fits(q.String(), args); err != nil {
		return nil, nil, false, nil, err
	}
	rows, err := b.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, nil, false, nil, err
	}
	defer rows.Close()
	var versions []uint64
	if n > 0 {
		var top uint64
		if !rows.Next() {
			return nil, nil, false, nil, fmt.Errorf("mysql: version counter: %w", errors.Join(rows.Err(), errors.New("no row")))
		}
		if err := rows.Scan(&top); err != nil {
			return nil, nil, false, nil, err
		}
		for v := top - uint64(n) + 1; v <= top; v++ {
			versions = append(versions, v)
		}
		if len(slots) > 0 && !rows.NextResultSet() {
			return nil, nil, false, nil, fmt.Errorf("mysql: read: %w", errors.Join(rows.Err(), errors.New("no result")))
		}
	}
	items := make([]remote.Stored, len(slots))
	if len(slots) > 0 {
		got, err := scanItems(rows)
		if err != nil {
			return nil, nil, false, nil, err
		}
		at := make(map[string]int, len(slots))
		for i, s := range slots {
			at[remote.SlotID(s.Table, s.Key)] = i
		}
		for _, r := range got {
			if i, ok := at[remote.SlotID(string(r.tbl), r.Key)]; ok {
				items[i] = remote.Stored{Item: r.Item, Found: true, Stamp: r.Item.Version}
			}
		}
	}
	return items, versions, true, nil, rows.Close()
}

// Unreachable implements remote.Unreachable: the driver lost its connection (mysql.ErrInvalidConn, a connection
// broken mid-answer) or had none to send on (driver.ErrBadConn, which database/sql already retried).
func (b *backend) Unreachable(err error) bool {
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn)
}

// Get implements remote.Backend.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	var it engine.Item
	var flags uint64
	err := b.db.QueryRowContext(ctx, `SELECT v, flags, expires, version FROM anykv_items WHERE tbl = ? AND k = ?`,
		[]byte(s.Table), nonNil(s.Key)).Scan(&it.Value, &flags, &it.Expires, &it.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Item{}, false, nil
	}
	if err != nil {
		return engine.Item{}, false, err
	}
	remote.UnpackFlags(flags, &it)
	return it, true, nil
}

// Close implements remote.Backend.
func (b *backend) Close() error { return b.db.Close() }

// Commit implements remote.Backend: one transaction in one round trip. The keys read are locked (FOR UPDATE, in
// key order) and checked by a statement that fails with "subquery returns more than 1 row" (1242) if a version
// moved; the server stops a multi-statement query at its first error, so nothing after it runs, COMMIT included.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	return b.CommitRanges(ctx, checks, nil, w, tok)
}

// CommitRanges implements remote.RangeCommitter: Commit that first locks each range a batch read (a locking read
// takes next-key locks, so nobody can insert into the range until COMMIT), then, with the keys' guard, fails with
// error 1242 unless the range holds exactly the keys and versions read.
func (b *backend) CommitRanges(ctx context.Context, checks []remote.Check, ranges []remote.RangeCheck, w *remote.Writes, _ any) error {
	var q strings.Builder
	q.WriteString("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION;")
	var args []any
	for _, r := range ranges { // every locking read before the first plain one, which takes the snapshot
		q.WriteString("SELECT 1 FROM anykv_items WHERE ")
		args = inRange(&q, args, r)
		q.WriteString(" ORDER BY tbl, k FOR UPDATE;")
	}
	args = guard(&q, args, checks)
	args = rangeGuard(&q, args, ranges)
	args = writes(&q, args, w)
	q.WriteString("COMMIT")
	if err := b.fits(q.String(), args); err != nil {
		return err
	}
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return err
	}
	clean := false // the connection is outside any transaction and may go back to the pool
	defer func() {
		if !clean { // a transaction may be open, or the connection broken: never reuse it
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	_, err = conn.ExecContext(ctx, q.String(), args...)
	var me *mysql.MySQLError
	switch {
	case err == nil:
		clean = true
		return nil
	case errors.As(err, &me): // the server refused a statement: the ones after it, COMMIT included, did not run
		if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); rerr == nil {
			clean = true
		}
		switch me.Number {
		case 1242: // the guard: a key read was written meanwhile
			return fmt.Errorf("%w: a key read was written meanwhile", remote.ErrConflict)
		case 1213, 1205: // deadlock (the transaction was rolled back), lock wait timeout
			return fmt.Errorf("%w: %s", remote.ErrConflict, me.Message)
		case 1406: // data too long: a key over the key column (within anykv's key limit), the client's bad input
			return fmt.Errorf("%w: a key of over 2816 bytes, or a table name of over 255, does not fit MariaDB's "+
				"columns (%s)", engine.ErrInvalid, me.Message)
		}
		return fmt.Errorf("mysql: %w: %w", remote.ErrRefused, err) // the server stopped before COMMIT
	case errors.Is(err, driver.ErrBadConn): // the driver sent nothing
		return fmt.Errorf("mysql: commit not sent: %w", err)
	}
	return fmt.Errorf("mysql: %w: %v", remote.ErrUnknownOutcome, err)
}

// fits refuses a statement that would exceed the server's max_allowed_packet once the driver interpolates args
// into q (a []byte as _binary'...' with some bytes escaped): the driver would instead prepare it on the server,
// which refuses a multi-statement query with a puzzling syntax error.
func (b *backend) fits(q string, args []any) error {
	n := len(q) + 64
	for _, a := range args {
		v, ok := a.([]byte)
		if !ok {
			n += 20 // an integer
			continue
		}
		n += len("_binary''") + len(v)
		for _, c := range v {
			switch c {
			case 0, '\n', '\r', '\\', '\'', '"', 0x1a:
				n++
			}
		}
	}
	if n >= b.maxPacket {
		return fmt.Errorf("mysql: %w: a batch of about %d bytes of SQL, over the server's max_allowed_packet (%d)",
			engine.ErrBatchTooBig, n, b.maxPacket)
	}
	return nil
}

// guard appends the statements that lock the checked keys in key order (absent ones through gap locks, so
// nobody can insert them) and fail with error 1242 if one's version is not the checked stamp (0: absent). The
// check reads after the locks are granted, so it sees the versions no one can change until COMMIT.
func guard(q *strings.Builder, args []any, checks []remote.Check) []any {
	if len(checks) == 0 {
		return args
	}
	slots := make([]remote.Slot, len(checks))
	for i, c := range checks {
		slots[i] = c.Slot
	}
	q.WriteString("SELECT 1 FROM anykv_items WHERE ")
	args = inSlots(q, args, slots)
	q.WriteString(" ORDER BY tbl, k FOR UPDATE;" +
		"SELECT (SELECT 1 FROM (SELECT 1 UNION ALL SELECT 2) AS two WHERE EXISTS (SELECT 1 FROM (")
	for i, c := range checks {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString("SELECT ? AS tbl, ? AS k, ? AS ver")
		args = append(args, []byte(c.Table), nonNil(c.Key), c.Stamp)
	}
	q.WriteString(") AS w LEFT JOIN anykv_items i ON i.tbl = w.tbl AND i.k = w.k " +
		"WHERE COALESCE(i.version, 0) <> w.ver)) INTO @anykv_check;")
	return args
}

// inRange appends the condition selecting the rows of r's range.
func inRange(q *strings.Builder, args []any, r remote.RangeCheck) []any {
	q.WriteString("tbl = ? AND k >= ?")
	args = append(args, []byte(r.Table), nonNil(r.Start))
	if r.End != nil {
		q.WriteString(" AND k < ?")
		args = append(args, r.End)
	}
	return args
}

// rangeGuard appends, per range, a statement that fails with error 1242 (as guard's) unless the range holds as
// many rows as were read and each key read at the version read: exactly the rows read, as keys are distinct.
func rangeGuard(q *strings.Builder, args []any, ranges []remote.RangeCheck) []any {
	for _, r := range ranges {
		q.WriteString("SELECT (SELECT 1 FROM (SELECT 1 UNION ALL SELECT 2) AS two WHERE " +
			"(SELECT COUNT(*) FROM anykv_items WHERE ")
		args = inRange(q, args, r)
		q.WriteString(") <> ?")
		args = append(args, len(r.Keys))
		if len(r.Keys) > 0 {
			q.WriteString(" OR EXISTS (SELECT 1 FROM (")
			for i, k := range r.Keys {
				if i > 0 {
					q.WriteString(" UNION ALL ")
				}
				q.WriteString("SELECT ? AS k, ? AS ver")
				args = append(args, nonNil(k), r.Versions[i])
			}
			q.WriteString(") AS w LEFT JOIN anykv_items i ON i.tbl = ? AND i.k = w.k WHERE COALESCE(i.version, 0) <> w.ver)")
			args = append(args, []byte(r.Table))
		}
		q.WriteString(") INTO @anykv_check;")
	}
	return args
}

// writes appends the statements (each ending in ";") carrying w, and their arguments.
func writes(q *strings.Builder, args []any, w *remote.Writes) []any {
	switch {
	case w.FlushAll:
		q.WriteString("DELETE FROM anykv_items;")
	case len(w.Flush) > 0:
		q.WriteString("DELETE FROM anykv_items WHERE tbl IN (")
		for i, t := range w.Flush {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString("?")
			args = append(args, []byte(t))
		}
		q.WriteString(");")
	}
	if len(w.Delete) > 0 {
		q.WriteString("DELETE FROM anykv_items WHERE ")
		args = inSlots(q, args, w.Delete)
		q.WriteString(";")
	}
	if len(w.Put) > 0 {
		q.WriteString("INSERT INTO anykv_items (tbl, k, v, flags, expires, version) VALUES ")
		for i, p := range w.Put {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString("(?,?,?,?,?,?)")
			args = append(args, []byte(p.Table), nonNil(p.Key), nonNil(p.Item.Value), remote.PackFlags(p.Item), p.Item.Expires, p.Item.Version)
		}
		q.WriteString(" ON DUPLICATE KEY UPDATE v = VALUES(v), flags = VALUES(flags), expires = VALUES(expires), " +
			"version = VALUES(version);")
	}
	return args
}

const scanPage = 256

// Scan implements engine.Scanner in pages of 256 keys through the primary key. Each page is one snapshot; a
// write between pages may or may not be seen, as with a Redis SCAN. Each page's query, its rows included, is
// bounded by the engine's Timeout (remote.Engine.RoundTrip), not the scan as a whole.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	return remote.ScanPages(r, scanPage, func(from []byte, incl bool) ([]remote.Entry, error) {
		op := ">"
		if incl {
			op = ">="
		}
		q := itemCols + "tbl = ? AND k " + op + " ? AND (expires = 0 OR expires > ?)"
		args := []any{[]byte(table), from, now}
		if r.End != nil {
			q += " AND k < ?"
			args = append(args, r.End)
		}
		return remote.Call(ctx, s.Engine, func(ctx context.Context) ([]remote.Entry, error) {
			rows, err := s.b.db.QueryContext(ctx, q+" ORDER BY k LIMIT ?", append(args, scanPage)...)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			page, err := scanItems(rows)
			out := make([]remote.Entry, len(page))
			for i, p := range page {
				out[i] = p.Entry
			}
			return out, err
		})
	}, fn)
}

// Tables implements engine.TableLister with one query, bounded as a whole by the engine's Timeout
// (remote.Engine.RoundTrip): database/sql takes one context per query, so there is no finer bound.
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	return remote.Call(ctx, s.Engine, func(ctx context.Context) ([]string, error) {
		rows, err := s.b.db.QueryContext(ctx, `SELECT DISTINCT tbl FROM anykv_items ORDER BY tbl`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var t []byte
			if err := rows.Scan(&t); err != nil {
				return nil, err
			}
			names = append(names, string(t))
		}
		return names, rows.Err()
	})
}

// Sweep implements engine.Sweeper: it deletes up to budget items expired at now, found through the expiry
// index. The condition is judged on each row as it is deleted, so a row rewritten meanwhile is left alone. The
// one statement is bounded by the engine's Timeout (remote.Engine.RoundTrip).
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	res, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (sql.Result, error) {
		return s.b.db.ExecContext(ctx, `DELETE FROM anykv_items WHERE expires <> 0 AND expires <= ? LIMIT ?`, now, budget)
	})
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
