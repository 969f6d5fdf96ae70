package kv

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// swapRaceEngine is memstore where the reclaimer's first lookup of each item in table "b" runs between
// two SWAPDBs of "a" and "b": the lookup sees the tables swapped, and the reclaimer's delete comes after they are
// swapped back.
type swapRaceEngine struct {
	*memstore.Store
	mu   sync.Mutex
	done map[string]bool // keys whose first lookup ran between swaps
	t    *testing.T
}

func (e *swapRaceEngine) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if table != "b" {
		return e.Store.Get(ctx, table, key, now)
	}
	var it engine.Item
	var err error
	e.mu.Lock()
	ran := !e.done[string(key)]
	e.done[string(key)] = true
	e.mu.Unlock()
	if ran {
		swap := &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSwap, Table: "a", Target: engine.Target{Table: "b"}}}}
		if _, err := e.Store.Apply(ctx, swap); err != nil {
			e.t.Fatal(err)
		}
		it, err = e.Store.Get(ctx, table, key, now)
		if _, err := e.Store.Apply(ctx, swap); err != nil {
			e.t.Fatal(err)
		}
	}
	if ran {
		return it, err
	}
	return e.Store.Get(ctx, table, key, now)
}

// TestReclaimRacingSwapsKeepsLiveMembers: SWAPDB keeps a collection's generation and its members' keys, so a
// generation can leave a member table and come back. The reclaimer that saw a live hash's members (and a live
// string's memcached annotation), then judged their items while a swap had moved them away, must not delete them
// once a second swap has brought them back: they are live again. (It deleted the hash's members, leaving a meta
// that counts three fields over none, and the annotation, whose conditional delete found the version it saw.)
func TestReclaimRacingSwapsKeepsLiveMembers(t *testing.T) {
	e := &swapRaceEngine{Store: memstore.New(), t: t, done: map[string]bool{}}
	s := New(e, Options{})
	defer s.Close()
	ctx := context.Background()
	var muts []engine.Mutation
	for _, f := range []string{"f1", "f2", "f3"} {
		muts = append(muts, engine.Mutation{Op: engine.OpMemberSet, Table: "b", Key: []byte("h"), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}})
	}
	if _, err := s.Apply(ctx, muts); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpSet, Table: "b", Key: []byte("s"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	ann := engine.AppendAnnotation(nil, res[0].New.Version, []byte{1}) // memcached's bits of this version of b/s
	if _, err := e.Store.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet,
		Table: engine.MemberTable("b"), Key: engine.AnnotationKey([]byte("s")), Value: ann}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reclaimStep(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.Get(ctx, engine.MemberTable("b"), engine.AnnotationKey([]byte("s")), 0); err != nil {
		t.Errorf("the annotation of b/s after the reclaim: %v (the reclaimer deleted a live one)", err)
	}
	res, err = s.Apply(ctx, []engine.Mutation{{Op: engine.OpMembers, Table: "b", Key: []byte("h"),
		Coll: engine.CollArgs{Kind: engine.KindHash}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res[0].Members); n != 3 {
		t.Fatalf("hash b/h has %d fields after the reclaim, want 3 (the reclaimer deleted live members)", n)
	}
}

// TestReclaimRacingSwapsKeepsLiveLongCollection: TestReclaimRacingSwapsKeepsLiveMembers with a hash of more than
// longRun fields. The walk stops at such a run to ask whether its collection lives and, found dead, goes on
// through the rest of it; the judgement is kept for the step. If two swaps ran around that lookup, the rest of the
// run the walk then reads holds the members the second swap brought back, live, with the new versions it wrote:
// judged by the kept answer, they must not be deleted.
func TestReclaimRacingSwapsKeepsLiveLongCollection(t *testing.T) {
	e := &swapRaceEngine{Store: memstore.New(), t: t, done: map[string]bool{}}
	s := New(e, Options{})
	defer s.Close()
	ctx := context.Background()
	const fields = 3 * longRun
	var muts []engine.Mutation
	for i := range fields {
		muts = append(muts, engine.Mutation{Op: engine.OpMemberSet, Table: "b", Key: []byte("h"), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: fmt.Appendf(nil, "f%03d", i)}})
	}
	if _, err := s.Apply(ctx, muts); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reclaimStep(ctx, 10*fields); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpMembers, Table: "b", Key: []byte("h"),
		Coll: engine.CollArgs{Kind: engine.KindHash}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res[0].Members); n != fields {
		t.Fatalf("hash b/h has %d fields after the reclaim, want %d (the reclaimer deleted live members)", n, fields)
	}
}
