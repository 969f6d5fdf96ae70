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
	for _, step := range []struct {
		do, reply string // a command sent on c first, and its reply
		on        *goredis.Client
		level     string
	}{
		{"", "", c, "none"}, {"READONLY", "OK", c, "serializable"}, {"", "", other, "none"},
		{"READWRITE", "OK", c, "none"}, {"READONLY", "OK", c, "serializable"}, {"RESET", "RESET", c, "none"},
	} {
		if step.do != "" {
			if got, err := c.Do(ctx, step.do).Result(); err != nil || got != step.reply {
				t.Fatalf("%s: %v, %v", step.do, got, err)
			}
		}
		if got := reads(step.on); !slices.Equal(got, all(step.level)) {
			t.Errorf("after %q, the engine saw %v, want %s reads", step.do, got, step.level)
		}
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
