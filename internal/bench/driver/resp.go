package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// respDriver speaks RESP2 to anykv or Redis. A table is a key prefix
// "table:"; scans use SCAN MATCH, counts scan and count. With several
// addresses (resp://h1:p1,h2:p2, front ends serving the same data) requests
// go round robin over them, skipping one for a second after it failed to
// answer; with a Redis Cluster (redis-cluster://) one go-redis ClusterClient
// routes each key to its master.
type respDriver struct {
	cs      []redis.UniversalClient
	down    []atomic.Int64 // unix ns until which cs[i] is skipped
	next    atomic.Uint64
	addr    string
	db      int
	cluster bool
}

// respSkip is how long a front end that did not answer is skipped.
const respSkip = time.Second

// c picks the client for the next request and returns it with a function
// that takes note of the request's error.
func (d *respDriver) c() (redis.UniversalClient, func(error) error) {
	n := uint64(len(d.cs))
	i := d.next.Add(1) % n
	now := time.Now().UnixNano()
	for j := range n {
		if k := (i + j) % n; d.down[k].Load() <= now {
			i = k
			break
		}
	}
	return d.cs[i], func(err error) error {
		var reply redis.Error
		if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) && n > 1 {
			d.down[i].Store(time.Now().Add(respSkip).UnixNano())
		}
		return err
	}
}

// redisOptions are the client settings for a resp:// or redis-cluster:// URL: RESP2, a pool of opt.Conns, no
// retries of a plain client (errors are reported, not hidden).
func redisOptions(u *url.URL, opt Options) *redis.UniversalOptions {
	o := &redis.UniversalOptions{
		Addrs:                 strings.Split(u.Host, ","),
		Protocol:              2,
		DisableIdentity:       true,
		PoolSize:              opt.Conns,
		MaxRetries:            -1,
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
	return o
}

func openRESP(u *url.URL, opt Options) (Driver, error) {
	o := redisOptions(u, opt)
	if p := strings.Trim(u.Path, "/"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("resp: database %q is not a number", p)
		}
		o.DB = n
	}
	d := &respDriver{addr: u.Host, db: o.DB}
	for _, h := range o.Addrs {
		oh := *o
		oh.Addrs = []string{h}
		d.cs = append(d.cs, redis.NewClient(oh.Simple()))
	}
	d.down = make([]atomic.Int64, len(d.cs))
	return d, nil
}

// openRedisCluster drives a Redis Cluster directly: redis-cluster://h1:p1,h2:p2,... (any nodes; the client
// learns the slot map). go-redis follows MOVED and ASK redirects and, on a network error, reloads the slot map
// and tries again, up to 3 times in all: its default, which is how applications use it.
func openRedisCluster(u *url.URL, opt Options) (Driver, error) {
	c := redis.NewClusterClient(redisOptions(u, opt).Cluster())
	d := &respDriver{cs: []redis.UniversalClient{c}, addr: u.Host, cluster: true}
	d.down = make([]atomic.Int64, 1)
	return d, nil
}

func (d *respDriver) Kind() string { return "resp" }

// Caps: a cluster's SCAN would list one node's keys only.
func (d *respDriver) Caps() Caps {
	if d.cluster {
		return CapIncr
	}
	return CapScan | CapCount | CapIncr
}

func (d *respDriver) Settings() string {
	switch {
	case d.cluster:
		return fmt.Sprintf("RESP2 to Redis Cluster %s (go-redis ClusterClient: redirects followed, up to 3 tries on network errors), SET/GET/DEL, keys \"table:key\"", d.addr)
	case len(d.cs) > 1:
		return fmt.Sprintf("RESP2 to %s db %d, round robin, a front end that failed to answer skipped for %v, no retries; SET/GET/DEL, keys \"table:key\", scan via SCAN MATCH", d.addr, d.db, respSkip)
	}
	return fmt.Sprintf("RESP2 to %s db %d, SET/GET/DEL, keys \"table:key\", scan via SCAN MATCH", d.addr, d.db)
}

func (d *respDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	c, note := d.c()
	v, err := c.Get(ctx, table+":"+key).Bytes()
	err = note(err)
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (d *respDriver) Put(ctx context.Context, table, key string, value []byte) error {
	c, note := d.c()
	return note(c.Set(ctx, table+":"+key, value, 0).Err())
}

func (d *respDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	c, note := d.c()
	n, err := c.Del(ctx, table+":"+key).Result()
	return n > 0, note(err)
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
	if d.cluster {
		return unsupported("redis-cluster", "scan")
	}
	c, note := d.c()
	full := table + ":"
	pattern := globEscape(full+prefix) + "*"
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return note(err)
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

func (d *respDriver) Noop(ctx context.Context) error {
	c, note := d.c()
	return note(c.Ping(ctx).Err())
}

func (d *respDriver) Close() error {
	var err error
	for _, c := range d.cs {
		err = errors.Join(err, c.Close())
	}
	return err
}
