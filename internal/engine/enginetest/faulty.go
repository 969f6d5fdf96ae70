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
	return f, f.withAbilities()
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
		if !f.fails(m.Table, m.Key) && (m.Key2 == nil || !f.fails(m.Table2, m.Key2)) {
			continue
		}
		if m.Op != engine.OpGet || m.SetExpiry {
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

// Close implements engine.Engine.
func (f *Faulty) Close() error { return f.inner.Close() }

// The optional abilities, each on a type of its own so that the engine NewFaulty returns can carry exactly
// those of the wrapped engine.
type (
	faultyScanner struct{ f *Faulty }
	faultyLister  struct{ f *Faulty }
)

// Scan fails when it reaches a faulty key, after handing fn the keys before it.
func (s faultyScanner) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	failed := false
	err := s.f.inner.(engine.Scanner).Scan(ctx, table, r, now, func(key []byte, it engine.Item) bool {
		if s.f.fails(table, key) {
			failed = true
			return false
		}
		return fn(key, it)
	})
	if failed {
		return s.f.Err
	}
	return err
}

// Tables fails when the fault selects a listed table with a nil key.
func (l faultyLister) Tables(ctx context.Context) ([]string, error) {
	names, err := l.f.inner.(engine.TableLister).Tables(ctx)
	for _, n := range names {
		if l.f.fails(n, nil) {
			return nil, l.f.Err
		}
	}
	return names, err
}

// withAbilities returns f as an engine with the abilities of f.inner and no others. Sweep and Stats are
// forwarded as they are: they are not reads a client sees.
func (f *Faulty) withAbilities() engine.Engine {
	type (
		sc = engine.Scanner
		tl = engine.TableLister
		sw = engine.Sweeper
		st = engine.Statser
	)
	s, l := faultyScanner{f}, faultyLister{f}
	var mask int
	if _, ok := f.inner.(sc); ok {
		mask |= 1
	}
	if _, ok := f.inner.(tl); ok {
		mask |= 2
	}
	w, okw := f.inner.(sw)
	if okw {
		mask |= 4
	}
	t, okt := f.inner.(st)
	if okt {
		mask |= 8
	}
	switch mask {
	case 0:
		return struct{ *Faulty }{f}
	case 1:
		return struct {
			*Faulty
			sc
		}{f, s}
	case 2:
		return struct {
			*Faulty
			tl
		}{f, l}
	case 3:
		return struct {
			*Faulty
			sc
			tl
		}{f, s, l}
	case 4:
		return struct {
			*Faulty
			sw
		}{f, w}
	case 5:
		return struct {
			*Faulty
			sc
			sw
		}{f, s, w}
	case 6:
		return struct {
			*Faulty
			tl
			sw
		}{f, l, w}
	case 7:
		return struct {
			*Faulty
			sc
			tl
			sw
		}{f, s, l, w}
	case 8:
		return struct {
			*Faulty
			st
		}{f, t}
	case 9:
		return struct {
			*Faulty
			sc
			st
		}{f, s, t}
	case 10:
		return struct {
			*Faulty
			tl
			st
		}{f, l, t}
	case 11:
		return struct {
			*Faulty
			sc
			tl
			st
		}{f, s, l, t}
	case 12:
		return struct {
			*Faulty
			sw
			st
		}{f, w, t}
	case 13:
		return struct {
			*Faulty
			sc
			sw
			st
		}{f, s, w, t}
	case 14:
		return struct {
			*Faulty
			tl
			sw
			st
		}{f, l, w, t}
	default:
		return struct {
			*Faulty
			sc
			tl
			sw
			st
		}{f, s, l, w, t}
	}
}
