package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// respDriver speaks RESP2 to anykv or Redis. A table is a key prefix
// "table:"; scans use SCAN MATCH, counts scan and count.
type respDriver struct {
	c    *redis.Client
	addr string
	db   int
}

func openRESP(u *url.URL, opt Options) (Driver, error) {
	db := 0
	if p := strings.Trim(u.Path, "/"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("resp: database %q is not a number", p)
		}
		db = n
	}
	o := &redis.Options{
		Addr:                  u.Host,
		DB:                    db,
		Protocol:              2,
		DisableIdentity:       true,
		PoolSize:              opt.Conns,
		MaxRetries:            -1, // report errors, do not hide them behind retries
		DialTimeout:           opt.Timeout,
		ReadTimeout:           opt.Timeout,
		WriteTimeout:          opt.Timeout,
		ContextTimeoutEnabled: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
		if o.Password == "" {
			o.Password, o.Username = o.Username, ""
		}
	}
	return &respDriver{c: redis.NewClient(o), addr: u.Host, db: db}, nil
}

func (d *respDriver) Kind() string { return "resp" }
func (d *respDriver) Caps() Caps   { return CapScan | CapCount }
func (d *respDriver) Settings() string {
	return fmt.Sprintf("RESP2 to %s db %d, SET/GET/DEL, keys \"table:key\", scan via SCAN MATCH", d.addr, d.db)
}

func (d *respDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	v, err := d.c.Get(ctx, table+":"+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (d *respDriver) Put(ctx context.Context, table, key string, value []byte) error {
	return d.c.Set(ctx, table+":"+key, value, 0).Err()
}

func (d *respDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	n, err := d.c.Del(ctx, table+":"+key).Result()
	return n > 0, err
}

// globEscape escapes the glob metacharacters SCAN MATCH understands.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scan walks SCAN MATCH table:prefix* and calls fn for each distinct key
// until fn returns false or the cursor wraps.
func (d *respDriver) scan(ctx context.Context, table, prefix string, fn func(key string) bool) error {
	full := table + ":"
	pattern := globEscape(full+prefix) + "*"
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := d.c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, full+prefix) {
				return fmt.Errorf("resp: SCAN MATCH %q returned %q", pattern, k)
			}
			if seen[k] {
				continue // SCAN may return a key twice
			}
			seen[k] = true
			if !fn(k[len(full):]) {
				return nil
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func (d *respDriver) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	var out []string
	err := d.scan(ctx, table, prefix, func(k string) bool {
		out = append(out, k)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

func (d *respDriver) Count(ctx context.Context, table, prefix string) (int64, error) {
	var n int64
	err := d.scan(ctx, table, prefix, func(string) bool { n++; return true })
	return n, err
}

func (d *respDriver) Noop(ctx context.Context) error { return d.c.Ping(ctx).Err() }
func (d *respDriver) Close() error                   { return d.c.Close() }
