package cache

import (
	"context"
	"errors"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// COPY k k2 names k as written (touch with mut = the COPY) and its result is not Unchanged (it wrote k2), so
// the touch of the source k counts as a fence. But COPY never writes k: k's stamp is the one the held commit
// checked, so the held commit can still land after it, and the value read after the COPY is cached for good.
func TestCopySourceIsNoFence(t *testing.T) {
	ctx := context.Background()
	l, c, get := reviewSetup(t, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"),
		Value: []byte("new"), Cond: engine.CondPresent}) // checked
	res, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpCopy, Table: "t",
		Key: []byte("k"), Target: engine.Target{Table: "t", Key: []byte("k2")}}}})
	if err != nil || res[0].Err != nil || res[0].Unchanged {
		t.Fatalf("COPY k k2: %+v, %v", res, err)
	}
	get("k")  // fills "old"
	l.land(t) // k's stamp is unchanged by the COPY: the held check passes
	if v := get("k"); v != "new" {
		t.Errorf("after the late commit landed: %q from the cache, the engine holds new", v)
	}
}

// A held batch [SET k blind, APPEND k]: the APPEND reads the batch's own write (resolver.get -> own), never the
// datastore, so the commit checks no stamp of k: it is as blind as a lone SET. touched() marks both touches
// checked, so the doubt ends at the next checked write, and the late blind commit lands after it.
func TestBlindSetThenReadInOneBatchIsStillBlind(t *testing.T) {
	ctx := context.Background()
	l, c, get := reviewSetup(t,
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("new"), Set: engine.SetArgs{Blind: true}},
		engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("k"), Value: []byte("!")})
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("k"), Value: []byte("checked"), Cond: engine.CondPresent}}}); err != nil {
		t.Fatal(err)
	}
	get("k")  // fills "checked"
	l.land(t) // no check of k in the late commit: it lands
	if v := get("k"); v != "new!" {
		t.Errorf("after the blind late commit landed: %q from the cache, the engine holds new!", v)
	}
}

// A held SET k NX (it read k absent: its commit checks stamp 0). A fence (a checked write that changed k)
// ends the doubt; a DEL then brings k's stamp back to 0 (absent), so the held commit's check passes again and
// it lands after the "absent" the cache kept.
func TestAbsenceCheckIsReopenedByADelete(t *testing.T) {
	ctx := context.Background()
	l := &lateCommits{Store: memstore.New()}
	c := New(l, 1<<20)
	apply := func(m engine.Mutation) {
		t.Helper()
		if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	c.Get(ctx, "t", []byte("k"), 1) // absent, cached
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("k"), Value: []byte("late"), Cond: engine.CondAbsent}}}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("held: %v", err)
	}
	apply(engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("a"), Cond: engine.CondAbsent}) // fence
	apply(engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("k")})                                           // stamp back to 0
	if _, err := c.Get(ctx, "t", []byte("k"), 1); !errors.Is(err, engine.ErrNotFound) {                                 // fills "absent"
		t.Fatal(err)
	}
	l.land(t) // checks k absent: passes
	if it, err := c.Get(ctx, "t", []byte("k"), 1); err != nil || string(it.Value) != "late" {
		t.Errorf("after the late SET NX landed: %q, %v from the cache; the engine holds late", it.Value, err)
	}
}

// pausing is lateCommits whose next Apply after pause commits, then waits for release before it returns.
type pausing struct {
	*lateCommits
	pause             bool
	entered, released chan struct{}
}

func (p *pausing) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	p.mu.Lock()
	pause := p.pause
	p.pause = false
	p.mu.Unlock()
	res, err := p.lateCommits.Apply(ctx, b)
	if pause {
		close(p.entered)
		<-p.released
	}
	return res, err
}

// A fence must have committed after the held commit read its stamps. Batch Z (checked, changes k) commits,
// but its Apply returns late; meanwhile X reads k at Z's stamp, and its commit's outcome is unknown (ending
// first). Z's end then clears X's doubt although X checked Z's own stamp and can land after it.
func TestFenceThatCommittedBeforeTheHeldBatchRead(t *testing.T) {
	ctx := context.Background()
	l := &lateCommits{Store: memstore.New()}
	p := &pausing{lateCommits: l, entered: make(chan struct{}), released: make(chan struct{})}
	c := New(p, 1<<20)
	get := cacheOld(t, c)
	p.mu.Lock()
	p.pause = true
	p.mu.Unlock()
	done := make(chan error)
	go func() {
		_, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte("k"), Value: []byte("z"), Cond: engine.CondPresent}}})
		done <- err
	}()
	<-p.entered // Z committed
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
		Key: []byte("k"), Value: []byte("x"), Cond: engine.CondPresent}}}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("held: %v", err)
	}
	close(p.released)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	get("k")  // fills "z"
	l.land(t) // X checked z's stamp: it lands
	if v := get("k"); v != "x" {
		t.Errorf("after the late commit landed: %q from the cache, the engine holds x", v)
	}
}
