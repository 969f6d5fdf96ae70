package redisstore

import (
	"context"
	"strings"
	"testing"

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
