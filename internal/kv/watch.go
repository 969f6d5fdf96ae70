package kv

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
)

// The touched-key registry behind Redis's WATCH: a Watch names keys, and every batch that writes one of them
// (from any protocol: every write passes through Store.Apply) marks the Watch dirty, even when the key ends as it
// began (created and deleted again). Versions alone miss that case. While nobody watches, Apply pays one atomic
// load. While somebody does, writers hold the gate shared across their engine call and mark after it, and
// ApplyWatched holds it exclusively from its dirty check to the end of its own batch, so no write can slip
// between the check and the transaction.

// watchRegistry is the Store's set of Watches by table and key.
type watchRegistry struct {
	active atomic.Int64 // keys registered by all Watches; 0: Apply skips everything below
	// unmarked counts the batches Apply runs without marking (nobody watched when they began). A Watch added
	// while one runs may miss its write: if that write creates a watched key a flush then deletes, the key ends
	// as it was watched, absent, and only the flush can abort the watch (Watch.anyFlush).
	unmarked atomic.Int64
	gate     sync.RWMutex // writers shared, ApplyWatched exclusive
	mu       sync.Mutex
	keys     map[string]map[string][]*Watch // table → key → the Watches naming it
}

// Watch is one client's watched keys (a Redis connection between WATCH and EXEC/UNWATCH). A Watch is used by
// one goroutine; the Store marks it from others.
type Watch struct {
	st    *Store
	dirty atomic.Bool
	// anyFlush: a write that marks nothing was in flight when a key was added; a flush of its table marks the
	// Watch whether or not the key was live before it (liveWatched cannot see that write).
	anyFlush atomic.Bool
	keys     [][2]string // table, key
}

// NewWatch returns an empty Watch; Release it when done.
func (s *Store) NewWatch() *Watch { return &Watch{st: s} }

// Add registers table/key: any write of it from now on makes the Watch dirty. Call it before reading the key's
// version, so a write either shows in that read or marks the Watch.
func (w *Watch) Add(table string, key []byte) {
	r := &w.st.watches
	k := string(key)
	r.mu.Lock()
	if r.keys == nil {
		r.keys = map[string]map[string][]*Watch{}
	}
	t := r.keys[table]
	if t == nil {
		t = map[string][]*Watch{}
		r.keys[table] = t
	}
	t[k] = append(t[k], w)
	r.mu.Unlock()
	r.active.Add(1)
	if r.unmarked.Load() > 0 { // after active's increment: a batch that began unmarked either shows here or marks
		w.anyFlush.Store(true)
	}
	w.keys = append(w.keys, [2]string{table, k})
}

// Dirty reports whether a watched key was written since it was added.
func (w *Watch) Dirty() bool { return w.dirty.Load() }

// Release unregisters every key of the Watch (UNWATCH, EXEC, DISCARD, the connection's end). Nil-safe.
func (w *Watch) Release() {
	if w == nil || len(w.keys) == 0 {
		return
	}
	r := &w.st.watches
	r.mu.Lock()
	for _, tk := range w.keys {
		t := r.keys[tk[0]]
		list := t[tk[1]]
		for i, o := range list {
			if o == w {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(t, tk[1])
			if len(t) == 0 {
				delete(r.keys, tk[0])
			}
		} else {
			t[tk[1]] = list
		}
	}
	r.mu.Unlock()
	r.active.Add(-int64(len(w.keys)))
	w.keys = nil
}

// ApplyWatched applies muts as Apply does unless w is dirty, in which case nothing is applied and the error is
// engine.ErrAborted (EXEC's null reply). No other batch runs between the check and the end of muts.
func (s *Store) ApplyWatched(ctx context.Context, w *Watch, muts []engine.Mutation) ([]engine.Result, error) {
	if err := s.check(muts); err != nil {
		return nil, err
	}
	r := &s.watches
	r.gate.Lock()
	defer r.gate.Unlock()
	if w.Dirty() {
		return nil, engine.ErrAborted
	}
	live := s.liveWatched(ctx, muts)
	res, err := s.apply(ctx, muts)
	switch {
	case err == nil:
		r.mark(muts, res, live)
		s.tellApplied(ctx, muts, res)
	case errors.Is(err, engine.ErrUnknownOutcome):
		r.markDoubted(muts, live)
		s.tellDoubted(ctx, muts)
	}
	return res, err
}

// applyMarking runs apply under the shared gate and marks the Watches of what the batch wrote.
func (s *Store) applyMarking(ctx context.Context, muts []engine.Mutation) ([]engine.Result, error) {
	r := &s.watches
	r.gate.RLock()
	defer r.gate.RUnlock()
	live := s.liveWatched(ctx, muts)
	res, err := s.apply(ctx, muts)
	switch {
	case err == nil:
		r.mark(muts, res, live)
	case errors.Is(err, engine.ErrUnknownOutcome):
		r.markDoubted(muts, live)
	}
	return res, err
}

// liveWatched returns, for a batch that flushes, the watched keys of the tables it flushes that hold a live item
// before it: a flush changes those alone, and Redis aborts only their watches (a key written by the batch itself
// marks its watches anyway). A key a concurrent batch creates or deletes meanwhile is marked by that batch; one
// watched meanwhile is guarded by the version its WATCH read. A failed read counts as live (an abort is safe).
// A swap of two tables (SWAPDB) counts as the flush of both, and a key watched in either counts as live if it is
// live in either, as Redis's touchAllWatchedKeysInDb judges it; or, when the batch swaps several, in any table
// whose items its swaps can bring there (SWAPDB 1 2 then SWAPDB 0 1 brings database 2's to 0).
func (s *Store) liveWatched(ctx context.Context, muts []engine.Mutation) map[[2]string]bool {
	var flushed []string
	partner := map[string][]string{} // a swapped table → every table the batch's swaps connect it with
	for i := range muts {
		switch m := &muts[i]; m.Op {
		case engine.OpFlush:
			flushed = append(flushed, m.Table)
		case engine.OpSwap:
			flushed = append(flushed, m.Table, m.Target.Table)
			a, b := m.Table, m.Target.Table
			if slices.Contains(partner[a], b) {
				continue
			}
			group := append(append([]string{a, b}, partner[a]...), partner[b]...)
			for _, t := range group {
				for _, u := range group {
					if u != t && !slices.Contains(partner[t], u) {
						partner[t] = append(partner[t], u)
					}
				}
			}
		}
	}
	if flushed == nil {
		return nil
	}
	r := &s.watches
	var keys [][2]string
	r.mu.Lock()
	for table, t := range r.keys {
		if slices.Contains(flushed, "") || slices.Contains(flushed, table) {
			for k := range t {
				keys = append(keys, [2]string{table, k})
			}
		}
	}
	r.mu.Unlock()
	live := make(map[[2]string]bool, len(keys))
	now := s.Now()
	for _, tk := range keys {
		for _, table := range append([]string{tk[0]}, partner[tk[0]]...) {
			if _, err := s.PeekAnyAt(ctx, table, []byte(tk[1]), now); !errors.Is(err, engine.ErrNotFound) {
				live[tk] = true
				break
			}
		}
	}
	return live
}

// mark makes dirty every Watch naming a key the applied batch wrote (EachWritten), or a key of a table it flushed
// that was live before it (liveWatched). A swap also marks the watches of a key the batch wrote before it into
// either table (SET in database 1, then SWAPDB 0 1: Redis's touchAllWatchedKeysInDb finds it in database 1), even
// if a later write of the batch deletes it again.
func (r *watchRegistry) mark(muts []engine.Mutation, res []engine.Result, live map[[2]string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markLocked(muts, res, live)
}

// markLocked is mark, with r.mu held.
func (r *watchRegistry) markLocked(muts []engine.Mutation, res []engine.Result, live map[[2]string]bool) {
	var written map[string]map[string]bool // for a batch that swaps: table → keys the batch wrote there so far
	for i := range muts {
		if muts[i].Op == engine.OpSwap {
			written = map[string]map[string]bool{}
			break
		}
	}
	EachWritten(muts, res, func(_ int, table string, key []byte) {
		for _, w := range r.keys[table][string(key)] {
			w.dirty.Store(true)
		}
		if written != nil {
			if written[table] == nil {
				written[table] = map[string]bool{}
			}
			written[table][string(key)] = true
		}
	}, func(i int, flushed string) {
		var other string // the table a swap trades flushed's items with
		if m := &muts[i]; m.Op == engine.OpSwap {
			other = m.Table
			if other == flushed {
				other = m.Target.Table
			}
		}
		for table, t := range r.keys {
			if flushed == "" || flushed == table {
				for k, ws := range t {
					wasLive := live[[2]string{table, k}] || other != "" && (written[table][k] || written[other][k])
					for _, w := range ws {
						if wasLive || w.anyFlush.Load() {
							w.dirty.Store(true)
						}
					}
				}
			}
		}
		switch {
		case written == nil:
		case flushed == "":
			clear(written)
		case other == "":
			delete(written, flushed)
		case flushed == muts[i].Target.Table: // the swap's second call: both tables judged, trade their keys
			written[flushed], written[other] = written[other], written[flushed]
		}
	})
}

// markDoubted marks, after a batch of unknown outcome (it may have been applied), the Watches of every key it may
// have written: each write taken as done, and a call that may write any key of its table (a script) taken to have
// written every watched key there. An EXEC guarded by such a key aborts, where the version its WATCH read would
// miss a write that landed and left the key as it was (created and deleted again).
func (r *watchRegistry) markDoubted(muts []engine.Mutation, live map[[2]string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markLocked(muts, nil, live)
	for i := range muts {
		if m := &muts[i]; m.Op == engine.OpCall && m.Call.AnyKey && m.Writes() {
			for _, ws := range r.keys[m.Table] {
				for _, w := range ws {
					w.dirty.Store(true)
				}
			}
		}
	}
}

// EachWritten calls key with each key an applied batch changed, in the batch's order, and flush with each table it
// flushed ("": every table), each with the index of the mutation in muts: a write that succeeded and found or left
// an item (deleting an absent key changes nothing, as in Redis), a function's key, declared keys and those it
// reports having written (Result.Wrote; those alone with Result.WroteAll), a RENAME's or COPY's target. These are
// the keys Redis's signalModifiedKey names, for WATCH and for client-side caching's invalidations (protocol/redis).
// A key may come more than once.
func EachWritten(muts []engine.Mutation, res []engine.Result, key func(i int, table string, key []byte), flush func(i int, table string)) {
	for i := range muts {
		m := &muts[i]
		if !m.Writes() || (i < len(res) && (res[i].Err != nil || res[i].Unchanged)) {
			continue // refused, or it wrote nothing (a SETRANGE of nothing, a ZADD of the scores there)
		}
		switch {
		case m.Op == engine.OpFlush:
			flush(i, m.Table)
			continue
		case m.Op == engine.OpSwap: // every key of both tables may have changed (SWAPDB)
			flush(i, m.Table)
			flush(i, m.Target.Table)
			continue
		case m.Op == engine.OpCall && i < len(res) && res[i].WroteAll:
			for _, k := range res[i].Wrote { // it says which of its keys it wrote
				key(i, m.Table, k)
			}
		case m.Op == engine.OpCall:
			if m.Key != nil { // a script of no KEYS names none
				key(i, m.Table, m.Key)
			}
			for _, k := range m.Call.Keys {
				key(i, m.Table, k)
			}
			if i < len(res) {
				for _, k := range res[i].Wrote { // keys a call that may write any key (a script) reports
					key(i, m.Table, k)
				}
			}
		case m.Op == engine.OpCopy: // COPY changes its target only, and a WATCH of its source stays (as in Redis)
		case i >= len(res) || res[i].OldFound || res[i].NewFound:
			key(i, m.Table, m.Key)
		}
		if m.Target.Key != nil {
			key(i, m.Target.Table, m.Target.Key)
		}
	}
}
