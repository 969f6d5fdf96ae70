package driver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlDriver stores keys in one InnoDB table (default anykv_bench) with
// columns (tbl, k, v) and primary key (tbl, k) in database anykv_bench (or
// the URL's path), both created if missing. Statements are prepared once.
//
// URL: mysql://user:pass@host:port/db?table=NAME, or
// mysql://user@/db?socket=/path/to/mysqld.sock for a unix socket.
type mysqlDriver struct {
	db    *sql.DB
	where string
	table string
	get, put, del, noop,
	scanAll, scanRange, countAll, countRange *sql.Stmt
}

func init() {
	// The driver logs connection hiccups to stderr; the bench reports errors itself.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
}

func openMySQL(ctx context.Context, u *url.URL, opt Options) (Driver, error) {
	q := u.Query()
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if cfg.User == "" {
		cfg.User = "root"
	}
	if s := q.Get("socket"); s != "" {
		cfg.Net, cfg.Addr = "unix", s
	} else {
		if u.Host == "" {
			return nil, fmt.Errorf("mysql: missing host:port or ?socket=")
		}
		cfg.Net, cfg.Addr = "tcp", u.Host
	}
	cfg.Timeout = opt.Timeout
	cfg.ReadTimeout = opt.Timeout
	cfg.WriteTimeout = opt.Timeout
	dbName := strings.Trim(u.Path, "/")
	if dbName == "" {
		dbName = "anykv_bench"
	}
	table := q.Get("table")
	if table == "" {
		table = "anykv_bench"
	}
	if !sqlIdent.MatchString(table) || !sqlIdent.MatchString(dbName) {
		return nil, fmt.Errorf("mysql: database %q or table %q is not a plain SQL identifier", dbName, table)
	}
	// Create the database over a connection without a default database.
	boot, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	_, err = boot.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+dbName)
	boot.Close()
	if err != nil {
		return nil, fmt.Errorf("mysql %s: %w", cfg.Addr, err)
	}
	cfg.DBName = dbName
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(opt.Conns)
	db.SetMaxIdleConns(opt.Conns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	d := &mysqlDriver{db: db, table: table, where: cfg.Addr + "/" + dbName}
	if err := d.prepare(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("mysql %s: %w", cfg.Addr, err)
	}
	return d, nil
}

func (d *mysqlDriver) prepare(ctx context.Context) error {
	t := d.table
	if _, err := d.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+t+` (
	tbl VARBINARY(200) NOT NULL,
	k VARBINARY(250) NOT NULL,
	v LONGBLOB NOT NULL,
	PRIMARY KEY (tbl, k)) ENGINE=InnoDB`); err != nil {
		return err
	}
	stmts := []struct {
		dst **sql.Stmt
		sql string
	}{
		{&d.get, "SELECT v FROM " + t + " WHERE tbl = ? AND k = ?"},
		{&d.put, "INSERT INTO " + t + " (tbl, k, v) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)"},
		{&d.del, "DELETE FROM " + t + " WHERE tbl = ? AND k = ?"},
		{&d.noop, "SELECT 1"},
		{&d.scanAll, "SELECT k FROM " + t + " WHERE tbl = ? AND k >= ? ORDER BY k LIMIT ?"},
		{&d.scanRange, "SELECT k FROM " + t + " WHERE tbl = ? AND k >= ? AND k < ? ORDER BY k LIMIT ?"},
		{&d.countAll, "SELECT count(*) FROM " + t + " WHERE tbl = ? AND k >= ?"},
		{&d.countRange, "SELECT count(*) FROM " + t + " WHERE tbl = ? AND k >= ? AND k < ?"},
	}
	for _, s := range stmts {
		st, err := d.db.PrepareContext(ctx, s.sql)
		if err != nil {
			return err
		}
		*s.dst = st
	}
	return nil
}

func (d *mysqlDriver) Kind() string { return "mysql" }
func (d *mysqlDriver) Caps() Caps   { return CapScan | CapCount }
func (d *mysqlDriver) Settings() string {
	return fmt.Sprintf("go-sql-driver to %s, InnoDB table %s(tbl, k, v longblob), prepared statements, autocommit", d.where, d.table)
}

func (d *mysqlDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	var v []byte
	err := d.get.QueryRowContext(ctx, table, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (d *mysqlDriver) Put(ctx context.Context, table, key string, value []byte) error {
	_, err := d.put.ExecContext(ctx, table, key, value)
	return err
}

func (d *mysqlDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	r, err := d.del.ExecContext(ctx, table, key)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

func (d *mysqlDriver) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	lim := uint64(1<<63 - 1)
	if limit > 0 {
		lim = uint64(limit)
	}
	var rows *sql.Rows
	var err error
	if end, ok := prefixEnd(prefix, 0xff); ok {
		rows, err = d.scanRange.QueryContext(ctx, table, prefix, end, lim)
	} else {
		rows, err = d.scanAll.QueryContext(ctx, table, prefix, lim)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return out, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (d *mysqlDriver) Count(ctx context.Context, table, prefix string) (int64, error) {
	var n int64
	var err error
	if end, ok := prefixEnd(prefix, 0xff); ok {
		err = d.countRange.QueryRowContext(ctx, table, prefix, end).Scan(&n)
	} else {
		err = d.countAll.QueryRowContext(ctx, table, prefix).Scan(&n)
	}
	return n, err
}

func (d *mysqlDriver) Noop(ctx context.Context) error {
	var one int
	return d.noop.QueryRowContext(ctx).Scan(&one)
}

func (d *mysqlDriver) Close() error {
	for _, s := range []*sql.Stmt{d.get, d.put, d.del, d.noop, d.scanAll, d.scanRange, d.countAll, d.countRange} {
		if s != nil {
			s.Close()
		}
	}
	return d.db.Close()
}
