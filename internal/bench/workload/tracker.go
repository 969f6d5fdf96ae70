package workload

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"anykv/internal/bench/gen"
)

// Tracker knows, for every key a run wrote, which values a read may
// legitimately return, so wrong, stale, lost and phantom data count as Fail.
//
// Writes to a key get increasing sequence numbers at issue time. An epoch is
// a maximal stretch of time during which some write to the key is in
// flight; every write of an epoch started after all writes of the previous
// epoch finished. So once an epoch ends, any of its writes may be the
// key's state, and nothing older may: a read that started after the epoch
// ended and returns an older sequence number is stale. The check is sound
// (it never flags a linearizable answer) but lenient inside epochs.
// A failed write leaves the key uncertain: later reads are only checked for
// integrity and for belonging to the key.
type Tracker struct {
	seed   maphash.Seed
	shards [128]shard
	mu     sync.Mutex
	tables map[string]*tableState
}

type shard struct {
	mu   sync.Mutex
	keys map[string]*keyState
}

type keyState struct {
	next       uint64 // next sequence number (from 1)
	inflight   int
	epochFirst uint64
	epochDel   bool
	floor      uint64 // first seq of the last finished epoch; 0: never written
	floorDel   bool   // the last finished epoch included a delete
	lastDel    uint64 // seq of the latest delete issued
	uncertain  bool
	present    bool // existence after all finished writes
	creating   bool
	deleting   bool
}

// tableState counts key creations and deletions for checking whole-table
// queries and counts.
type tableState struct {
	createsStarted, createsAcked atomic.Int64
	deletesStarted, deletesAcked atomic.Int64
	uncertain                    atomic.Bool
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	t := &Tracker{seed: maphash.MakeSeed(), tables: map[string]*tableState{}}
	for i := range t.shards {
		t.shards[i].keys = map[string]*keyState{}
	}
	return t
}

func (t *Tracker) table(name string) *tableState {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := t.tables[name]
	if ts == nil {
		ts = &tableState{}
		t.tables[name] = ts
	}
	return ts
}

// lock returns the locked shard and state of the key, creating it.
func (t *Tracker) lock(table, key string) (*shard, *keyState) {
	id := table + "\x00" + key
	sh := &t.shards[maphash.String(t.seed, id)%uint64(len(t.shards))]
	sh.mu.Lock()
	ks := sh.keys[id]
	if ks == nil {
		ks = &keyState{next: 1}
		sh.keys[id] = ks
	}
	return sh, ks
}

// peek returns a copy of the key's state, or false if never written.
func (t *Tracker) peek(table, key string) (keyState, bool) {
	id := table + "\x00" + key
	sh := &t.shards[maphash.String(t.seed, id)%uint64(len(t.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ks := sh.keys[id]
	if ks == nil {
		return keyState{}, false
	}
	return *ks, true
}

// BeginWrite registers a put (del=false) or delete about to be sent and
// returns its sequence number.
func (t *Tracker) BeginWrite(table, key string, del bool) uint64 {
	ts := t.table(table)
	sh, ks := t.lock(table, key)
	defer sh.mu.Unlock()
	if ks.inflight == 0 {
		ks.epochFirst = ks.next
		ks.epochDel = false
	}
	seq := ks.next
	ks.next++
	ks.inflight++
	if del {
		ks.epochDel = true
		ks.lastDel = seq
		if ks.present && !ks.deleting {
			ks.deleting = true
			ts.deletesStarted.Add(1)
		}
	} else if !ks.present && !ks.creating {
		ks.creating = true
		ts.createsStarted.Add(1)
	}
	return seq
}

// EndWrite registers the outcome of a write begun with BeginWrite.
func (t *Tracker) EndWrite(table, key string, del bool, err error) {
	ts := t.table(table)
	sh, ks := t.lock(table, key)
	defer sh.mu.Unlock()
	ks.inflight--
	if err != nil {
		ks.uncertain = true
		ts.uncertain.Store(true)
	}
	if del {
		if ks.deleting && err == nil {
			ks.deleting = false
			ks.present = false
			ts.deletesAcked.Add(1)
		}
	} else if err == nil {
		if ks.creating {
			ks.creating = false
			ts.createsAcked.Add(1)
		}
		ks.present = true
	}
	if ks.inflight == 0 {
		ks.floor = ks.epochFirst
		ks.floorDel = ks.epochDel
	}
}

// ReadStart is a snapshot taken before a read is sent.
type ReadStart struct {
	floor    uint64
	floorDel bool
	written  bool
}

// BeginRead snapshots what the key's state must be at least as new as.
func (t *Tracker) BeginRead(table, key string) ReadStart {
	ks, ok := t.peek(table, key)
	if !ok {
		return ReadStart{}
	}
	return ReadStart{floor: ks.floor, floorDel: ks.floorDel, written: ks.floor != 0}
}

// CheckRead judges a completed read: "" when the answer is acceptable,
// else a description of the failure.
func (t *Tracker) CheckRead(table, key string, rs ReadStart, value []byte, found bool) string {
	now, _ := t.peek(table, key)
	if !found {
		switch {
		case !rs.written, rs.floorDel, now.uncertain:
			return ""
		case now.lastDel >= rs.floor:
			return "" // a delete overlapped the read
		}
		return fmt.Sprintf("%s/%s: not found, but written (write #%d) and not deleted", table, key, rs.floor)
	}
	h, err := gen.Decode(value)
	if err != nil {
		return fmt.Sprintf("%s/%s: %v", table, key, err)
	}
	if h.KeyHash != gen.KeyHash(table, key) {
		return fmt.Sprintf("%s/%s: value belongs to another key (hash %016x)", table, key, h.KeyHash)
	}
	if now.uncertain {
		return ""
	}
	if h.Seq >= now.next || h.Seq == 0 {
		return fmt.Sprintf("%s/%s: write #%d was never issued (last #%d)", table, key, h.Seq, now.next-1)
	}
	if h.Seq < rs.floor {
		return fmt.Sprintf("%s/%s: stale value from write #%d; write #%d had finished before the read", table, key, h.Seq, rs.floor)
	}
	return ""
}

// Known reports whether the run ever wrote key (for phantom checks).
func (t *Tracker) Known(table, key string) bool {
	_, ok := t.peek(table, key)
	return ok
}

// CountStart snapshots a table's creation and deletion counts before a
// whole-table query or count.
type CountStart struct{ createsAcked, deletesAcked int64 }

// BeginCount snapshots the table before a query.
func (t *Tracker) BeginCount(table string) CountStart {
	ts := t.table(table)
	return CountStart{ts.createsAcked.Load(), ts.deletesAcked.Load()}
}

// CheckCount judges the number of keys a whole-table query or count saw:
// at least the keys created before it started and not deleted by its end,
// at most the keys whose creation started by its end and not deleted before
// it started. Tables where a write failed are not checked.
func (t *Tracker) CheckCount(table string, cs CountStart, n int64) string {
	ts := t.table(table)
	if ts.uncertain.Load() {
		return ""
	}
	lo := cs.createsAcked - ts.deletesStarted.Load()
	hi := ts.createsStarted.Load() - cs.deletesAcked
	if n < lo || n > hi {
		if lo == hi {
			return fmt.Sprintf("%s: %d keys, want %d", table, n, lo)
		}
		return fmt.Sprintf("%s: %d keys, want %d..%d", table, n, lo, hi)
	}
	return ""
}
