package pebblestore

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"

	"anykv/internal/engine"
)

// Group commit limits: the writer takes every queued request up to these caps into one Pebble batch.
const (
	queueLen      = 1024
	maxGroupReqs  = 512
	maxGroupBytes = 32 << 20 // approximate: sum of keys and values of the group's mutations

	// versionReserve is how far past the allocated versions a store without a journal sets its version record,
	// so that the record is rewritten once per versionReserve versions; a restart after a crash skips at most
	// that many (versions stay unique and increasing, and far below 2^56).
	versionReserve = 1 << 20
)

// maxGroupResolved bounds the bytes of the Pebble batch a group builds: past it the group is cut after the request
// that crossed it and the rest wait for the next group. maxGroupBytes bounds what the requests hold, not what they
// resolve to: a SWAPDB, COPY or APPEND of a few bytes may build up to engine's 256 MiB each, and a group of
// hundreds of those would hold gigabytes at once (and Pebble panics on a batch of 4 GiB). A variable for tests.
var maxGroupResolved = 64 << 20

// Request states: the writer takes a queued request unless its Apply gave up first (ctx done).
const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

// request is one Apply or one Sweep waiting for the writer.
type request struct {
	batch *engine.Batch
	sweep []sweepTarget // a Sweep's conditional deletes, when batch is nil

	state   atomic.Int32
	bytes   int // size(), computed by submit: the writer reads the batch only once it took the request
	results []engine.Result
	removed int // Sweep: items deleted
	err     error
	done    chan struct{}

	// refused says the writer refused the request before resolving it (a failed store, a full disk), and keeps
	// that answer if it resolves the group again.
	refused bool
	// admitted says the free-space check took the request's bytes, which a second resolution must not count again.
	admitted bool

	// reportSwept asks the writer to list the targets it deleted in swept (SweepReport).
	reportSwept bool
	swept       []sweepTarget
}

// sweepTarget is an expired item Sweep saw: it is deleted only if its version is still the one seen.
type sweepTarget struct {
	key     []byte // Pebble key
	table   string
	version uint64
}

// ovEntry is the group overlay's view of a key written by an earlier batch of the group.
type ovEntry struct {
	item    engine.Item // Value aliases the writing batch, which stays valid until the group is answered
	deleted bool
}

// writer is the single goroutine that resolves and commits every write. Being alone, it allocates versions
// without locks and reads a state no one else changes.
type writer struct {
	s        *Store
	version  uint64 // highest allocated
	ceiling  uint64 // the version record as this writer last wrote or found it: never below version once committed
	floor    uint64 // with a journal: the synced metaFloorKey, never below version once committed
	next     func() uint64
	pb       *pebble.Batch
	reqs     []*request
	carry    []*request // requests cut from the last group at maxGroupResolved: the next group starts with them
	kbuf     []byte
	syncOpt  *pebble.WriteOptions
	net      int64         // the group's sets minus deletes, for the key estimate
	expiring uint64        // the group's sets of items with an expiry, for Store.expiring
	netReset bool          // the group flushed everything: net replaces the memtable count
	guard    bool          // SyncAlways: publish groups to readers until their sync returns
	flight   chan landing  // SyncAlways: committed groups on their way to the syncer (flight.go)
	slots    chan struct{} // SyncAlways: one token per group in flight, returned by the syncer
	track    bool          // record written keys: for the guard, or for later batches of the group

	// The overlay: what earlier batches of the current group wrote, so a batch sees them (Pebble has not got them
	// yet). keys doubles as the group's set of in-flight keys for the guard, so it is a new map per group.
	keys     map[string]ovEntry
	keysHint int // the group's mutations: the size keys is made with, so that it does not grow step by step
	// order holds keys' keys sorted, for scans (overlayRange): built by a group's first scan over a big overlay,
	// then kept by remember; nil wherever keys starts over. A group that never scans never builds it.
	order    *btree.BTreeG[string]
	tables   map[string]struct{}
	flushed  map[string]struct{}
	flushAll bool

	// iters serve the group's point reads (read): Pebble iterators per group instead of one per read, one for
	// the member tables and one for the rest. A command on a collection reads its meta and then a member, which
	// lie in different sstables (spans.go): one iterator alternating between them would reopen an sstable in
	// every level at every read, where each of two stays on the sstables it last read.
	iters [2]*pebble.Iterator
	// wbuf is the writes buffer engine.ResolveInto fills, reused batch after batch (cleared after each).
	wbuf []engine.Write
	// cache holds items the writer read lately (itemcache.go); nil when off, and in snapshot readers.
	cache *itemCache
	// filters prove members of new collections absent (memberfilter.go); with the cache, and nil where it is.
	filters *memberFilters
	// liveUntil is the earliest expiry of the items the group's resolution found alive (0: none); judgeClock is
	// the clock of its first batch that has one (engine.Batch.Clock). See commitGroup.
	liveUntil   int64
	judgeClock  func() int64
	fromOverlay bool // the last read was answered by the overlay (LiveUntil)

	// snap, for a writer that only reads (readbatch.go), is the state it reads instead of the DB's latest, and
	// seen records what it read, for the durability guard.
	snap *pebble.Snapshot
	seen *readSet
}

// newIter opens an iterator over what the writer reads: its snapshot, or the DB.
func (w *writer) newIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	if w.snap != nil {
		return w.snap.NewIter(o)
	}
	return w.s.db.NewIter(o)
}

func newWriter(s *Store, version uint64) *writer {
	w := &writer{s: s, version: version, ceiling: version, floor: version, pb: s.db.NewBatch(), syncOpt: pebble.NoSync, guard: s.opts.Sync == SyncAlways}
	if w.guard {
		w.syncOpt = pebble.Sync
	}
	// Versions stay far below maxVersion (2^56: centuries at millions of writes a second).
	w.next = func() uint64 { w.version++; return w.version }
	if s.opts.WriterCacheBytes >= 0 {
		w.cache = newItemCache(cmp.Or(s.opts.WriterCacheBytes, DefaultWriterCacheBytes))
		s.itemCache = w.cache
		w.filters = newMemberFilters(version, cmp.Or(s.opts.memberFilterBytes, DefaultMemberFilterBytes))
		s.memberFilters = w.filters
	}
	return w
}

// run serves the queue until Close closes it, then exits after answering everything queued.
func (w *writer) run() {
	defer close(w.s.writerDone)
	if w.guard {
		n := inFlightBound(w.s.opts.maxInFlight)
		w.flight = make(chan landing, n)
		w.slots = make(chan struct{}, n)
		synced := make(chan struct{})
		go w.s.syncer(w.flight, w.slots, synced)
		defer func() { close(w.flight); <-synced }() // every group answered before Close goes on
	}
	defer func() { w.pb.Close() }()
	for {
		if w.guard {
			w.slots <- struct{}{} // room for one more group in flight: until then requests queue up
		}
		size := 0
		if len(w.carry) > 0 {
			w.reqs = append(w.reqs[:0], w.carry...)
			clear(w.carry)
			w.carry = w.carry[:0]
			for _, r := range w.reqs {
				size += r.bytes
			}
		} else {
			r, ok := <-w.s.queue
			if !ok {
				return
			}
			w.reqs = append(w.reqs[:0], r)
			size = r.bytes
			// The first request's sender made the writer its next goroutine to run (Go's runnext), ahead of the
			// connections already runnable with requests of their own: yield once so that they queue theirs and
			// join this group, instead of a group of one taking the next fsync (SET at pipeline 1: +19%,
			// benchmarks.md).
			runtime.Gosched()
		}
	fill:
		for len(w.reqs) < maxGroupReqs && size < maxGroupBytes {
			select {
			case r, ok := <-w.s.queue:
				if !ok {
					break fill
				}
				w.reqs = append(w.reqs, r)
				size += r.bytes
			default:
				break fill
			}
		}
		w.commitGroup()
		clear(w.reqs) // drop references to answered requests
	}
}

// size estimates the bytes a request adds to a group.
func (r *request) size() int {
	n := 0
	if r.batch != nil {
		for i := range r.batch.Muts {
			m := &r.batch.Muts[i]
			n += len(m.Key) + len(m.Value) + len(m.Target.Key) + 64
		}
	}
	return n + len(r.sweep)*64
}

// commitGroup resolves every request of w.reqs in turn, commits their writes as one Pebble batch, and answers.
func (w *writer) commitGroup() {
	firstVersion := w.version + 1
	// Take every request first (an Apply that returned already is skipped), so that their batches, which stay
	// unchanged only while taken, size the group's key map before the first write makes it.
	w.keysHint = 0
	// A request carried from the last group (cut) is taken already and keeps refused and admitted: a resolution
	// of that group may have admitted it (one resolved again and cut shorter), and it must not count twice.
	for _, r := range w.reqs {
		if r.state.CompareAndSwap(reqQueued, reqTaken) && r.batch != nil {
			for i := range r.batch.Muts {
				if r.batch.Muts[i].Writes() {
					w.keysHint++
				}
			}
		}
	}
	taken := w.resolveGroup()
	for attempt := 1; ; attempt++ {
		if attempt < maxJudgeAttempts && w.judgedTooEarly() {
			// An item the group found alive has expired while it was resolved, and reads, which do not see the
			// group until it is published, may have found it gone: resolved at the time it was judged, the group
			// would bring it back (a SET XX or CAS succeeding after a read answered nil; a PERSIST of a collection
			// whose members the reclaimer, having found it gone, deletes). Nothing is published yet: resolve it
			// again, now. Rare: only an expiry that falls within a group's resolution (a millisecond or so).
			w.forgetWrites() // add put them in the cache, and they will not happen
			w.pb.Reset()
			w.version = firstVersion - 1
			w.s.rejudged.Add(1)
			taken = w.resolveGroup()
			continue
		}
		// The version record's fsync, once per reserve of versions, comes between the judgement and the commit:
		// an item may expire during it as during the resolution, so the group is judged once more after it (the
		// record it synced stays valid for the versions a second resolution hands out again).
		if w.pb.Empty() || !w.recordVersion(firstVersion) || attempt >= maxJudgeAttempts || !w.judgedTooEarly() {
			break
		}
	}
	w.s.batches.Add(int64(taken))
	w.closeIters()

	if !w.pb.Empty() {
		w.s.groups.Add(1)
		if int64(taken) > w.s.maxGroup.Load() {
			w.s.maxGroup.Store(int64(taken))
		}
	}
	if w.guard {
		w.land(firstVersion)
		return
	}
	var err error
	if !w.pb.Empty() {
		err = w.commit()
		w.s.expiring.Add(w.expiring) // after the commit: see Store.expiring
		if err != nil {
			w.pb = w.s.db.NewBatch() // Pebble forbids reusing a batch whose commit failed
		} else {
			err = w.journal()
			w.pb.Reset()
			w.countNet()
		}
	}
	w.s.version.Store(w.version)
	answer(w.taken(), err)
	w.keys, w.tables, w.flushed, w.order = nil, nil, nil, nil
}

// maxJudgeAttempts bounds how often a group is resolved again because an item it found alive expired meanwhile.
const maxJudgeAttempts = 3

// resolveGroup resolves the taken requests of w.reqs into the group's batch, from a fresh group state, and
// returns how many there are. A request refused before resolution (a failed store, a full disk) stays refused
// when the group is resolved again.
func (w *writer) resolveGroup() (taken int) {
	w.keys, w.tables, w.flushed, w.flushAll, w.order = nil, nil, nil, false, nil
	w.net, w.netReset, w.expiring = 0, false, 0
	w.liveUntil, w.judgeClock = 0, nil
	for i, r := range w.reqs {
		if r.state.Load() != reqTaken {
			continue // its Apply returned already
		}
		w.track = w.guard || i < len(w.reqs)-1
		taken++
		if r.refused {
			continue
		}
		r.err, r.results, r.removed, r.swept = nil, nil, 0, r.swept[:0]
		if p := w.s.failed.Load(); p != nil {
			r.err, r.refused = *p, true
			continue
		}
		if !r.admitted {
			if err := w.s.space.admit(int64(r.bytes)); err != nil {
				r.err, r.refused = err, true // refused before it reaches Pebble: the disk is (nearly) full
				continue
			}
			r.admitted = true
		}
		if r.batch == nil {
			w.sweep(r)
			continue
		}
		if w.judgeClock == nil {
			w.judgeClock = r.batch.Clock
		}
		writes, results, err := engine.ResolveInto(w, r.batch, w.next, w.wbuf)
		r.results = results
		if errors.Is(err, engine.ErrInternal) {
			w.closeIters() // the panic may have left one mid-step: the group's next read opens another
		}
		if err != nil {
			if !errors.Is(err, engine.ErrAborted) {
				err = fmt.Errorf("pebblestore: apply: %w", err)
			}
			r.err = err // aborted or invalid: the batch contributes no writes
			w.recycle(nil)
			continue
		}
		for i := range writes {
			w.add(&writes[i])
		}
		w.recycle(writes)
		if w.pb.Len() > maxGroupResolved && i < len(w.reqs)-1 {
			w.cut(i + 1)
			break
		}
	}
	return taken
}

// cut ends the group before w.reqs[i]: the requests from i on go, in order, ahead of any carried already, to the
// next group (a second resolution of the group may cut it shorter than the first did).
func (w *writer) cut(i int) {
	w.carry = append(append([]*request(nil), w.reqs[i:]...), w.carry...)
	clear(w.reqs[i:])
	w.reqs = w.reqs[:i]
}

// recycle takes back the writes buffer once a batch's writes were added (nil: the batch failed), cleared so that
// it keeps none of their values alive; a buffer grown past maxKeptWrites is given up.
func (w *writer) recycle(writes []engine.Write) {
	if writes == nil || cap(writes) > maxKeptWrites {
		clear(w.wbuf[:cap(w.wbuf)]) // what the resolution wrote into the kept buffer is not known
		return
	}
	clear(writes) // add copied what it keeps
	w.wbuf = writes[:0]
}

// maxKeptWrites bounds the writes buffer the writer keeps from batch to batch (a huge batch's is dropped).
const maxKeptWrites = 4096

// LiveUntil implements engine.ExpiryWatcher: the group's resolution found alive an item that expires then. An
// item an earlier batch of the group wrote (the overlay) is not one any reader can have seen.
func (w *writer) LiveUntil(expires int64) {
	if w.fromOverlay {
		return
	}
	if w.liveUntil == 0 || expires < w.liveUntil {
		w.liveUntil = expires
	}
}

// forgetWrites drops from the item cache the keys the group's batch writes (add put them there), before the
// group is resolved again.
func (w *writer) forgetWrites() {
	if w.cache == nil {
		return
	}
	r := w.pb.Reader()
	for {
		kind, k, _, ok, err := r.Next()
		if err != nil || !ok {
			return
		}
		if kind == pebble.InternalKeyKindSet || kind == pebble.InternalKeyKindDelete {
			w.cache.del(k)
		}
	}
}

// judgedTooEarly reports whether an item the group found alive has expired by now (by its batches' clock).
func (w *writer) judgedTooEarly() bool {
	return w.liveUntil != 0 && w.judgeClock != nil && w.judgeClock() >= w.liveUntil
}

// recordVersion writes the version record into the group's batch when it must change (see metaVersionKey).
// With a journal it is every group's exact version, which the journal's replay compares against; without one
// it is a ceiling, raised versionReserve past the group's versions only when they pass it: rewriting the first
// key of the store in every group would make every flushed sstable span from it to the group's keys, and every
// compaction of keys written in key order would then rewrite the whole store.
// It reports whether it waited for an fsync.
func (w *writer) recordVersion(firstVersion uint64) (synced bool) {
	reserve := uint64(versionReserve)
	if w.s.opts.versionReserve > 0 {
		reserve = w.s.opts.versionReserve
	}
	if w.s.journal != nil {
		if w.version < firstVersion {
			w.version++ // every journaled group has a version of its own (see journal.go)
		}
		_ = w.pb.Set(metaVersionKey, beUint64(w.version), nil)
		w.ceiling = w.version
		if w.version > w.floor { // see metaFloorKey: once per reserve of versions
			w.floor = w.version + reserve
			if err := w.s.db.Set(metaFloorKey, beUint64(w.floor), pebble.Sync); err != nil {
				w.s.log.Warn("the version floor could not be synced; a power loss may reuse versions", "err", err)
			}
			return true
		}
		return false
	}
	if w.version > w.ceiling {
		w.ceiling = w.version + reserve
		_ = w.pb.Set(metaVersionKey, beUint64(w.ceiling), nil)
		if w.s.opts.Sync == SyncNever {
			// The group's commit is not synced, so a kill could lose the new ceiling along with it while a client
			// holds a version above the old one (a CAS unique): then the restarted store would hand that version
			// out again, to another item. The ceiling is made durable first, once per reserve of versions.
			if err := w.s.db.Set(metaVersionKey, beUint64(w.ceiling), pebble.Sync); err != nil {
				w.s.log.Warn("the version ceiling could not be synced; a crash may reuse versions", "err", err)
			}
			return true
		}
	}
	return false
}

// taken returns the requests of the group the writer took (not withdrawn by their callers).
func (w *writer) taken() []*request {
	var out []*request
	for _, r := range w.reqs {
		if r.state.Load() == reqTaken {
			out = append(out, r)
		}
	}
	return out
}

// countNet folds the committed group's net writes into the key estimate.
func (w *writer) countNet() {
	if w.netReset {
		w.s.memNet.Store(w.net)
	} else {
		w.s.memNet.Add(w.net)
	}
}

// land commits the group under SyncAlways without waiting for its fsync (flight.go): the group is published to
// readers, applied, and handed with its requests to the syncer, which answers them once it is durable. A group
// that writes nothing is answered at once when nothing is in flight, else after the groups before it.
func (w *writer) land(firstVersion uint64) {
	reqs := w.taken()
	defer func() { w.keys, w.tables, w.flushed, w.order = nil, nil, nil, nil }()
	if w.pb.Empty() {
		w.s.version.Store(w.version)
		if len(*w.s.inflight.Load()) == 0 {
			answer(reqs, nil) // nothing it read can be waiting for an fsync
			<-w.slots
		} else {
			w.flight <- landing{reqs: reqs}
		}
		return
	}
	g := &group{done: make(chan struct{}), minVersion: firstVersion, keys: w.keys, tables: w.tables,
		flushed: w.flushed, flushAll: w.flushAll}
	w.s.publish(g) // before the batch becomes visible: see guard.go
	pb := w.pb
	w.pb = w.s.db.NewBatch() // pb is Pebble's until its fsync returned
	err := w.s.db.ApplyNoSyncWait(pb, pebble.Sync)
	w.s.expiring.Add(w.expiring) // once the batch is visible: see Store.expiring
	if err != nil {
		// An invalid batch, or a closed DB: it may have reached the memtable without being durable, so refuse
		// all further writes; the group stays published so that readers of its keys get the error too.
		err = fmt.Errorf("pebblestore: commit: %w", err)
		w.s.failed.Store(&err)
		w.cacheReset() // the group may or may not have reached Pebble
		w.s.log.Error("commit failed; the store refuses further writes", "err", err)
		w.s.version.Store(w.version)
		w.flight <- landing{g: g, reqs: reqs, err: err}
		return
	}
	w.countNet()
	w.s.version.Store(w.version)
	w.flight <- landing{g: g, pb: pb, reqs: reqs}
}

// journal appends the committed group to the journal (SyncInterval), so that it survives the process; if it
// cannot, the WAL is fsynced instead, which makes the group durable the slow way. If that fsync fails too, Pebble
// ends the process (a failed synchronous commit is fatal to it: Logger.Fatalf panics, 2026-12-02, tried with an
// injected sync error), so the group's clients lose their connections rather than hear an outcome, and the
// restart replays what was acknowledged; an error returned here is one Pebble gave back without ending it.
func (w *writer) journal() error {
	if w.s.journal == nil {
		return nil
	}
	if err := w.s.journal.append(w.version, w.pb.Repr()); err != nil {
		if !errors.Is(err, errJournalUnusable) {
			w.s.log.Warn("journal append failed; syncing the WAL instead", "err", err)
		}
		if err := w.s.syncWAL(); err != nil {
			return err
		}
		// Every committed group is durable now: the file of the failed append can start over.
		if err := w.s.journal.reset(); err != nil {
			w.s.log.Error("the journal could not be emptied after a failed append; every group syncs the WAL from now on", "err", err)
		}
	}
	return nil
}

// commit writes the group's batch under SyncInterval or SyncNever (SyncAlways goes through land): the commit
// returns once Pebble has it, without an fsync of its own.
func (w *writer) commit() error {
	err := w.s.db.Apply(w.pb, w.syncOpt)
	w.s.unsynced.Store(true)
	if err != nil {
		// Pebble treats a failed WAL write as fatal (Logger.Fatalf, which panics here), so this is reached only by
		// errors Pebble returns, such as an invalid batch: refuse all further writes.
		err = fmt.Errorf("pebblestore: commit: %w", err)
		w.s.failed.Store(&err)
		w.cacheReset() // the group may or may not have reached Pebble
		w.s.log.Error("commit failed; the store refuses further writes", "err", err)
		return err
	}
	return nil
}

// add appends one resolved write to the Pebble batch and to the overlay.
func (w *writer) add(wr *engine.Write) {
	switch {
	case wr.Flush && wr.Table == "":
		_ = w.pb.DeleteRange(dataStart, dataEnd, nil)
		w.cacheReset()
		w.flushAll = true
		w.net, w.netReset = 0, true
		w.keys, w.flushed, w.order = nil, nil, nil
		// keys and tables written after this still count for readers; earlier ones are covered by flushAll.
	case wr.Flush:
		p := appendTablePrefix(nil, wr.Table)
		_ = w.pb.DeleteRange(p, prefixEnd(p), nil)
		w.cacheReset() // rare: not worth finding the table's entries
		if w.flushed == nil {
			w.flushed = make(map[string]struct{})
		}
		w.flushed[wr.Table] = struct{}{}
		w.touch(wr.Table)
		if w.keys != nil {
			// The overlay must forget the table's earlier writes; the guard still covers them through flushed.
			fresh := make(map[string]ovEntry, len(w.keys))
			for k, e := range w.keys {
				if tbl, _, _, _ := splitKey([]byte(k)); string(tbl) != wr.Table {
					fresh[k] = e
				}
			}
			w.keys, w.order = fresh, nil
		}
	case wr.Delete:
		k := appendKey(w.kbuf[:0], wr.Table, wr.Key)
		w.kbuf = k
		_ = w.pb.Delete(k, nil)
		if w.cache != nil {
			w.cache.del(k)
		}
		w.net--
		w.remember(k, wr.Table, ovEntry{deleted: true})
	default:
		k := appendKey(w.kbuf[:0], wr.Table, wr.Key)
		w.kbuf = k
		op := w.pb.SetDeferred(len(k), headerLen+len(wr.Item.Value))
		copy(op.Key, k)
		putHeader(op.Value, &wr.Item)
		copy(op.Value[headerLen:], wr.Item.Value)
		_ = op.Finish()
		if w.cache != nil {
			w.cache.set(k, wr.Item)
		}
		if w.filters != nil {
			w.filters.added(wr.Table, wr.Key, k, w.version)
		}
		if wr.Item.Expires != 0 {
			w.expiring++
		}
		w.net++
		w.remember(k, wr.Table, ovEntry{item: wr.Item})
	}
}

func (w *writer) remember(k []byte, table string, e ovEntry) {
	if !w.track {
		return
	}
	if w.keys == nil {
		w.keys = make(map[string]ovEntry, min(w.keysHint, 4096)) // mutations that only read leave it unused
	}
	if w.order != nil {
		if _, had := w.keys[string(k)]; !had {
			w.order.ReplaceOrInsert(string(k))
		}
	}
	w.keys[string(k)] = e
	w.touch(table)
}

// touch records that the group changes table; Scan and Tables wait only for groups that touch what they list.
func (w *writer) touch(table string) {
	if !w.guard {
		return
	}
	if w.tables == nil {
		w.tables = make(map[string]struct{})
	}
	if _, ok := w.tables[table]; !ok {
		w.tables[table] = struct{}{}
	}
}

// Read implements engine.Reader over the committed state plus the group's earlier writes. Values are copies, so
// that Results handed to one caller never alias another caller's batch.
func (w *writer) Read(table string, key []byte) (engine.Item, bool, error) {
	k := appendKey(w.kbuf[:0], table, key)
	w.kbuf = k
	return w.read(k, table, key, true)
}

// ReadStored implements engine.StoredReader: Read of a key the caller knows is stored (a list's element), which
// the member filters, built to prove keys absent, would only delay.
func (w *writer) ReadStored(table string, key []byte) (engine.Item, bool, error) {
	k := appendKey(w.kbuf[:0], table, key)
	w.kbuf = k
	return w.read(k, table, nil, true)
}

// read serves Read, ReadStored and sweep: k is the Pebble key of key in table (key nil: no member filter, as for
// ReadStored and sweep); fill says
// whether what it reads from Pebble enters the item cache.
func (w *writer) read(k []byte, table string, key []byte, fill bool) (engine.Item, bool, error) {
	e, ok := w.keys[string(k)]
	w.fromOverlay = ok
	if ok {
		if e.deleted {
			return engine.Item{}, false, nil
		}
		it := e.item
		it.Value = append([]byte{}, it.Value...)
		return it, true, nil
	}
	if w.flushAll {
		return engine.Item{}, false, nil
	}
	if _, ok := w.flushed[table]; ok {
		return engine.Item{}, false, nil
	}
	if w.cache != nil {
		if it, found, known := w.cache.get(k); known {
			return it, found, nil
		}
	}
	if key != nil && w.filters != nil && w.filters.absent(table, key, k) {
		if fill && w.cache != nil {
			w.cache.fill(k, engine.Item{}, false) // as a read of Pebble would: the write that follows updates it
		}
		return engine.Item{}, false, nil
	}
	it, found, err := w.readDB(k, table)
	if err == nil && fill && w.cache != nil {
		w.cache.fill(k, it, found)
	}
	if w.seen != nil {
		w.seen.point(k, table, found, it.Version)
	}
	return it, found, err
}

// readDB reads Pebble key k, of table, through the writer's iterator for table's kind.
func (w *writer) readDB(k []byte, table string) (engine.Item, bool, error) {
	i := 0
	if _, member := engine.UserTable(table); member {
		i = 1
	}
	iter := w.iters[i]
	if iter == nil {
		var err error
		if iter, err = w.newIter(nil); err != nil {
			return engine.Item{}, false, fmt.Errorf("pebblestore: read: %w", err)
		}
		w.iters[i] = iter
	}
	if !iter.SeekPrefixGE(k) {
		if err := iter.Error(); err != nil {
			return engine.Item{}, false, fmt.Errorf("pebblestore: read: %w", err)
		}
		return engine.Item{}, false, nil
	}
	v, err := iter.ValueAndErr()
	if err != nil {
		return engine.Item{}, false, fmt.Errorf("pebblestore: read: %w", err)
	}
	it, err := decodeValue(v)
	if err != nil {
		return engine.Item{}, false, err
	}
	it.Value = append([]byte{}, it.Value...)
	return it, true, nil
}

// cacheReset empties the item cache, if any.
func (w *writer) cacheReset() {
	if w.cache != nil {
		w.cache.reset()
	}
}

// closeIters closes the group's read iterators.
func (w *writer) closeIters() {
	for i, it := range w.iters {
		if it != nil {
			_ = it.Close()
			w.iters[i] = nil
		}
	}
}

// sweep deletes each target still stored with the version Sweep saw (a rewrite since then survives).
func (w *writer) sweep(r *request) {
	for _, t := range r.sweep {
		it, ok, err := w.read(t.key, t.table, nil, false) // what a sweep deletes is not read again: it does not fill the cache
		if err != nil {
			r.err = err
			return
		}
		if !ok || it.Version != t.version {
			continue
		}
		_ = w.pb.Delete(t.key, nil)
		if w.cache != nil {
			w.cache.del(t.key)
		}
		w.net--
		w.remember(t.key, t.table, ovEntry{deleted: true})
		r.removed++
		if r.reportSwept {
			r.swept = append(r.swept, t)
		}
	}
}
