package kv

import (
	"context"
	"errors"
	"fmt"
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
// sweep deletes them a few at a time here. It needs an engine that can list tables and scan.

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
	after   []byte // last member key examined in it
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

// reclaimStep examines up to budget member items and deletes those whose collection no longer exists with their
// generation. It returns how many it deleted.
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
	rc := &s.reclaim
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, mt := range tables {
		user, ok := engine.UserTable(mt)
		if !ok || mt < rc.table || budget <= 0 {
			continue
		}
		r := engine.Range{}
		if mt == rc.table && rc.after != nil {
			r.Start = append(rc.after, 0) // the first key after the last one examined
		}
		// The walk only collects: the engine contract forbids calling the engine from Scan's callback (memstore
		// holds its read lock there, and a Get behind a waiting writer would deadlock). The lookups come after.
		type member struct {
			mk, key []byte
			gen     uint64
			item    engine.Item // an annotation's version and value
		}
		var seen []member
		var last []byte
		err := sc.Scan(ctx, mt, r, now, func(mk []byte, mi engine.Item) bool {
			if budget <= 0 {
				return false
			}
			budget--
			last = append(last[:0], mk...)
			key, g, _, err := engine.SplitMemberKey(mk)
			if err != nil {
				return true // not ours to judge: leave it
			}
			m := member{mk: append([]byte(nil), mk...), key: append([]byte(nil), key...), gen: g}
			if g == 0 {
				m.item = engine.Item{Version: mi.Version, Value: append([]byte(nil), mi.Value...)}
			}
			seen = append(seen, m)
			return true
		})
		if err != nil {
			return removed, fmt.Errorf("reclaiming members of %q: %w", user, err)
		}
		type gen struct {
			key string
			gen uint64
		}
		live := map[gen]bool{}
		var dead []engine.Mutation
		for _, m := range seen {
			if m.gen == 0 { // an annotation: alive while it describes the string item's current version
				it, err := s.eng.Get(ctx, user, m.key, now)
				if err != nil && !errors.Is(err, engine.ErrNotFound) {
					return removed, fmt.Errorf("reclaiming members of %q: %w", user, err)
				}
				v, _, ok := engine.DecodeAnnotation(m.item.Value)
				if err != nil || it.Kind != engine.KindString || !ok || v != it.Version {
					// Only if unchanged: a write may have annotated the item's new version meanwhile.
					dead = append(dead, engine.Mutation{Op: engine.OpDelete, Table: mt, Key: m.mk,
						AnyKind: true, Cond: engine.CondVersion, Version: m.item.Version})
				}
				continue
			}
			id := gen{string(m.key), m.gen}
			alive, known := live[id]
			if !known {
				meta, err := s.eng.Get(ctx, user, m.key, now)
				switch {
				case err == nil && meta.Kind != engine.KindString:
					cm, derr := engine.DecodeCollMeta(meta.Value)
					alive = derr != nil || cm.Gen == m.gen // undecodable: keep, never guess
				case err == nil || errors.Is(err, engine.ErrNotFound):
					alive = false
				default:
					return removed, fmt.Errorf("reclaiming members of %q: %w", user, err)
				}
				live[id] = alive
			}
			if !alive {
				dead = append(dead, engine.Mutation{Op: engine.OpDelete, Table: mt, Key: m.mk, AnyKind: true})
			}
		}
		// One batch per slot: an engine spread over slots (engine.SlotScoped) refuses a batch across them.
		bySlot, slots := map[int][]engine.Mutation{}, engine.SlotsOf(s.eng)
		for _, d := range dead {
			i := engine.SlotOf(d.Table, d.Key, slots)
			bySlot[i] = append(bySlot[i], d)
		}
		for _, muts := range bySlot {
			if _, err := s.eng.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
				return removed, err
			}
			removed += len(muts)
			rc.deleted += len(muts)
		}
		if budget <= 0 { // stopped inside this table: resume after the last key examined
			rc.table, rc.after = mt, append(rc.after[:0], last...)
			return removed, nil
		}
	}
	rc.table, rc.after = "", nil // a whole pass ended
	rc.passEnded(s.clock())
	return removed, nil
}
