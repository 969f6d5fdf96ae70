package redis

import (
	"slices"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// levelServer is a test server whose store runs over a recorder of read levels, with def as --consistency.
func levelServer(t *testing.T, def engine.Consistency) (*testServer, *enginetest.Levels) {
	t.Helper()
	rec, e := enginetest.NewLevels(memstore.New())
	return startServerOver(t, e, kv.Options{Consistency: def, SweepInterval: -1}, Options{}, 10), rec
}

// TestReadonlyChoosesTheConnectionsReadLevel: READONLY makes this connection's plain reads (GET, MGET, KEYS,
// SCAN, DBSIZE) ask the engine for serializable reads; another connection keeps the default; READWRITE and RESET
// restore the default.
func TestReadonlyChoosesTheConnectionsReadLevel(t *testing.T) {
	ts, rec := levelServer(t, engine.Linearizable)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	other := ts.client(t, &goredis.Options{PoolSize: 1})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	reads := func(c *goredis.Client) []string {
		t.Helper()
		rec.Asked()
		for _, cmd := range []goredis.Cmder{c.Get(ctx, "k"), c.MGet(ctx, "k", "x"), c.Keys(ctx, "*"),
			c.Scan(ctx, 0, "", 10), c.DBSize(ctx)} {
			if err := cmd.Err(); err != nil {
				t.Fatalf("%v: %v", cmd.Args(), err)
			}
		}
		return rec.Asked()
	}
	all := func(level string) []string {
		return []string{"get " + level, "get " + level, "get " + level, "scan " + level, "scan " + level, "scan " + level}
	}
	if got := reads(c); !slices.Equal(got, all("none")) {
		t.Errorf("before READONLY: %v", got)
	}
	if got, err := c.Do(ctx, "READONLY").Result(); err != nil || got != "OK" {
		t.Fatalf("READONLY: %v, %v", got, err)
	}
	if got := reads(c); !slices.Equal(got, all("serializable")) {
		t.Errorf("after READONLY: %v", got)
	}
	if got := reads(other); !slices.Equal(got, all("none")) {
		t.Errorf("another connection: %v", got)
	}
	if got, err := c.Do(ctx, "READWRITE").Result(); err != nil || got != "OK" {
		t.Fatalf("READWRITE: %v, %v", got, err)
	}
	if got := reads(c); !slices.Equal(got, all("none")) {
		t.Errorf("after READWRITE: %v", got)
	}
	c.Do(ctx, "READONLY")
	if err := c.Do(ctx, "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	if got := reads(c); !slices.Equal(got, all("none")) {
		t.Errorf("after RESET: %v", got)
	}
}

// TestServerDefaultReachesRESPReads: with --consistency serializable, a connection that chose nothing reads at
// serializable.
func TestServerDefaultReachesRESPReads(t *testing.T) {
	ts, rec := levelServer(t, engine.Serializable)
	c := ts.client(t, nil)
	if err := c.Get(ctx, "k").Err(); err != goredis.Nil {
		t.Fatal(err)
	}
	if got := rec.Asked(); !slices.Equal(got, []string{"get serializable"}) {
		t.Errorf("engine saw %v", got)
	}
}
