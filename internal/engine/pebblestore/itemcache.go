package pebblestore

import (
	"sync/atomic"
	"unsafe"

	"anykv/internal/clockmap"
	"anykv/internal/engine"
)

// DefaultWriterCacheBytes bounds the writer's item cache when Options.WriterCacheBytes is 0.
const DefaultWriterCacheBytes = 64 << 20

// itemCacheOverhead bounds what an entry costs beside its key and value: the entry, its map slot and ring slot
// (tooBig). An entry is charged its allocation (clockmap.InlineSize) plus slotOverhead.
const (
	itemCacheOverhead = 128
	slotOverhead      = 32
)

// itemCache is what the writer knows of the committed state: the items it read lately (kept up to date by its
// writes of them), and the keys it found absent. Resolving a write reads the state it changes (a collection's meta, the member SADD or HSET asks
// about, the old score ZADD replaces); from the cache that read is a map lookup, where Pebble seeks through the
// memtable and every level (65% of SADD's CPU before it). Only the main writer goroutine uses it, and every
// write reaches Pebble through that writer (add, sweep), which updates it first, so it is never stale; a flush
// of any table empties it, and so does a failed commit; a group resolved again drops the keys its first
// resolution wrote (forgetWrites). Writers that read a snapshot (readbatch.go) have none.
type itemCache struct {
	m   clockmap.Map[cachedItem]
	max int64
	// Figures for Stats: the writer adds, Stats loads.
	hits, misses atomic.Int64
}

// cachedItem is a key's committed state: its item (Value owned by the cache), or its absence.
type cachedItem struct {
	item   engine.Item
	absent bool
}

func newItemCache(max int64) *itemCache {
	return &itemCache{m: clockmap.New[cachedItem](), max: max}
}

// get returns k's state if the cache knows it; the item's Value is a copy the caller owns.
func (c *itemCache) get(k []byte) (it engine.Item, found, known bool) {
	e, ok := c.m.Get(k)
	if !ok {
		c.misses.Add(1)
		return engine.Item{}, false, false
	}
	c.hits.Add(1)
	if e.Val.absent {
		return engine.Item{}, false, true
	}
	it = e.Val.item
	it.Value = append([]byte{}, it.Value...)
	return it, true, true
}

// fill records what a read of Pebble found for k (the cache keeps its own copy of the value), unless the item
// would take more than a quarter of the cache.
func (c *itemCache) fill(k []byte, it engine.Item, found bool) {
	if c.tooBig(k, it.Value) {
		return
	}
	if !found {
		it = engine.Item{}
	}
	c.put(k, it, !found)
}

// put stores k's item (or its absence) as one allocation: the entry, the key and a copy of the value. A lookup
// compares the key it finds, and a hit copies the value out: with the key apart that was one more cache miss on
// every read of the writer (a sixth of HSET's CPU was the lookup, docs/benchmarks.md). The value's capacity ends
// at its length.
func (c *itemCache) put(k []byte, it engine.Item, absent bool) {
	n := len(k) + len(it.Value)
	c.m.PutInlineHashed(n, c.m.Hash(k), c.m.InlineSize(n)+slotOverhead, c.max, func(b []byte) (string, cachedItem) {
		copy(b, k)
		if !absent {
			v := it.Value
			it.Value = b[len(k):n:n]
			copy(it.Value, v)
		}
		return unsafe.String(unsafe.SliceData(b), len(k)), cachedItem{item: it, absent: absent}
	})
}

// set records a write of it at k, if the cache knows k. A key enters the cache only by being read: most keys
// written without a read (a list's pushed elements, a sorted set's score index, a plain SET) are not read soon,
// and would push out those that are. A cached key whose new value fits where the old one is takes it in place:
// rewriting a hot key (a collection's meta at every member write) allocates nothing.
func (c *itemCache) set(k []byte, it engine.Item) {
	e, ok := c.m.Get(k)
	if !ok {
		return
	}
	if c.tooBig(k, it.Value) {
		c.m.Remove(string(k)) // an absent key cached small may be written big: it must not stay unbounded
		return
	}
	buf := e.Val.item.Value
	if e.Val.absent || cap(buf) < len(it.Value) || cap(buf) > 2*len(it.Value)+64 {
		c.put(k, it, false) // a value that shrank a lot does not keep its old room
		return
	}
	it.Value = append(buf[:0], it.Value...)
	e.Val = cachedItem{item: it}
}

// tooBig says an item of key k and value v would take more than a quarter of the cache: big values are not
// what the cache is for (resolving a write reads metas, members and counters), and one would evict many.
func (c *itemCache) tooBig(k, v []byte) bool {
	return int64(len(k)+len(v))+itemCacheOverhead > c.max/4
}

// del records that k was deleted: it drops k's entry rather than keep its absence, since most deleted keys are
// not read again (a popped element, a swept member or expired item) and would take the place of hot ones.
func (c *itemCache) del(k []byte) {
	if c.m.Has(k) {
		c.m.Remove(string(k))
	}
}

// reset empties the cache.
func (c *itemCache) reset() { c.m.Reset() }
