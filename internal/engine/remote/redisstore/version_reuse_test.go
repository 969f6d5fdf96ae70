package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/remotetest"
)

// TestVersionsNotReusedAfterDataLoss: a Redis without persistence (the deploy target redis-nopersist), or one
// that lost its last second of AOF (appendfsync everysec) or was flushed, comes back without the version counter
// P+"version". INCRBY then starts again from 1, and the versions (the CAS tokens of memcached gets/cas, WATCH and
// HTTP If-Match) handed out before are handed out again: a client holding an old token for a key passes its cas
// against a different item written since (reproduced end to end: gets k → 1; restart redis; another client sets
// k; the old "cas k ... 1" is STORED). memcachedstore re-creates its lost counter at the time in µs × 1024 for
// exactly this; the Redis engine does not.
func TestVersionsNotReusedAfterDataLoss(t *testing.T) {
	addr := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	s, err := Open(context.Background(), "redis://"+addr+"/0?prefix=reuse:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	set := func(v string) uint64 {
		res, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte(v)}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].New.Version
	}
	before := set("a")
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.FlushAll(ctx).Err(); err != nil { // what a restart without persistence leaves
		t.Fatal(err)
	}
	if after := set("b"); after <= before {
		t.Fatalf("version after the datastore lost its data: %d, not above %d handed out before: a stale CAS token matches a new item", after, before)
	}
}

// TestVersionsDistinctWithTheCounterAheadOfTheClock: once the counter is ahead of the time × 1024 (after the
// clock stepped back, or a failover to a server whose clock is behind), each reservation still gets versions of
// its own. The counter came back through a Lua number, a double, rounded to a multiple of 256 above 2^53: up to
// 256 writes in a row got one version, so a stale CAS token matched (an audit lost writes so, and INCRs).
func TestVersionsDistinctWithTheCounterAheadOfTheClock(t *testing.T) {
	addr := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	s, err := Open(context.Background(), "redis://"+addr+"/0?prefix=ahead:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	// The time in µs × 1024 is about 1.8e18; 1e16 more is the clock ten seconds behind the counter, or more.
	if err := c.Set(ctx, "ahead:version", strconv.FormatInt(time.Now().UnixMicro()*1024+1e16+1, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for i := 0; i < 20; i++ {
		res, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}})
		if err != nil {
			t.Fatal(err)
		}
		v := res[0].New.Version
		if seen[v] {
			t.Fatalf("write %d got version %d again", i, v)
		}
		seen[v] = true
	}
}
