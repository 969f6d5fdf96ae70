package pebblestore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/engine"
)

// Serving is the engine a server runs: a Store that, opened read-only on a full disk (see Open), reopens itself
// writable once free space is above the reserve again, without a restart. Pebble locks its directory even
// read-only, so the swap closes the read-only Store before opening the writable one: an operation turned away by
// the closing Store (ErrClosed, nothing done) waits for the swap and runs again on the new Store.
type Serving struct {
	opts   Options
	cur    atomic.Pointer[Store]
	swap   atomic.Pointer[chan struct{}] // closed when the swap in progress has a Store in place
	closed atomic.Bool
	mu     sync.Mutex // serialises the swap and Close
	stop   chan struct{}
	done   chan struct{}
}

var (
	_ engine.Engine        = (*Serving)(nil)
	_ engine.Scanner       = (*Serving)(nil)
	_ engine.TableLister   = (*Serving)(nil)
	_ engine.Sweeper       = (*Serving)(nil)
	_ engine.Statser       = (*Serving)(nil)
	_ engine.SweepReporter = (*Serving)(nil)
)

// OpenServing opens the store like Open and, if it had to open read-only, watches for free space to reopen it
// writable.
func OpenServing(opts Options) (*Serving, error) {
	s, err := Open(opts)
	if err != nil {
		return nil, err
	}
	v := &Serving{opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	v.cur.Store(s)
	ch := make(chan struct{})
	close(ch)
	v.swap.Store(&ch)
	if s.space.readOnly.Load() {
		go v.watch()
	} else {
		close(v.done)
	}
	return v, nil
}

// watch reopens the store writable once the read-only store's poller finds the reserve free.
func (v *Serving) watch() {
	defer close(v.done)
	every := v.opts.spacePoll
	if every <= 0 {
		every = defaultSpacePoll
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
		}
		if v.cur.Load().space.roomy() && v.reopen() {
			return
		}
	}
}

// reopen swaps the read-only store for a writable one and reports whether the store is now writable.
func (v *Serving) reopen() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.cur.Load()
	log := old.log
	ch := make(chan struct{})
	v.swap.Store(&ch) // before old closes: whoever old turns away waits for ch
	defer close(ch)
	if err := old.Close(); err != nil {
		log.Warn("closing the read-only store", "err", err)
	}
	s, err := Open(v.opts)
	if err != nil {
		log.Error("reopening the store writable failed", "err", err)
		return false
	}
	v.cur.Store(s)
	if s.space.readOnly.Load() {
		return false // space vanished again
	}
	log.Warn("free space is above --min-free-space again: the store is reopened writable")
	return true
}

// do runs op on the current store and, if that store was closed under it by a swap, once more on the next.
func (v *Serving) do(op func(*Store) error) error {
	err := op(v.cur.Load())
	if errors.Is(err, engine.ErrClosed) && !v.closed.Load() {
		<-*v.swap.Load()
		err = op(v.cur.Load())
	}
	return err
}

// Get implements engine.Engine.
func (v *Serving) Get(ctx context.Context, table string, key []byte, now int64) (it engine.Item, err error) {
	err = v.do(func(s *Store) error { it, err = s.Get(ctx, table, key, now); return err })
	return it, err
}

// Apply implements engine.Engine.
func (v *Serving) Apply(ctx context.Context, b *engine.Batch) (res []engine.Result, err error) {
	err = v.do(func(s *Store) error { res, err = s.Apply(ctx, b); return err })
	return res, err
}

// Scan implements engine.Scanner.
func (v *Serving) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	return v.do(func(s *Store) error { return s.Scan(ctx, table, r, now, fn) })
}

// Tables implements engine.TableLister.
func (v *Serving) Tables(ctx context.Context) (names []string, err error) {
	err = v.do(func(s *Store) error { names, err = s.Tables(ctx); return err })
	return names, err
}

// Sweep implements engine.Sweeper.
func (v *Serving) Sweep(ctx context.Context, now int64, budget int) (n int, err error) {
	err = v.do(func(s *Store) error { n, err = s.Sweep(ctx, now, budget); return err })
	return n, err
}

// Stats implements engine.Statser.
func (v *Serving) Stats() map[string]int64 { return v.cur.Load().Stats() }

// Close implements engine.Engine: it stops watching for space and closes the current store.
func (v *Serving) Close() error {
	if !v.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cur.Load().Close()
}

// Checkpoint writes a consistent copy of the current store into dest (see Store.Checkpoint).
func (v *Serving) Checkpoint(ctx context.Context, dest string) error {
	return v.do(func(s *Store) error { return s.Checkpoint(ctx, dest) })
}

// SweepReport implements engine.SweepReporter (the keys it removed, for expiry notifications).
func (v *Serving) SweepReport(ctx context.Context, now int64, budget int, removed func(table string, key []byte)) (n int, err error) {
	err = v.do(func(s *Store) error { n, err = s.SweepReport(ctx, now, budget, removed); return err })
	return n, err
}
