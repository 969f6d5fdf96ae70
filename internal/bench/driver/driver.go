// Package driver puts every datastore the bench talks to behind one small
// interface: read, write, delete, prefix scan, count and no-op. A driver
// states what it cannot do in its capabilities; workloads check them and
// skip phases instead of faking an operation.
package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Caps is a set of optional operations a driver supports. Get, Put, Delete
// and Noop are mandatory.
type Caps uint8

const (
	// CapScan: Scan lists keys by prefix.
	CapScan Caps = 1 << iota
	// CapCount: Count counts keys by prefix.
	CapCount
	// CapIncr: the driver is a Counter (an atomic increment with the datastore's conditional write).
	CapIncr
)

// Has reports whether every capability in x is in c.
func (c Caps) Has(x Caps) bool { return c&x == x }

// Missing returns the names of the capabilities of need not in c.
func (c Caps) Missing(need Caps) []string {
	var out []string
	if need.Has(CapScan) && !c.Has(CapScan) {
		out = append(out, "scan")
	}
	if need.Has(CapCount) && !c.Has(CapCount) {
		out = append(out, "count")
	}
	if need.Has(CapIncr) && !c.Has(CapIncr) {
		out = append(out, "incr")
	}
	return out
}

func (c Caps) String() string {
	s := []string{"get", "put", "delete", "noop"}
	if c.Has(CapScan) {
		s = append(s, "scan")
	}
	if c.Has(CapCount) {
		s = append(s, "count")
	}
	if c.Has(CapIncr) {
		s = append(s, "incr")
	}
	return strings.Join(s, ",")
}

// ErrUnsupported is returned (wrapped) by operations outside a driver's Caps.
var ErrUnsupported = errors.New("not supported")

// Driver is one client connection pool to one datastore. Implementations are
// safe for concurrent use by as many goroutines as Options.Conns.
//
// Keys live in tables (namespaces); how a table maps onto the datastore is
// the driver's business (a key prefix, a column). Keys and table names are
// printable ASCII without spaces.
type Driver interface {
	// Kind is the driver's short name: resp, memcache, http, postgres, etcd, mysql.
	Kind() string
	Caps() Caps
	// Get returns the value and true, or nil and false when the key is absent.
	Get(ctx context.Context, table, key string) ([]byte, bool, error)
	Put(ctx context.Context, table, key string, value []byte) error
	// Delete reports whether the key existed, when the datastore says so
	// (drivers that cannot tell report true).
	Delete(ctx context.Context, table, key string) (bool, error)
	// Scan returns distinct keys of table starting with prefix (table name
	// removed), at most limit of them (all when limit <= 0), in no
	// particular order. Values are not fetched.
	Scan(ctx context.Context, table, prefix string, limit int) ([]string, error)
	// Count returns the number of keys of table starting with prefix.
	Count(ctx context.Context, table, prefix string) (int64, error)
	// Noop is one round trip that touches no data (PING, SELECT 1, ...).
	Noop(ctx context.Context) error
	// Settings describes connection settings worth printing in a report.
	Settings() string
	Close() error
}

// Options tune a driver's connection pool.
type Options struct {
	// Conns is the number of connections to keep (at least the number of
	// worker threads).
	Conns int
	// Timeout bounds one operation.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Conns < 1 {
		o.Conns = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// Schemes lists the URL schemes Open understands, with aliases.
var Schemes = []string{"resp (redis)", "redis-cluster", "memcache (memcached)", "http (https)", "postgres (postgresql)", "etcd", "mysql (mariadb)", "cassandra"}

// Open connects to the datastore named by rawURL. It verifies the
// connection with a Noop and creates whatever the driver needs (tables).
func Open(ctx context.Context, rawURL string, opt Options) (Driver, error) {
	opt = opt.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", rawURL, err)
	}
	if u.Host == "" && u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("target %q: missing host:port", rawURL)
	}
	var d Driver
	switch u.Scheme {
	case "resp", "redis":
		d, err = openRESP(u, opt)
	case "redis-cluster":
		d, err = openRedisCluster(u, opt)
	case "memcache", "memcached":
		d, err = openMemcache(u, opt)
	case "http", "https":
		d, err = openHTTP(u, opt)
	case "postgres", "postgresql":
		d, err = openPostgres(ctx, u, opt)
	case "etcd":
		d, err = openEtcd(u, opt)
	case "mysql", "mariadb":
		d, err = openMySQL(ctx, u, opt)
	case "cassandra":
		d, err = openCassandra(ctx, u, opt)
	default:
		return nil, fmt.Errorf("target %q: unknown scheme %q (want one of %s)", rawURL, u.Scheme, strings.Join(Schemes, ", "))
	}
	if err != nil {
		return nil, err
	}
	nctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	if err := d.Noop(nctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s %s: %w", d.Kind(), u.Host, err)
	}
	return d, nil
}

// prefixEnd returns the smallest string greater than every string with the
// given prefix, comparing bytes, and false when there is none.
func prefixEnd(prefix string, maxByte byte) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < maxByte {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

func unsupported(kind, op string) error {
	return fmt.Errorf("%s: %s %w", kind, op, ErrUnsupported)
}
