// Package cache is an engine decorator that keeps recently read and written items in memory, so hot keys are
// answered without touching the engine beneath (a skiplist or SSTable read costs microseconds; a map lookup,
// nanoseconds). It is bounded by bytes and evicts with CLOCK (clock.go), so hot items stay.
//
// Before a batch goes to the engine, the keys it touches leave the cache and are marked as having a write in
// flight; after the engine applied it (durably), the mark is lifted and each key either leaves again or, for a
// plain SET of a key the cache held when no other batch wrote the key meanwhile, is stored with the value just
// written (write-through).
// Reads fill the cache on a miss only while no write of the key is in flight and no batch began or ended in its
// shard since the read began (a per-shard generation). So while a write is in flight its keys
// are read from the engine alone, and the cache never answers with an item older than one the engine already
// showed a reader: reads stay linearizable.
//
// A function call that may write any key of its table (engine.CallArgs.AnyKey: a Lua script) names its keys only
// once it ran. While one is in flight the cache answers nothing from memory and fills nothing: every read goes
// to the engine; afterwards the keys the call reports (engine.Result.Wrote) leave the cache, and the rest of it
// stays.
//
// Answers of reads of one collection (LRANGE, HGET, ZRANGE, ...) are kept beside their key's item and dropped
// with it (calls.go). Queries (pages of a scan, counts) are cached by Queries (query.go), which the command layer
// uses.
package cache

import (
	"anykv/internal/clockmap"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"anykv/internal/engine"
)

const shards = 256

// maxKeptMarks is how many slots a shard's map of writes in flight may have held and still be kept once empty.
const maxKeptMarks = 64

// entryOverhead approximates the memory of one entry beyond its key and value (map slot, ring pointer, entry).
const entryOverhead = 96

// slotOverhead is what an item entry costs beyond its allocation (clockmap.InlineSize): its map slot and ring
// pointer.
const slotOverhead = 32

// Cache wraps an engine. New hands it out through engine.Expose, so it offers exactly the optional abilities of
// the engine it wraps (and Statser, for its own figures).
type Cache struct {
	eng        engine.Engine
	seed       maphash.Seed
	shardBytes int64
	shards     [shards]shard
	closed     atomic.Bool // after Close, Get answers ErrClosed rather than from memory
	// wide counts batches in flight with a call that may write any key (AnyKey): while it is not zero no entry
	// answers a read, since any of them may be one the call is changing.
	wide atomic.Int64

	hits, misses, evictions, invalidations, writeThroughs atomic.Int64
	callHits, callMisses                                  atomic.Int64
}

type shard struct {
	mu  sync.RWMutex
	gen uint64 // bumped by every batch that touches the shard, when it starts and when it ends
	// writing holds the slots that batches in flight write (nil until the first), by the slot's hash (slots of
	// one hash share a mark, which only keeps more out): a write in flight keeps its own slots from being filled
	// or written through, not the whole shard's. Kept per shard, a mixed load of 50 pipelining connections left a
	// third of its SETs unwritten-through (another key of the shard was in flight), and each cost a later GET an
	// engine read.
	writing map[uint64]slotWrites
	peak    int    // the most slots writing held since it was made: a big batch's map is dropped once empty
	all     int    // batches in flight that may write any key of the shard: a flush, a call of any key (wide)
	allGen  uint64 // bumped when one of those starts and when it ends
	m       clockmap.Map[engine.Item]
	calls   clockmap.Map[[]callAnswer] // answers of key reads, by the key's slot (calls.go)
	// doubt holds, by hash, the slots of batches whose outcome is unknown (engine.ErrUnknownOutcome: a
	// datastore's commit timed out after it was sent). Such a commit may still land at any time, and the value a
	// read found before it would then answer for good (under --exclusive nothing else invalidates it), so the slot
	// is neither filled nor written through again: reads of it go to the engine. Not for a while: a late blind
	// SET checks nothing and may land after any later write, and a late write that checked the slot's version
	// can pass its check again once the slot returns to that state (absent, after a later create and delete), so
	// no later write can be known to fence it off (two reviews found six ways earlier rules got this wrong).
	// Unknown outcomes are rare (a timeout after the send); doubtAll: a flush, a call of any key, or more than
	// maxDoubt slots had one, and no slot of the shard is cached again.
	doubt    map[uint64]struct{}
	doubtAll bool
}

// maxDoubt bounds the slots a shard keeps in doubt; past it the whole shard is (doubtAll).
const maxDoubt = 4096

// slotWrites is what a shard knows of the batches in flight that write one slot.
type slotWrites struct {
	n    int    // how many
	last uint64 // the shard's generation when one of them last started or ended
}

// busy says a batch in flight may be writing the slot of hash h: its item is not to be filled from a read.
func (sh *shard) busy(h uint64) bool {
	_, ok := sh.writing[h]
	return ok || sh.all > 0 || sh.doubted(h)
}

// doubted says a batch that wrote the slot of hash h had an unknown outcome (doubt).
func (sh *shard) doubted(h uint64) bool {
	if sh.doubtAll {
		return true
	}
	_, ok := sh.doubt[h]
	return ok
}

// settle puts the slot of hash h in doubt if err says the batch that wrote it had an unknown outcome.
func (sh *shard) settle(h uint64, err error) {
	if !errors.Is(err, engine.ErrUnknownOutcome) || sh.doubted(h) {
		return
	}
	if len(sh.doubt) >= maxDoubt {
		sh.doubt, sh.doubtAll = nil, true
		return
	}
	if sh.doubt == nil {
		sh.doubt = make(map[uint64]struct{})
	}
	sh.doubt[h] = struct{}{}
}

// remove drops slot s's item and answers, reporting whether there was an item; h is s's hash.
func (sh *shard) remove(s string, h uint64) bool {
	sh.calls.RemoveHashed(s, h)
	return sh.m.RemoveHashed(s, h)
}

// reset drops every item and answer of the shard and returns how many items there were.
func (sh *shard) reset() int {
	sh.calls.Reset()
	return sh.m.Reset()
}

// New wraps e with a cache of about maxBytes of keys and values (0 disables caching but keeps the wrapper). The
// result has e's optional abilities and engine.Statser (the cache's figures added to e's, if any).
func New(e engine.Engine, maxBytes int64) engine.Engine {
	return engine.Expose(newCache(e, maxBytes), engine.AbilitiesOf(e)|engine.CanStats)
}

// newCache is New's cache, unwrapped (internal tests look at its shards).
func newCache(e engine.Engine, maxBytes int64) *Cache {
	c := &Cache{eng: e, seed: maphash.MakeSeed(), shardBytes: maxBytes / shards}
	for i := range c.shards { // hashed as the cache picks shards: a slot is hashed once per lookup or write
		c.shards[i].m = clockmap.Seeded[engine.Item](c.seed)
		c.shards[i].calls = clockmap.Seeded[[]callAnswer](c.seed)
	}
	return c
}

// slot names a key in the cache: the table's length as a uvarint, the table, then the key. The length prefix is
// never truncated, so no two (table, key) pairs share a slot whatever their sizes.
func slot(table string, key []byte) string { return string(appendSlot(nil, table, key)) }

func appendSlot(b []byte, table string, key []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(table)))
	b = append(b, table...)
	return append(b, key...)
}

// hashOf is slot s's hash, which picks its shard (shardOf) and indexes it in the shard's maps and marks.
func (c *Cache) hashOf(s string) uint64 { return maphash.String(c.seed, s) }

func (c *Cache) hashOfBytes(s []byte) uint64 { return maphash.Bytes(c.seed, s) }

func shardOf(h uint64) uint8 { return uint8(h % shards) }

func entrySize(slot int, it engine.Item) int64 {
	return inlineSizes.InlineSize(slot+len(it.Value)) + slotOverhead
}

// inlineSizes answers InlineSize for the read cache's entries (any map of items gives the same).
var inlineSizes clockmap.Map[engine.Item]

// Get implements engine.Engine: a hit is answered from memory; a miss reads the engine and fills the cache.
// Absent keys are cached too (as an item with version 0, which no stored item has): reads of missing keys are
// as common as reads of present ones in a cache workload.
func (c *Cache) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, shared, err := c.get(ctx, table, key, now)
	if shared {
		it.Value = append(make([]byte, 0, len(it.Value)), it.Value...)
	}
	return it, err
}

// View implements engine.Viewer: Get, but a hit answers the stored value itself, which entries never change
// (a new value is a new entry), clipped so that an append copies.
func (c *Cache) View(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, _, err := c.get(ctx, table, key, now)
	return it, err
}

// get is Get; shared reports that the value is the cache's own.
func (c *Cache) get(ctx context.Context, table string, key []byte, now int64) (it engine.Item, shared bool, err error) {
	if engine.IsInternalTable(table) {
		// Members of collections are written by ops addressed to their collection's key, so the cache could not
		// tell which member slots a batch changes: they are always read from the engine.
		it, err := c.eng.Get(ctx, table, key, now)
		return it, false, err
	}
	var buf [128]byte
	b := appendSlot(buf[:0], table, key)
	h := c.hashOfBytes(b)
	sh := &c.shards[shardOf(h)]
	sh.mu.RLock()
	e, ok := sh.m.GetHashed(b, h) // no allocation for the lookup
	var cached engine.Item
	if ok {
		cached = e.Val
	}
	gen := sh.gen
	if ok && c.wide.Load() > 0 { // checked under the shard's lock, which a wide batch takes before it runs
		ok = false
	}
	sh.mu.RUnlock()
	if ok && !c.closed.Load() {
		c.hits.Add(1)
		if cached.Version == 0 || !cached.Live(now) {
			return engine.Item{}, false, engine.ErrNotFound
		}
		if cached.Value == nil {
			cached.Value = []byte{} // a found item's value is never nil (the engine contract); no allocation
		}
		cached.Value = cached.Value[:len(cached.Value):len(cached.Value)]
		return cached, true, nil
	}
	c.misses.Add(1)
	it, err = c.eng.Get(ctx, table, key, now)
	absent := errors.Is(err, engine.ErrNotFound)
	if lvl, _ := engine.ConsistencyOf(ctx); (err != nil && !absent) || c.shardBytes <= 0 || lvl != engine.Linearizable {
		return it, false, err // a read allowed to be stale must not become a later linearizable read's answer
	}
	size := entrySize(len(b), it)
	if size > c.shardBytes/4 {
		return it, false, err // too big to be worth a slot
	}
	cp := engine.Item{} // the absent marker
	if !absent {
		cp = it
	}
	sh.mu.Lock()
	if sh.gen == gen && !sh.busy(h) { // no write of the slot in flight, none started or ended since the read began
		if !sh.m.HasHashed(b, h) {
			c.evictions.Add(int64(putEntry(sh, b, h, cp, size, c.shardBytes)))
		}
	}
	sh.mu.Unlock()
	return it, false, err
}

// putEntry stores copies of slot and it, of hash h, in sh's map: the entry, the slot and then the value in one
// allocation, so that a hit, which compares the slot and then copies the value into its reply, finds them in
// adjacent memory. The value's capacity ends at its length.
func putEntry[S string | []byte](sh *shard, slot S, h uint64, it engine.Item, size, max int64) int {
	return sh.m.PutInlineHashed(len(slot)+len(it.Value), h, size, max, func(buf []byte) (string, engine.Item) {
		copy(buf, slot)
		copy(buf[len(slot):], it.Value)
		if it.Value != nil {
			it.Value = buf[len(slot):]
		}
		return unsafe.String(unsafe.SliceData(buf), len(slot)), it
	})
}

// touch is a cache slot a batch may change.
type touch struct {
	slot  string
	hash  uint64 // the slot's (hashOf)
	shard uint8
	// through is the index of the mutation whose result is written through at the end, or -1: a plain SET that
	// is the only mutation of the batch touching the slot.
	through int
}

// Apply implements engine.Engine: the keys the batch may change leave the cache, and stay uncacheable, from
// before the engine applies it until after; a flush makes every shard so. Afterwards the value of a plain SET
// is kept, unless another batch touched its shard meanwhile.
func (c *Cache) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if c.shardBytes > 0 && keyReads(b) {
		return c.applyKeyReads(ctx, b)
	}
	ts, all, wide := c.touched(b)
	switch {
	case all:
		c.markAll(+1)
		res, err := c.eng.Apply(ctx, b)
		c.doubtEverything(err)
		c.markAll(-1)
		return res, err
	case wide:
		return c.applyWide(ctx, b, ts)
	}
	gens := c.begin(ts)
	res, err := c.eng.Apply(ctx, b)
	c.end(ts, gens, res, err)
	return res, err
}

// touched lists the cache slots a batch may change, grouped by shard, or reports that it flushes (all), or that
// it has a call that may write keys it does not name (wide).
func (c *Cache) touched(b *engine.Batch) (ts []touch, all, wide bool) {
	// The slots are carved out of one buffer per batch, never changed after: one allocation instead of two per
	// slot. Its size is known before the first is written, so the strings never move.
	n := 0
	for i := range b.Muts {
		m := &b.Muts[i]
		n += 2*binary.MaxVarintLen64 + len(m.Table) + len(m.Key) + len(m.Target.Table) + len(m.Target.Key)
		for _, k := range m.Call.Keys {
			n += binary.MaxVarintLen64 + len(m.Table) + len(k)
		}
	}
	buf := make([]byte, 0, n)
	carve := func(table string, key []byte) string {
		start := len(buf)
		buf = appendSlot(buf, table, key)
		return unsafe.String(unsafe.SliceData(buf[start:]), len(buf)-start)
	}
	ts = make([]touch, 0, len(b.Muts))
	add := func(s string, through int) {
		h := c.hashOf(s)
		ts = append(ts, touch{slot: s, hash: h, shard: shardOf(h), through: through})
	}
	for i := range b.Muts {
		m := &b.Muts[i]
		switch {
		case m.Op == engine.OpFlush || m.Op == engine.OpSwap:
			return nil, true, false
		case !m.Writes():
			continue
		}
		through := -1
		if m.Op == engine.OpSet && c.shardBytes > 0 {
			through = i
		}
		add(carve(m.Table, m.Key), through)
		if m.Op == engine.OpRename || m.Op == engine.OpCopy || m.Op == engine.OpCall && m.Target.Table != "" {
			add(carve(m.Target.Table, m.Target.Key), -1)
		}
		for _, k := range m.Call.Keys { // further keys a function may write
			add(carve(m.Table, k), -1)
		}
		wide = wide || m.Op == engine.OpCall && m.Call.AnyKey
	}
	// Grouped by shard; within one, by hash, so that a slot's copies are adjacent: the slots' bytes are compared
	// only when their hashes are equal (comparing them always was 2% of a SET pipeline's CPU).
	slices.SortFunc(ts, func(a, b touch) int {
		if a.shard != b.shard {
			return int(a.shard) - int(b.shard)
		}
		if a.hash != b.hash {
			return cmp.Compare(a.hash, b.hash)
		}
		return strings.Compare(a.slot, b.slot)
	})
	for i := 1; i < len(ts); i++ { // a slot written twice: its final state is not one mutation's result
		if ts[i].slot == ts[i-1].slot {
			ts[i].through, ts[i-1].through = -1, -1
		}
	}
	return ts, false, wide
}

// applyWide applies a batch with a call that may write keys it does not name. From before the engine applies it
// until after, no entry answers a read (wide) and no shard is filled (all); afterwards the slots it named
// and those its calls report having written leave the cache. If it failed, the keys it wrote are unknown (the
// engine may not know whether it applied), so every entry goes.
func (c *Cache) applyWide(ctx context.Context, b *engine.Batch, ts []touch) ([]engine.Result, error) {
	c.wide.Add(1)
	defer c.wide.Add(-1) // after the slots left: until then no stale entry may answer
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		sh.all++
		sh.allGen++
		sh.mu.Unlock()
	}
	res, err := c.eng.Apply(ctx, b)
	c.doubtEverything(err) // the keys it wrote are unknown
	var drop [shards][]string
	for _, t := range ts {
		drop[t.shard] = append(drop[t.shard], t.slot)
	}
	for i := range b.Muts {
		if i < len(res) && b.Muts[i].Op == engine.OpCall {
			for _, k := range res[i].Wrote {
				s := slot(b.Muts[i].Table, k)
				sh := shardOf(c.hashOf(s))
				drop[sh] = append(drop[sh], s)
			}
		}
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		sh.all--
		sh.allGen++
		if err != nil {
			c.invalidations.Add(int64(sh.reset()))
		}
		for _, s := range drop[i] {
			if sh.remove(s, c.hashOf(s)) {
				c.invalidations.Add(1)
			}
		}
		sh.mu.Unlock()
	}
	return res, err
}

// doubtEverything puts every slot in doubt (shard.doubtAll) if err says a batch that may have written any key
// had an unknown outcome.
func (c *Cache) doubtEverything(err error) {
	if !errors.Is(err, engine.ErrUnknownOutcome) {
		return
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.doubt, sh.doubtAll = nil, true
		sh.mu.Unlock()
	}
}

// groups calls fn for each run of ts in one shard.
func groups(ts []touch, fn func(sh uint8, run []touch)) {
	for i := 0; i < len(ts); {
		j := i + 1
		for j < len(ts) && ts[j].shard == ts[i].shard {
			j++
		}
		fn(ts[i].shard, ts[i:j])
		i = j
	}
}

// begin drops the batch's slots and marks them as written; it returns, per shard in the order of ts, the
// generations the batch left there, which end compares to learn whether any other batch came by.
func (c *Cache) begin(ts []touch) []began {
	runs := 0
	for i := range ts {
		if i == 0 || ts[i].shard != ts[i-1].shard {
			runs++
		}
	}
	gens := make([]began, 0, runs) // one allocation: appends grew it two or three times a batch
	groups(ts, func(i uint8, run []touch) {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		if sh.writing == nil {
			sh.writing = make(map[uint64]slotWrites)
		}
		for j := range run {
			t := &run[j]
			w := sh.writing[t.hash]
			sh.writing[t.hash] = slotWrites{n: w.n + 1, last: sh.gen}
			sh.peak = max(sh.peak, len(sh.writing))
			if sh.remove(t.slot, t.hash) {
				c.invalidations.Add(1)
			} else {
				// Only a key the cache held (read, or written through before) is written through: a key only
				// ever written would cost an entry, and its removal at the next write, for no read (SET at
				// pipeline 16 lost 17% when every SET was written through).
				t.through = -1
			}
		}
		gens = append(gens, began{gen: sh.gen, allGen: sh.allGen})
		sh.mu.Unlock()
	})
	return gens
}

// began is a shard's generations when a batch started writing to it.
type began struct{ gen, allGen uint64 }

// end lifts the marks of begin. A plain SET that succeeded leaves its new item in the cache if the cache held the
// key when the batch began (begin) and the SET was alone on its slot: no other batch writing the slot started or ended while it was in flight, none is in flight still,
// and no batch that may write any key came by (their order against this one's commit is unknown, so the item
// might not be the last written). Every other slot is dropped again.
func (c *Cache) end(ts []touch, gens []began, res []engine.Result, err error) {
	g := 0
	groups(ts, func(i uint8, run []touch) {
		sh := &c.shards[i]
		sh.mu.Lock()
		b := gens[g]
		g++
		sh.gen++
		wideCame := sh.all > 0 || sh.allGen != b.allGen
		for _, t := range run {
			w := sh.writing[t.hash]
			w.n--
			alone := err == nil && !wideCame && w.n == 0 && w.last == b.gen
			if w.n == 0 {
				delete(sh.writing, t.hash)
			} else {
				sh.writing[t.hash] = slotWrites{n: w.n, last: sh.gen}
			}
			if len(sh.writing) == 0 && sh.peak > maxKeptMarks {
				// Maps do not shrink: after a batch of a million keys the shards' empty maps held 84 MB.
				sh.writing, sh.peak = nil, 0
			}
			sh.remove(t.slot, t.hash)
			sh.settle(t.hash, err)
			if !alone || t.through < 0 || t.through >= len(res) || sh.doubted(t.hash) {
				continue
			}
			r := &res[t.through]
			if r.Err != nil || !r.NewFound {
				continue
			}
			it := r.New
			size := entrySize(len(t.slot), it)
			if size > c.shardBytes/4 {
				continue
			}
			// Copies of the value, which may alias the caller's batch, and of the slot, which touched carved out
			// of a buffer of the whole batch's slots that an entry must not keep alive beyond its own size.
			c.evictions.Add(int64(putEntry(sh, t.slot, t.hash, it, size, c.shardBytes)))
			c.writeThroughs.Add(1)
		}
		sh.mu.Unlock()
	})
}

// markAll drops every entry and moves every shard's count of batches that may write any key by delta: a flush
// may change any key.
func (c *Cache) markAll(delta int) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		sh.all += delta
		sh.allGen++
		c.invalidations.Add(int64(sh.reset()))
		sh.mu.Unlock()
	}
}

// Close implements engine.Engine. Later Gets go to the engine, which answers ErrClosed.
func (c *Cache) Close() error {
	c.closed.Store(true)
	return c.eng.Close()
}

// Scan forwards engine.Scanner; Expose hides it when the wrapped engine cannot scan.
func (c *Cache) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	sc, ok := c.eng.(engine.Scanner)
	if !ok {
		return engine.ErrNotSupported
	}
	return sc.Scan(ctx, table, r, now, fn)
}

// Tables forwards engine.TableLister.
func (c *Cache) Tables(ctx context.Context) ([]string, error) {
	tl, ok := c.eng.(engine.TableLister)
	if !ok {
		return nil, engine.ErrNotSupported
	}
	return tl.Tables(ctx)
}

// Sweep forwards engine.Sweeper. Swept items are expired, so a cached copy of one is already invisible.
func (c *Cache) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	sw, ok := c.eng.(engine.Sweeper)
	if !ok {
		return 0, engine.ErrNotSupported
	}
	return sw.Sweep(ctx, now, budget)
}

// SweepReport forwards engine.SweepReporter, or sweeps without naming the removed items if the engine beneath
// cannot name them.
func (c *Cache) SweepReport(ctx context.Context, now int64, budget int, removed func(table string, key []byte)) (int, error) {
	if sr, ok := c.eng.(engine.SweepReporter); ok {
		return sr.SweepReport(ctx, now, budget, removed)
	}
	return c.Sweep(ctx, now, budget)
}

// ReadLevels implements engine.ReadLeveler with the levels of the engine beneath: a hit is as fresh as a
// linearizable read (the cache never answers older than the engine showed), a miss reads the engine at the level asked.
func (c *Cache) ReadLevels() []engine.Consistency { return engine.ReadLevelsOf(c.eng) }

// SingleItemBatches implements engine.ItemScoper with the limit of the engine beneath.
func (c *Cache) SingleItemBatches() bool { return engine.SingleItemOnly(c.eng) }

// Slots implements engine.SlotScoped with the slots of the engine beneath.
func (c *Cache) Slots() int { return engine.SlotsOf(c.eng) }

// BatchHint implements engine.BatchHinter for the engine beneath.
func (c *Cache) BatchHint() int { return engine.BatchHintOf(c.eng) }

// Stats forwards engine.Statser and adds the cache's own figures.
func (c *Cache) Stats() map[string]int64 {
	out := map[string]int64{}
	if st, ok := c.eng.(engine.Statser); ok {
		for k, v := range st.Stats() {
			out[k] = v
		}
	}
	var n, bytes, answerBytes int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n, bytes, answerBytes = n+int64(sh.m.Len()), bytes+sh.m.Bytes(), answerBytes+sh.calls.Bytes()
		sh.mu.RUnlock()
	}
	out["cache_items"], out["cache_bytes"], out["cache_answer_bytes"] = n, bytes, answerBytes
	out["cache_hits"], out["cache_misses"] = c.hits.Load(), c.misses.Load()
	out["cache_evictions"], out["cache_invalidations"] = c.evictions.Load(), c.invalidations.Load()
	out["cache_write_throughs"] = c.writeThroughs.Load()
	out["cache_answer_hits"], out["cache_answer_misses"] = c.callHits.Load(), c.callMisses.Load()
	return out
}
