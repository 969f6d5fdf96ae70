package cassandrastore

import (
	"errors"
	"fmt"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// TestConfig: one or several hosts, the replication factor they imply or ?rf= sets, the consistency of
// linearizable reads (?read=), and refusals of malformed URLs.
func TestConfig(t *testing.T) {
	for _, c := range []struct {
		url, want string
	}{
		{"cassandra://db/ks", "[db:9042] ks anykv rf=1 QUORUM one=false pin=false"},
		{"cassandra://h1:9001,h2:9002,h3/ks?partition=p", "[h1:9001 h2:9002 h3:9042] ks p rf=3 QUORUM one=false pin=false"},
		{"cassandra://h1,h2/ks?rf=2&read=serial", "[h1:9042 h2:9042] ks anykv rf=2 SERIAL one=false pin=false"},
		{"cassandra://h3:9/ks?read=one&pin=true", "[h3:9] ks anykv rf=1 QUORUM one=true pin=true"},
		{"cassandra://h3:9/ks?slots=16", "[h3:9] ks anykv rf=1 QUORUM one=false pin=false slots=16"},
	} {
		cfg, set, err := Config(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		got := fmt.Sprintf("%v %s %s rf=%d %v one=%v pin=%v", cfg.Hosts, set.Keyspace, set.Partition, set.RF,
			set.Linearizable, set.ReadOne, cfg.HostFilter != nil)
		if set.Slots != 1 {
			got += fmt.Sprintf(" slots=%d", set.Slots)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.url, got, c.want)
		}
	}
	if _, set, _ := Config("cassandra://a/ks?read=serial"); set.Linearizable != gocql.Serial {
		t.Errorf("read=serial: %v", set.Linearizable)
	}
	for _, bad := range []string{"cassandra://a/ks?rf=0", "cassandra://a/ks?read=all", "cassandra://a,/ks",
		"cassandra://a:0/ks", "cassandra://a/k-s", "cassandra://a/ks?pin=yes", "postgres://a/ks",
		"cassandra://a/ks?slots=0", "cassandra://a/ks?slots=257", "cassandra://a/ks?slots=x", "cassandra://a/ks?partition=a%000"} {
		if _, _, err := Config(bad); !errors.Is(err, remote.ErrBadURL) {
			t.Errorf("%s: %v, want ErrBadURL", bad, err)
		}
	}
}

// TestReadLevels: linearizable and serializable reads, or with read=one serializable ones alone, so the command
// layer refuses a linearizable read rather than serve it at ONE.
func TestReadLevels(t *testing.T) {
	for _, c := range []struct {
		one     bool
		refused bool
	}{{false, false}, {true, true}} {
		s := &Store{b: &backend{one: c.one}}
		err := engine.CheckConsistency(s, "cassandra://x/ks", engine.Linearizable)
		if refused := errors.Is(err, engine.ErrNotSupported); refused != c.refused {
			t.Errorf("read=one %v: linearizable reads: %v", c.one, err)
		}
		if err := engine.CheckConsistency(s, "cassandra://x/ks", engine.Serializable); err != nil {
			t.Errorf("read=one %v: serializable reads: %v", c.one, err)
		}
	}
}
