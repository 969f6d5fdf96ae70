package cache

import (
	"context"
	"errors"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// reviewSetup returns a cache over lateCommits with k = "old" cached, then a batch of unknown outcome (held)
// that writes k = "new" (or makes the mutations given).
func reviewSetup(t *testing.T, held ...engine.Mutation) (*lateCommits, engine.Engine, func(string) string) {
	l := &lateCommits{Store: memstore.New()}
	c := New(l, 1<<20)
	get := cacheOld(t, c)
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	if _, err := c.Apply(context.Background(), &engine.Batch{Now: 1, Muts: held}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("held batch: %v", err)
	}
	return l, c, get
}

// cacheOld writes k = "old" through c and reads it into the cache; it returns the read of table t's keys
// through c.
func cacheOld(t *testing.T, c engine.Engine) func(string) string {
	t.Helper()
	ctx := context.Background()
	get := func(k string) string {
		it, err := c.Get(ctx, "t", []byte(k), 1)
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Value)
	}
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("k"), Value: []byte("old")}}}); err != nil {
		t.Fatal(err)
	}
	get("k")
	return get
}

// a batch that names k as a write but writes nothing (SET k NX that finds k, a CAS that fails, a
// command that answers WRONGTYPE) commits with k's stamp unchanged, so the held commit, checked against that same stamp,
// can still land after it; yet it ends the doubt, and the old value is cached for good.
func TestDoubtNotEndedByAReadThatWritesNothing(t *testing.T) {
	ctx := context.Background()
	l, c, get := reviewSetup(t, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"),
		Value: []byte("new"), Cond: engine.CondPresent}) // checked: its commit checks k's stamp
	res, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{ // SET k other NX: k is there
		{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("other"), Cond: engine.CondAbsent},
	}})
	if err != nil || !errors.Is(res[0].Err, engine.ErrExists) {
		t.Fatalf("SET k NX: %v, %v", res, err)
	}
	get("k")  // fills the cache with "old"
	l.land(t) // k's stamp never changed: the held commit's check passes
	if v := get("k"); v != "new" {
		t.Errorf("after the late commit landed: %q from the cache, the engine holds new", v)
	}
}

// a blind SET of unknown outcome checks nothing, so no later commit fences it: a checked write of k
// that commits ends the doubt, and the blind SET landing after it leaves the checked write's value cached.
func TestDoubtOfABlindSetNotEndedByACheckedWrite(t *testing.T) {
	ctx := context.Background()
	l, c, get := reviewSetup(t, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"),
		Value: []byte("new"), Set: engine.SetArgs{Blind: true}})
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("k"), Value: []byte("checked"), Cond: engine.CondPresent}}}); err != nil {
		t.Fatal(err)
	}
	get("k")
	l.land(t) // blind: lands whatever k holds
	if v := get("k"); v != "new" {
		t.Errorf("after the blind late commit landed: %q from the cache, the engine holds new", v)
	}
}
