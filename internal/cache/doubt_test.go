package cache

import (
	"context"
	"errors"
	"sync"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// lateCommits is an engine whose next Apply after hold reports engine.ErrUnknownOutcome without applying, and
// applies it when land is called: a datastore's commit that timed out after it was sent and landed later.
type lateCommits struct {
	*memstore.Store
	mu   sync.Mutex
	hold bool
	late *engine.Batch
}

func (l *lateCommits) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold {
		l.hold, l.late = false, b
		return nil, errors.Join(engine.ErrUnknownOutcome, errors.New("timed out after sending"))
	}
	return l.Store.Apply(ctx, b)
}

func (l *lateCommits) land(t *testing.T) {
	l.mu.Lock()
	b := l.late
	l.mu.Unlock()
	if _, err := l.Store.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownOutcomesKeepTheirSlotsUncached: a batch whose outcome is unknown may land in the engine at any
// time later; a value read before that must not answer from the cache after it (a read of the new value, then
// of the old), nor may a SET written through since; no later write ends the doubt. A flush of unknown outcome
// puts every slot in doubt.
func TestUnknownOutcomesKeepTheirSlotsUncached(t *testing.T) {
	ctx := context.Background()
	l := &lateCommits{Store: memstore.New()}
	c := New(l, 1<<20)
	set := func(k, v string, blind bool) error {
		_, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(k), Value: []byte(v), Set: engine.SetArgs{Blind: blind}}}})
		return err
	}
	get := func(k string) string {
		it, err := c.Get(ctx, "t", []byte(k), 1)
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Value)
	}
	held := func(k, v string, blind bool) {
		l.mu.Lock()
		l.hold = true
		l.mu.Unlock()
		if err := set(k, v, blind); !errors.Is(err, engine.ErrUnknownOutcome) {
			t.Fatalf("held SET %s: %v", k, err)
		}
	}

	for _, blind := range []bool{true, false} {
		k := map[bool]string{true: "blind", false: "checked"}[blind]
		if err := set(k, "old", blind); err != nil {
			t.Fatal(err)
		}
		get(k)
		held(k, "new", blind)
		if v := get(k); v != "old" {
			t.Fatalf("%s before the late commit: %q", k, v)
		}
		l.land(t)
		if v := get(k); v != "new" {
			t.Errorf("%s after the late commit landed: %q, want new", k, v)
		}
	}

	// A blind SET since does not end the doubt: it is not written through, and reads keep going to the engine.
	if err := set("blind", "newer", true); err != nil {
		t.Fatal(err)
	}
	l.Store.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("blind"), Value: []byte("behind"), Set: engine.SetArgs{Blind: true}}}}) // a later landing
	if v := get("blind"); v != "behind" {
		t.Errorf("blind SET after an unknown outcome was cached: %q, the engine holds behind", v)
	}
	hits := func() int64 { return c.(engine.Statser).Stats()["cache_hits"] }
	checkedSet := func(k, v string) {
		if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(k), Value: []byte(v), Cond: engine.CondPresent}}}); err != nil {
			t.Fatal(err)
		}
	}
	cachedAgain := func(k string) bool {
		get(k)
		before := hits()
		get(k)
		return hits() == before+1
	}
	// Nor does any later write, for either kind of late write: a blind one checks nothing, and a checked one can
	// pass its check again (once the slot is back to the state it read).
	checkedSet("blind", "final")
	checkedSet("checked", "final")
	if err := set("other", "v", true); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"blind", "checked"} {
		if cachedAgain(k) {
			t.Errorf("%s: a slot written with an unknown outcome was cached again after a later write", k)
		}
	}
	if !cachedAgain("other") {
		t.Errorf("a slot never written with an unknown outcome is not cached")
	}

	// A flush of unknown outcome: no slot is cached again.
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpFlush}}}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("held flush: %v", err)
	}
	get("blind")
	l.land(t)
	if _, err := c.Get(ctx, "t", []byte("blind"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("after a late flush: %v, want not found", err)
	}
}
