package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// cassandraDriver stores keys in table kv (tbl, k, v) of keyspace anykv_bench (or the URL's path), created if
// missing with one replica, or three when the URL lists several hosts (a cluster); (tbl, k) is the partition key,
// so every key is a partition of its own and reads and writes are single-partition at QUORUM (deletes are
// lightweight transactions, see Delete). Prefix scans would read every partition: not offered.
//
// URL: cassandra://[user:pw@]host:port[,host:port...][/keyspace]. With several hosts the driver contacts them
// all and tries a node it lost again every second (gocql's default is a minute), as anykv's Cassandra engine does.
type cassandraDriver struct {
	s     *gocql.Session
	table string
	addr  string
	rf    int
}

var cqlIdent = regexp.MustCompile(`^[A-Za-z0-9_]{1,48}$`)

func openCassandra(ctx context.Context, u *url.URL, opt Options) (Driver, error) {
	ks := u.Path
	if len(ks) > 0 && ks[0] == '/' {
		ks = ks[1:]
	}
	if ks == "" {
		ks = "anykv_bench"
	}
	if !cqlIdent.MatchString(ks) {
		return nil, fmt.Errorf("cassandra: keyspace %q is not a plain CQL identifier", ks)
	}
	hosts := strings.Split(u.Host, ",")
	if slices.Contains(hosts, "") {
		return nil, fmt.Errorf("cassandra: empty host in %q", u.Host)
	}
	c := gocql.NewCluster(hosts...) // a host without a port gets c.Port, 9042
	rf := 1
	if len(hosts) > 1 {
		rf = 3
		c.ReconnectInterval = time.Second
	}
	c.NumConns = max(1, opt.Conns/8) // connections multiplex many streams
	c.Timeout, c.ConnectTimeout = opt.Timeout, opt.Timeout
	c.Consistency = gocql.Quorum
	c.Logger = gocql.NewLogger(gocql.LogLevelNone)
	if u.User != nil {
		pw, _ := u.User.Password()
		c.Authenticator = gocql.PasswordAuthenticator{Username: u.User.Username(), Password: pw}
	}
	s, err := c.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra %s: %w", u.Host, err)
	}
	d := &cassandraDriver{s: s, table: ks + ".kv", addr: u.Host, rf: rf}
	for _, q := range []string{
		fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", ks, rf),
		"CREATE TABLE IF NOT EXISTS " + d.table + " (tbl text, k text, v blob, PRIMARY KEY ((tbl, k)))",
	} {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("cassandra %s: %w", u.Host, err)
		}
	}
	return d, nil
}

func (d *cassandraDriver) Kind() string { return "cassandra" }
func (d *cassandraDriver) Caps() Caps   { return 0 }
func (d *cassandraDriver) Settings() string {
	return fmt.Sprintf("CQL native protocol to %s, consistency QUORUM, replication factor %d, one partition per key (table %s)", d.addr, d.rf, d.table)
}

func (d *cassandraDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	var v []byte
	err := d.s.Query("SELECT v FROM "+d.table+" WHERE tbl = ? AND k = ?", table, key).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (d *cassandraDriver) Put(ctx context.Context, table, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return d.s.Query("INSERT INTO "+d.table+" (tbl, k, v) VALUES (?, ?, ?)", table, key, value).ExecContext(ctx)
}

// Delete is DELETE ... IF EXISTS, a lightweight transaction (a Paxos round), since a plain CQL DELETE is a blind
// tombstone that cannot tell whether the key existed.
func (d *cassandraDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	return d.s.Query("DELETE FROM "+d.table+" WHERE tbl = ? AND k = ? IF EXISTS", table, key).
		MapScanCASContext(ctx, map[string]any{})
}

func (d *cassandraDriver) Scan(context.Context, string, string, int) ([]string, error) {
	return nil, fmt.Errorf("cassandra scan: %w", ErrUnsupported)
}

func (d *cassandraDriver) Count(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("cassandra count: %w", ErrUnsupported)
}

// Noop reads the node's own row of system.local: a round trip that touches no user data.
func (d *cassandraDriver) Noop(ctx context.Context) error {
	var v string
	return d.s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &v)
}

func (d *cassandraDriver) Close() error { d.s.Close(); return nil }
