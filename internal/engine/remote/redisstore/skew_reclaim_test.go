package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/kv"
)

// TestReclaimKeepsMembersOfAMetaLiveElsewhere: two front ends over one datastore judge expiry by their own clocks.
// Front end B, whose clock is ahead, reclaimed the members of a hash whose meta it found expired but that its
// expiry sweep had not removed yet (its step's budget ran out first); for front end A the hash still lived, and a
// PERSIST there kept it for good: HLEN 3, HGETALL empty.
func TestReclaimKeepsMembersOfAMetaLiveElsewhere(t *testing.T) {
	addr := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	url := fmt.Sprintf("redis://%s/0?prefix=skew%d:", addr, prefixes.Add(1))
	a, bs := remotetest.Open(t, redisstore.Open, url), remotetest.Open(t, redisstore.Open, url)
	ctx := context.Background()
	base := time.Now()
	nowA := base.UnixMilli()
	apply := func(m ...engine.Mutation) []engine.Result {
		res, err := a.Apply(ctx, &engine.Batch{Now: nowA, Muts: m})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, f := range []string{"a", "b", "c"} {
		apply(engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}, Value: []byte("v")})
	}
	apply(engine.Mutation{Op: engine.OpExpire, Table: "t", Key: []byte("h"), Expires: nowA + 3000})
	// 2,000 keys expiring alike in a table the sweep reaches first: its step's budget ends before the hash's meta.
	var many []engine.Mutation
	for i := 0; i < 2000; i++ {
		many = append(many, engine.Mutation{Op: engine.OpSet, Table: "a", Key: fmt.Appendf(nil, "k%04d", i), Value: []byte("v"), Expires: nowA + 3000})
	}
	apply(many...)
	// Front end B's clock is 5 s ahead of A's.
	b := kv.New(bs, kv.Options{SweepInterval: -1, Clock: func() time.Time { return base.Add(5 * time.Second) }})
	defer b.Close()
	if err := b.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// For A the hash still lives (2 s left): a client persists it.
	apply(engine.Mutation{Op: engine.OpExpire, Table: "t", Key: []byte("h"), Expires: 0})
	it, err := a.Get(ctx, "t", []byte("h"), nowA)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := engine.DecodeCollMeta(it.Value)
	res := apply(engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("h"), Coll: engine.CollArgs{Kind: engine.KindHash}})
	t.Logf("meta count %d, members %d", meta.Count, len(res[0].Members))
	if int64(len(res[0].Members)) != meta.Count {
		t.Fatalf("HLEN %d but HGETALL has %d members", meta.Count, len(res[0].Members))
	}
}
