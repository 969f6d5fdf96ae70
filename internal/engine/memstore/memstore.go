// Package memstore is the in-memory engine: every item in RAM, ordered per table in a B-tree. It serves cache
// use and is the reference model the other engines are tested against. Nothing survives a restart.
package memstore

import (
	"bytes"
	"context"
	"sort"
	"sync"

	"github.com/google/btree"

	"anykv/internal/engine"
)

type entry struct {
	key  []byte
	item engine.Item
}

func less(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// Store is the memory engine. One RWMutex guards all tables: reads share it, a batch holds it exclusively,
// which makes every batch atomic and serializable.
type Store struct {
	mu      sync.RWMutex
	tables  map[string]*btree.BTreeG[entry]
	version uint64
	bytes   int64
	closed  bool
	sweep   []byte // where the next Sweep resumes, per sweepTable
	sweepT  string
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
	_ engine.Statser     = (*Store)(nil)
)

// New returns an empty store.
func New() *Store { return &Store{tables: make(map[string]*btree.BTreeG[entry])} }

// Get implements engine.Engine.
func (s *Store) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return engine.Item{}, engine.ErrClosed
	}
	it, ok := s.read(table, key)
	if !ok || !it.Live(now) {
		return engine.Item{}, engine.ErrNotFound
	}
	if err := engine.AdmitValue(ctx, len(it.Value)); err != nil { // room for a big value first
		return engine.Item{}, err
	}
	it.Value = bytes.Clone(it.Value)
	if it.Value == nil {
		it.Value = []byte{}
	}
	return it, nil
}

// View implements engine.Viewer as Get (a copy): memstore is the decorators' stand-in in tests, not a hot path.
func (s *Store) View(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return s.Get(ctx, table, key, now)
}

func (s *Store) read(table string, key []byte) (engine.Item, bool) {
	t := s.tables[table]
	if t == nil {
		return engine.Item{}, false
	}
	e, ok := t.Get(entry{key: key})
	return e.item, ok
}

// reader adapts the locked store to engine.Reader.
type reader struct{ s *Store }

func (r reader) Read(table string, key []byte) (engine.Item, bool, error) {
	it, ok := r.s.read(table, key)
	return it, ok, nil
}

// Range implements engine.RangeReader. Stored keys and values are never modified in place, so they stay valid.
func (r reader) Range(table string, rg engine.Range, fn func([]byte, engine.Item) bool) error {
	t := r.s.tables[table]
	if t == nil {
		return nil
	}
	t.AscendGreaterOrEqual(entry{key: rg.Start}, func(e entry) bool {
		if rg.End != nil && bytes.Compare(e.key, rg.End) >= 0 {
			return false
		}
		return fn(e.key, e.item)
	})
	return nil
}

var _ engine.ReverseRangeReader = reader{}

// RangeReverse implements engine.ReverseRangeReader.
func (r reader) RangeReverse(table string, rg engine.Range, fn func([]byte, engine.Item) bool) error {
	t := r.s.tables[table]
	if t == nil {
		return nil
	}
	visit := func(e entry) bool {
		if rg.End != nil && bytes.Compare(e.key, rg.End) >= 0 {
			return true // the exclusive end itself
		}
		if bytes.Compare(e.key, rg.Start) < 0 {
			return false
		}
		return fn(e.key, e.item)
	}
	if rg.End == nil {
		t.Descend(visit)
	} else {
		t.DescendLessOrEqual(entry{key: rg.End}, visit)
	}
	return nil
}

// Apply implements engine.Engine. Values in the results alias stored memory and must not be modified.
func (s *Store) Apply(_ context.Context, b *engine.Batch) ([]engine.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	next := func() uint64 { s.version++; return s.version }
	writes, results, err := engine.Resolve(reader{s}, b, next)
	if err != nil {
		return results, err
	}
	for _, w := range writes {
		s.write(w)
	}
	return results, nil
}

func (s *Store) write(w engine.Write) {
	switch {
	case w.Flush && w.Table == "":
		s.tables = make(map[string]*btree.BTreeG[entry])
		s.bytes = 0
	case w.Flush:
		if t := s.tables[w.Table]; t != nil {
			t.Ascend(func(e entry) bool { s.bytes -= int64(len(e.key) + len(e.item.Value)); return true })
			delete(s.tables, w.Table)
		}
	case w.Delete:
		s.remove(w.Table, w.Key)
	default:
		t := s.tables[w.Table]
		if t == nil {
			t = btree.NewG(32, less)
			s.tables[w.Table] = t
		}
		it := w.Item
		it.Value = bytes.Clone(it.Value)
		e := entry{key: bytes.Clone(w.Key), item: it}
		if old, ok := t.ReplaceOrInsert(e); ok {
			s.bytes -= int64(len(old.key) + len(old.item.Value))
		}
		s.bytes += int64(len(e.key) + len(it.Value))
	}
}

func (s *Store) remove(table string, key []byte) {
	t := s.tables[table]
	if t == nil {
		return
	}
	if old, ok := t.Delete(entry{key: key}); ok {
		s.bytes -= int64(len(old.key) + len(old.item.Value))
	}
	if t.Len() == 0 {
		delete(s.tables, table)
	}
}

// Scan implements engine.Scanner. It holds the read lock during the walk, so fn must not call the store.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return engine.ErrClosed
	}
	t := s.tables[table]
	if t == nil {
		return nil
	}
	visit := func(e entry) bool {
		if r.End != nil && bytes.Compare(e.key, r.End) >= 0 {
			return false
		}
		if !e.item.Live(now) {
			return true
		}
		return fn(e.key, e.item) && ctx.Err() == nil
	}
	if r.Start != nil {
		t.AscendGreaterOrEqual(entry{key: r.Start}, visit)
	} else {
		t.Ascend(visit)
	}
	return ctx.Err()
}

// Tables implements engine.TableLister.
func (s *Store) Tables(context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	names := make([]string, 0, len(s.tables))
	for name := range s.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Sweep implements engine.Sweeper: it visits up to budget items from where the last call stopped and removes
// those expired at now.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	return s.SweepReport(ctx, now, budget, nil)
}

// SweepReport implements engine.SweepReporter: Sweep, naming each removed item of a user table to removed.
// removed is called after the store's lock is released.
func (s *Store) SweepReport(_ context.Context, now int64, budget int, removed func(table string, key []byte)) (int, error) {
	type gone struct {
		table string
		key   []byte
	}
	var report []gone
	defer func() { // runs after the deferred unlock below
		for _, g := range report {
			removed(g.table, g.key)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, engine.ErrClosed
	}
	names := make([]string, 0, len(s.tables))
	for name := range s.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		if budget <= 0 {
			break
		}
		if name < s.sweepT {
			continue
		}
		var start []byte
		if name == s.sweepT {
			start = s.sweep
		}
		var dead [][]byte
		var last []byte
		s.tables[name].AscendGreaterOrEqual(entry{key: start}, func(e entry) bool {
			if budget <= 0 {
				last = e.key
				return false
			}
			budget--
			if !e.item.Live(now) {
				dead = append(dead, e.key)
			}
			return true
		})
		for _, k := range dead {
			s.remove(name, k)
			if removed != nil && !engine.IsInternalTable(name) {
				report = append(report, gone{name, k})
			}
		}
		n += len(dead)
		if last != nil {
			s.sweepT, s.sweep = name, last
			return n, nil
		}
	}
	s.sweepT, s.sweep = "", nil // a full pass ended: start over next time
	return n, nil
}

// ReadLevels implements engine.ReadLeveler: every read is linearizable (it sees every batch applied before it).
func (s *Store) ReadLevels() []engine.Consistency { return []engine.Consistency{engine.Linearizable} }

// SingleItemBatches implements engine.ItemScoper: a batch may touch any number of items.
func (s *Store) SingleItemBatches() bool { return false }

// Slots implements engine.SlotScoped: one slot, any batch.
func (s *Store) Slots() int { return 1 }

// Stats implements engine.Statser.
func (s *Store) Stats() map[string]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n int64
	for _, t := range s.tables {
		n += int64(t.Len())
	}
	return map[string]int64{"keys": n, "bytes": s.bytes, "version": int64(s.version)}
}

// Close implements engine.Engine.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
