package redis

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

func TestEarlyReadsAreThoseNoEarlierCommandChanges(t *testing.T) {
	get := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpGet, Table: "default", Key: []byte(k)}
	}
	set := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(k)}
	}
	cases := []struct {
		name string
		muts []engine.Mutation
		want []bool
	}{
		{"reads around a write of another key", []engine.Mutation{get("a"), set("b"), get("a"), get("c")},
			[]bool{true, false, true, true}},
		{"a read after a write of its key", []engine.Mutation{get("b"), set("b"), get("b")},
			[]bool{true, false, false}},
		{"same key in another table", []engine.Mutation{set("b"), {Op: engine.OpGet, Table: "db1", Key: []byte("b")}},
			[]bool{false, true}},
		{"GETEX writes", []engine.Mutation{{Op: engine.OpGet, Table: "default", Key: []byte("a"), Touch: true}, get("a")},
			[]bool{false, false}},
		{"after a rename every read waits", []engine.Mutation{get("x"), {Op: engine.OpRename, Table: "default",
			Key: []byte("a"), Target: engine.Target{Table: "default", Key: []byte("b")}}, get("x")}, []bool{true, false, false}},
		{"after a collection move every read waits", []engine.Mutation{{Op: engine.OpCall, Table: "default",
			Key: []byte("l")}, get("x")}, []bool{false, false}},
		{"after a flush every read waits", []engine.Mutation{{Op: engine.OpFlush}, get("x")}, []bool{false, false}},
		{"a guard that aborts the batch", []engine.Mutation{get("x"), {Op: engine.OpCheck, Table: "default",
			Key: []byte("w"), Guard: true}, set("y")}, []bool{false, false, false}},
	}
	for _, c := range cases {
		early := make([]bool, len(c.muts))
		earlyReads(c.muts, early)
		if !reflect.DeepEqual(early, c.want) {
			t.Errorf("%s: early = %v, want %v", c.name, early, c.want)
		}
	}
}

// TestEarlyReadsLongAndShort: batches short enough to be scanned and long ones checked through a map of keys
// mark the same reads as the definition does (a plain read no earlier non-read names, before any barrier).
func TestEarlyReadsLongAndShort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	ops := []engine.Op{engine.OpGet, engine.OpGet, engine.OpGet, engine.OpSet, engine.OpDelete, engine.OpRename}
	for round := 0; round < 2000; round++ {
		muts := make([]engine.Mutation, 1+rng.IntN(2*scanLimit))
		for i := range muts {
			m := &muts[i]
			m.Op, m.Table = ops[rng.IntN(len(ops))], []string{"default", "db1"}[rng.IntN(2)]
			m.Key = []byte{byte('a' + rng.IntN(40))}
			if m.Op == engine.OpRename && rng.IntN(8) != 0 {
				m.Op = engine.OpIncr // renames rarely, or nothing after one is early
			}
		}
		want := make([]bool, len(muts))
		for i := range muts {
			if !plainRead(&muts[i]) {
				continue
			}
			want[i] = true
			for j := 0; j < i; j++ {
				e := &muts[j]
				if e.Op == engine.OpRename || !plainRead(e) && e.Table == muts[i].Table && string(e.Key) == string(muts[i].Key) {
					want[i] = false
				}
			}
		}
		early := make([]bool, len(muts))
		earlyReads(muts, early)
		if !reflect.DeepEqual(early, want) {
			t.Fatalf("batch of %d: early = %v, want %v", len(muts), early, want)
		}
	}
}

// TestMixedPipelineReadsInOrder: in a pipeline of reads and writes, each read sees exactly the writes before it
// on its connection, whether it is answered directly or by the engine.
func TestMixedPipelineReadsInOrder(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "a", "a0", 0)
	c.Set(ctx, "b", "b0", 0)
	p := c.Pipeline()
	g1 := p.Get(ctx, "a")
	p.Set(ctx, "a", "a1", 0)
	g2 := p.Get(ctx, "a")
	g3 := p.Get(ctx, "b")
	p.Rename(ctx, "b", "c")
	g4 := p.Get(ctx, "c")
	g5 := p.Get(ctx, "b")
	p.LPush(ctx, "l", "x")
	g6 := p.Get(ctx, "l")
	if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
		t.Logf("pipeline: %v", err)
	}
	got := []string{g1.Val(), g2.Val(), g3.Val(), g4.Val(), g5.Val(), errString(g6.Err())}
	want := []string{"a0", "a1", "b0", "b0", "", "WRONGTYPE Operation against a key holding the wrong kind of value"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pipeline reads %q, want %q", got, want)
	}
}

// countingGets counts the engine's point reads (Get), to tell a read answered directly from one read in a batch.
type countingGets struct {
	engine.Engine
	gets atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	c.gets.Add(1)
	return c.Engine.Get(ctx, table, key, now)
}

// TestRemoteEngineKeepsReadsInTheBatch: over a local engine a mixed pipeline's reads are answered directly (one
// engine Get each); over a remote one (where each Get is a round trip) they stay in the batch.
func TestRemoteEngineKeepsReadsInTheBatch(t *testing.T) {
	for _, remote := range []bool{false, true} {
		e := &countingGets{Engine: memstore.New()}
		ts := startServerOver(t, e, kv.Options{SweepInterval: -1}, Options{RemoteEngine: remote}, 0)
		c := ts.client(t, &goredis.Options{PoolSize: 1})
		p := c.Pipeline()
		p.Get(ctx, "a")
		p.Set(ctx, "b", "1", 0)
		p.Get(ctx, "c")
		if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		if got, want := e.gets.Load(), map[bool]int64{false: 2, true: 0}[remote]; got != want {
			t.Errorf("RemoteEngine %v: %d engine Gets for a pipeline of GET, SET, GET; want %d", remote, got, want)
		}
		// A pipeline of reads alone: one batch over a remote engine (one round trip), Gets over a local one.
		e.gets.Store(0)
		p = c.Pipeline()
		get := p.Get(ctx, "b")
		p.Get(ctx, "a")
		p.MGet(ctx, "b", "c")
		if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		if get.Val() != "1" {
			t.Errorf("RemoteEngine %v: GET b in a pipeline of reads = %q", remote, get.Val())
		}
		if got, want := e.gets.Load(), map[bool]int64{false: 4, true: 0}[remote]; got != want {
			t.Errorf("RemoteEngine %v: %d engine Gets for a pipeline of GET, GET, MGET of 2; want %d", remote, got, want)
		}
	}
}

// With serializable reads as the server's default (--consistency), a pipeline of reads over a remote engine is
// read key by key (Gets), as READONLY's are: one batch would read them linearizably, dearer than asked.
func TestRemoteEngineReadsAtTheDefaultLevel(t *testing.T) {
	e := &countingGets{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{SweepInterval: -1, Consistency: engine.Serializable}, Options{RemoteEngine: true}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	p := c.Pipeline()
	p.Get(ctx, "a")
	p.Get(ctx, "b")
	if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
		t.Fatal(err)
	}
	if got := e.gets.Load(); got != 2 {
		t.Errorf("%d engine Gets for a pipeline of two GETs at the serializable default, want 2", got)
	}
}
