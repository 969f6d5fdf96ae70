package kv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/engine"
)

// Reclaiming the members of deleted collections.
//
// Deleting, replacing or expiring a collection removes only its meta item (engine/collection.go); its members
// stay in the member table under a generation no live meta names. Likewise an annotation (engine/annotation.go)
// stays when its item is rewritten or deleted, describing a version that is gone. Such a generation never comes back (a new
// collection gets a new one), so those members are garbage for good, invisible to every read, and the background
// sweep deletes them a few at a time here. It needs an engine that can list tables and scan. Only SWAPDB moves a
// live generation out of a member table, and a second swap may bring it back between the walk's judgement and
// its delete: so a member is deleted only if it still has the version the walk saw (a swap writes new ones).

// reclaimer remembers where the last pass stopped.
//
// A pass over a store whose collections all live finds nothing, yet it reads every member: at 2,000 members
// a step, ten steps a second, a store of a million members was walked again and again for good. So after a
// whole pass that deleted nothing the sweep's ticker rests from the reclaim, 1 s, then twice as long after each
// further empty pass, up to maxRest. A batch that may leave members behind (a DEL, a SET over any kind, RENAME,
// COPY, FLUSH, EXPIRE) or an expiry sweep that removed items wakes it for the next tick; what it cannot see (a
// function that replaced a collection, another front end's writes, a restart) waits at most maxRest.
type reclaimer struct {
	mu      sync.Mutex
	table   string // member table being walked ("" = start from the first)
	from    []byte // where the walk resumes in it (inclusive)
	deleted int    // members the current pass deleted so far

	woken   atomic.Bool // a batch or the expiry sweep may have left members behind
	rest    time.Duration
	restEnd time.Time
}

// maxRest bounds the reclaimer's rest.
const maxRest = 64 * time.Second

// wake ends the rest: the next tick goes on with the reclaim.
func (rc *reclaimer) wake() {
	if !rc.woken.Load() {
		rc.woken.Store(true)
	}
}

// resting reports whether the ticker's step should skip the reclaim at now.
func (rc *reclaimer) resting(now time.Time) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.woken.Swap(false) {
		rc.rest, rc.restEnd = 0, time.Time{}
	}
	return now.Before(rc.restEnd)
}

// passEnded records a whole pass, which rests the reclaimer if it deleted nothing; the caller holds mu.
func (rc *reclaimer) passEnded(now time.Time) {
	if rc.deleted > 0 {
		rc.rest = 0
	} else {
		rc.rest = min(max(2*rc.rest, time.Second), maxRest)
	}
	rc.restEnd, rc.deleted = now.Add(rc.rest), 0
}

// longRun is how many members of one collection the walk examines before it asks whether the collection lives
// and, if so, seeks past the rest of its members.
const longRun = 64

// reclaimStep examines up to budget member items and deletes those whose collection no longer exists with their
// generation. It returns how many it deleted.
//
// A collection's members are contiguous (engine.MemberPrefix), so once the walk has met more than longRun members
// of one and found it alive, it seeks past the rest: a pass costs about a lookup per collection, not a read per
// member. Walking every member, a pass over a list of two million took 100 s at the sweep's pace and 6% of the
// core all along (LPOP under redis-benchmark), and began again at most 64 s after it ended. Short runs are
// walked as before: a seek costs more than a few members.
func (s *Store) reclaimStep(ctx context.Context, budget int) (int, error) {
	tl, ok1 := s.eng.(engine.TableLister)
	sc, ok2 := s.eng.(engine.Scanner)
	if !ok1 || !ok2 {
		return 0, nil
	}
	tables, err := tl.Tables(ctx)
	if err != nil {
		return 0, err
	}
	now, removed := s.Now(), 0
	// A collection is judged by its meta as stored, expired or not, when the engine's sweep removes expired items:
	// its members go once the sweep removed the meta. Expiry is judged by each front end's clock, and another front
	// end whose clock is behind this one's still serves an expired meta as live (and may PERSIST it): judged at
	// this clock, its members were deleted under it, and HLEN then counted members HGETALL no longer had.
	at := now
	if _, ok := s.eng.(engine.Sweeper); ok {
		at = math.MinInt64
	}
	rc := &s.reclaim
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, mt := range tables {
		user, ok := engine.UserTable(mt)
		if !ok || mt < rc.table || budget <= 0 {
			continue
		}
		from := []byte(nil)
		if mt == rc.table {
			from = rc.from
		}
		j := judge{s: s, user: user, mt: mt, now: now, at: at, live: map[runID]bool{}}
		for budget > 0 {
			// A collection judged dead is judged again for members a later scan reads: between the lookup and
			// that scan two swaps may have brought its generation back, with new versions the delete would match.
			maps.DeleteFunc(j.live, func(_ runID, alive bool) bool { return !alive })
			r, err := j.walk(ctx, sc, from, &budget)
			if err != nil {
				return removed, err
			}
			n, err := j.deleteDead(ctx, r.seen)
			removed += n
			rc.deleted += n
			if err != nil {
				return removed, err
			}
			if r.ended {
				from = nil
				if budget <= 0 { // the budget ended with the table: the next step looks at its end again
					from = r.next
				}
				break
			}
			from = r.next
			if r.long != nil { // more than longRun members of one collection: skip them if it lives
				alive, err := j.alive(ctx, *r.long)
				if err != nil {
					return removed, err
				}
				budget--
				if alive {
					from = engine.PrefixEnd(engine.MemberPrefix(nil, []byte(r.long.key), r.long.gen))
					if from == nil { // nothing sorts after it
						break
					}
				}
			}
		}
		if from != nil { // stopped inside this table: resume there
			rc.table, rc.from = mt, from
			return removed, nil
		}
	}
	rc.table, rc.from = "", nil // a whole pass ended
	rc.passEnded(s.clock())
	return removed, nil
}

// runID names the members of one collection: its key and generation.
type runID struct {
	key string
	gen uint64
}

// seenMember is a member item the walk examined.
type seenMember struct {
	mk      []byte
	id      runID
	version uint64      // the member item's version
	ann     engine.Item // an annotation's (gen 0) version and value
}

// walked is what one scan of a member table found.
type walked struct {
	seen  []seenMember
	next  []byte // where the next scan starts (inclusive), unless ended
	ended bool   // the table has no more members
	long  *runID // the scan stopped at a run longer than longRun whose collection is not known to be dead
}

// judge tells live members from dead ones in one member table during a reclaim step.
type judge struct {
	s        *Store
	user, mt string
	now      int64
	at       int64          // the time the collections' metas (and annotated items) are looked up at
	live     map[runID]bool // judgements of the step; one of dead holds only for members scanned before it
}

// walk scans the member table from from, collecting up to *budget members. The walk only collects: the engine
// contract forbids calling the engine from Scan's callback (memstore holds its read lock there, and a Get behind
// a waiting writer would deadlock); the lookups come after.
func (j *judge) walk(ctx context.Context, sc engine.Scanner, from []byte, budget *int) (walked, error) {
	var w walked
	var run runID
	runLen := 0
	w.ended = true
	err := sc.Scan(ctx, j.mt, engine.Range{Start: from}, j.now, func(mk []byte, mi engine.Item) bool {
		if *budget <= 0 {
			w.ended = false
			return false
		}
		key, g, _, err := engine.SplitMemberKey(mk)
		if err == nil && g != 0 {
			if g == run.gen && string(key) == run.key {
				runLen++
			} else {
				run, runLen = runID{string(key), g}, 1
			}
			if alive, known := j.live[run]; runLen > longRun && (!known || alive) {
				w.ended, w.long = false, &run
				w.next = append([]byte(nil), mk...) // examined again if the collection is dead
				return false
			}
		}
		*budget--
		w.next = append(append(w.next[:0], mk...), 0) // the first key after this one
		if err != nil {
			return true // not ours to judge: leave it
		}
		m := seenMember{mk: append([]byte(nil), mk...), id: runID{string(key), g}, version: mi.Version}
		if g == 0 {
			m.ann = engine.Item{Version: mi.Version, Value: append([]byte(nil), mi.Value...)}
		}
		w.seen = append(w.seen, m)
		return true
	})
	if err != nil {
		return w, fmt.Errorf("reclaiming members of %q: %w", j.user, err)
	}
	if !w.ended && w.next == nil { // the budget ran out before the first member
		w.next = from
	}
	return w, nil
}

// alive reports whether the collection of run still exists with run's generation (memoised for the step).
func (j *judge) alive(ctx context.Context, run runID) (bool, error) {
	if alive, known := j.live[run]; known {
		return alive, nil
	}
	meta, err := j.s.eng.Get(ctx, j.user, []byte(run.key), j.at)
	alive := false
	switch {
	case err == nil && meta.Kind != engine.KindString:
		cm, derr := engine.DecodeCollMeta(meta.Value)
		alive = derr != nil || cm.Gen == run.gen // undecodable: keep, never guess
	case err == nil || errors.Is(err, engine.ErrNotFound):
	default:
		return false, fmt.Errorf("reclaiming members of %q: %w", j.user, err)
	}
	j.live[run] = alive
	return alive, nil
}

// deleteDead deletes the members of seen whose collection is gone, and the annotations that no longer describe
// their item's version, and returns how many it deleted.
func (j *judge) deleteDead(ctx context.Context, seen []seenMember) (int, error) {
	var dead []engine.Mutation
	for _, m := range seen {
		if m.id.gen == 0 { // an annotation: alive while it describes the string item's current version
			it, err := j.s.eng.Get(ctx, j.user, []byte(m.id.key), j.at)
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				return 0, fmt.Errorf("reclaiming members of %q: %w", j.user, err)
			}
			v, _, ok := engine.DecodeAnnotation(m.ann.Value)
			if err != nil || it.Kind != engine.KindString || !ok || v != it.Version {
				// Only if unchanged: a write may have annotated the item's new version meanwhile.
				dead = append(dead, engine.Mutation{Op: engine.OpDelete, Table: j.mt, Key: m.mk,
					AnyKind: true, Cond: engine.CondVersion, Version: m.ann.Version})
			}
			continue
		}
		alive, err := j.alive(ctx, m.id)
		if err != nil {
			return 0, err
		}
		if !alive {
			// Only the version seen: SWAPDB moves members between member tables with their keys (generation
			// included), so one judged dead while a swap had taken it away may be back, live, by now; a swap
			// writes it with a new version (engine/resolve_swap.go).
			dead = append(dead, engine.Mutation{Op: engine.OpDelete, Table: j.mt, Key: m.mk, AnyKind: true,
				Cond: engine.CondVersion, Version: m.version})
		}
	}
	// One batch per slot: an engine spread over slots (engine.SlotScoped) refuses a batch across them.
	bySlot, slots := map[int][]engine.Mutation{}, engine.SlotsOf(j.s.eng)
	for _, d := range dead {
		i := engine.SlotOf(d.Table, d.Key, slots)
		bySlot[i] = append(bySlot[i], d)
	}
	removed := 0
	for _, muts := range bySlot {
		n, err := j.apply(ctx, muts)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// apply applies the deletions muts, in halves when the engine refuses them as too big at once (etcd takes 2 MiB a
// request: the keys of a few dozen 64 KiB members), so that long members do not stop the reclaim for good; each
// deletion is conditional on its own, so the parts need not be one batch.
func (j *judge) apply(ctx context.Context, muts []engine.Mutation) (int, error) {
	_, err := j.s.eng.Apply(ctx, &engine.Batch{Now: j.now, Muts: muts})
	if errors.Is(err, engine.ErrBatchTooBig) && len(muts) > 1 {
		n, err := j.apply(ctx, muts[:len(muts)/2])
		if err != nil {
			return n, err
		}
		m, err := j.apply(ctx, muts[len(muts)/2:])
		return n + m, err
	}
	if err != nil {
		return 0, err
	}
	return len(muts), nil
}
