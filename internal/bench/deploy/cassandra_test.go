package deploy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCassandraJars fetches (or finds in the cache) Cassandra's jars: cassandra-all and the dependencies it
// needs at run time. scripts/test.sh runs it first, so the packages that start Cassandra in parallel find them.
func TestCassandraJars(t *testing.T) {
	lib, err := CassandraJars(context.Background())
	if err != nil {
		if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	for _, jar := range []string{"cassandra-all-" + CassandraVersion + ".jar", "guava-*.jar", "netty-all-*.jar", "snakeyaml-*.jar"} {
		if m, _ := filepath.Glob(filepath.Join(lib, jar)); len(m) == 0 {
			t.Errorf("%s: no %s", lib, jar)
		}
	}
}
