package enginetest

import (
	"context"
	"sync/atomic"

	"anykv/internal/engine"
)

// Fault selects the reads a Faulty engine fails: it reports whether reading table/key fails. Tables calls it
// with a nil key, so a fault that ignores the key breaks a whole table, its listing included.
type Fault func(table string, key []byte) bool

// Faulty is an engine decorator for tests that makes reads fail as a corrupt store would, where such a failure
// cannot be produced for real on demand: once a Fault is set, Get, Scan and Tables, and the OpGet results of
// Apply, fail with Err for the keys it selects, and a batch that writes such a key fails whole, unapplied, as a
// batch does whose engine cannot read the old item. Everything else is forwarded to the wrapped engine.
type Faulty struct {
	inner engine.Engine
	// Err is the error an injected fault returns; it must not be, or wrap, engine.ErrNotFound.
	Err   error
	fault atomic.Pointer[Fault]
}

// NewFaulty wraps inner. It returns the decorator, to set faults with, and the engine to serve, which has
// exactly the optional abilities (Scanner, TableLister, Sweeper, Statser) that inner has.
func NewFaulty(inner engine.Engine, err error) (*Faulty, engine.Engine) {
	f := &Faulty{inner: inner, Err: err}
	return f, engine.Expose(f, engine.AbilitiesOf(inner))
}

// Fail sets the fault; nil heals the engine.
func (f *Faulty) Fail(fault Fault) {
	if fault == nil {
		f.fault.Store(nil)
		return
	}
	f.fault.Store(&fault)
}

func (f *Faulty) fails(table string, key []byte) bool {
	p := f.fault.Load()
	return p != nil && (*p)(table, key)
}

// Get implements engine.Engine.
func (f *Faulty) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if f.fails(table, key) {
		return engine.Item{}, f.Err
	}
	return f.inner.Get(ctx, table, key, now)
}

// Apply implements engine.Engine: a batch that would write a faulty key fails whole; plain reads of one apply
// and answer Err in their result.
func (f *Faulty) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	var reads []int
	for i := range b.Muts {
		m := &b.Muts[i]
		if !f.fails(m.Table, m.Key) && (m.Target.Key == nil || !f.fails(m.Target.Table, m.Target.Key)) {
			continue
		}
		if m.Op != engine.OpGet || m.Touch {
			return nil, f.Err
		}
		reads = append(reads, i)
	}
	res, err := f.inner.Apply(ctx, b)
	if err == nil {
		for _, i := range reads {
			res[i] = engine.Result{Err: f.Err}
		}
	}
	return res, err
}

// View implements engine.Viewer as Get, faults included.
func (f *Faulty) View(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return f.Get(ctx, table, key, now)
}

// Close implements engine.Engine.
func (f *Faulty) Close() error { return f.inner.Close() }

// Scan implements engine.Scanner: it fails when it reaches a faulty key, after handing fn the keys before it.
// NewFaulty hides it (and the other abilities) when the wrapped engine lacks them.
func (f *Faulty) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	failed := false
	err := f.inner.(engine.Scanner).Scan(ctx, table, r, now, func(key []byte, it engine.Item) bool {
		if f.fails(table, key) {
			failed = true
			return false
		}
		return fn(key, it)
	})
	if failed {
		return f.Err
	}
	return err
}

// Tables implements engine.TableLister: it fails when the fault selects a listed table with a nil key.
func (f *Faulty) Tables(ctx context.Context) ([]string, error) {
	names, err := f.inner.(engine.TableLister).Tables(ctx)
	for _, n := range names {
		if f.fails(n, nil) {
			return nil, f.Err
		}
	}
	return names, err
}

// Sweep forwards engine.Sweeper: sweeping is no read a client sees.
func (f *Faulty) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	return f.inner.(engine.Sweeper).Sweep(ctx, now, budget)
}

// ReadLevels implements engine.ReadLeveler with the wrapped engine's levels.
func (f *Faulty) ReadLevels() []engine.Consistency { return engine.ReadLevelsOf(f.inner) }

// SingleItemBatches implements engine.ItemScoper with the wrapped engine's limit.
func (f *Faulty) SingleItemBatches() bool { return engine.SingleItemOnly(f.inner) }

// Slots implements engine.SlotScoped with the wrapped engine's slots.
func (f *Faulty) Slots() int { return engine.SlotsOf(f.inner) }

// Stats forwards engine.Statser.
func (f *Faulty) Stats() map[string]int64 { return f.inner.(engine.Statser).Stats() }
