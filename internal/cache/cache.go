// Package cache is an engine decorator that keeps recently read items in memory, so hot keys are answered
// without touching the engine beneath (a skiplist or SSTable read costs microseconds; a map lookup, nanoseconds).
//
// Before a batch goes to the engine, the keys it touches leave the cache and their shards are marked as having
// a write in flight; after the engine applied it (durably), they leave again and the mark is lifted. Reads fill
// the cache on a miss only while no write is in flight in the shard and no invalidation happened since the read
// began (a per-shard generation). So while a write is in flight its keys are read from the engine alone, and the
// cache never answers with an item older than one the engine already showed a reader: reads stay linearizable.
package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
)

const shards = 256

// Cache wraps an engine. New hands it out through engine.Expose, so it offers exactly the optional abilities of
// the engine it wraps (and Statser, for its own figures).
type Cache struct {
	eng        engine.Engine
	seed       maphash.Seed
	shardBytes int64
	shards     [shards]shard
	hits       atomic.Int64
	misses     atomic.Int64
	closed     atomic.Bool // after Close, Get answers ErrClosed rather than from memory
}

type shard struct {
	mu      sync.RWMutex
	gen     uint64 // bumped by every invalidation
	pending int    // batches in flight that write to this shard
	bytes   int64
	items   map[string]engine.Item // by slot(table, key)
}

// New wraps e with a cache of about maxBytes of keys and values (0 disables caching but keeps the wrapper). The
// result has e's optional abilities and engine.Statser (the cache's figures added to e's, if any).
func New(e engine.Engine, maxBytes int64) engine.Engine {
	c := &Cache{eng: e, seed: maphash.MakeSeed(), shardBytes: maxBytes / shards}
	for i := range c.shards {
		c.shards[i].items = make(map[string]engine.Item)
	}
	return engine.Expose(c, engine.AbilitiesOf(e)|engine.CanStats)
}

// slot names a key in the cache: the table's length as a uvarint, the table, then the key. The length prefix is
// never truncated, so no two (table, key) pairs share a slot whatever their sizes.
func slot(table string, key []byte) string { return string(appendSlot(nil, table, key)) }

func appendSlot(b []byte, table string, key []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(table)))
	b = append(b, table...)
	return append(b, key...)
}

func (c *Cache) shard(s string) *shard {
	return &c.shards[maphash.String(c.seed, s)%shards]
}

// Get implements engine.Engine: a hit is answered from memory; a miss reads the engine and fills the cache.
// Absent keys are cached too (as an item with version 0, which no stored item has): reads of missing keys are
// as common as reads of present ones in a cache workload.
func (c *Cache) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if engine.IsInternalTable(table) {
		// Members of collections are written by ops addressed to their collection's key, so the cache could not
		// tell which member slots a batch changes: they are always read from the engine.
		return c.eng.Get(ctx, table, key, now)
	}
	var buf [128]byte
	b := appendSlot(buf[:0], table, key)
	sh := &c.shards[maphash.Bytes(c.seed, b)%shards]
	sh.mu.RLock()
	cached, ok := sh.items[string(b)] // no allocation for the lookup
	gen := sh.gen
	sh.mu.RUnlock()
	if ok && !c.closed.Load() {
		c.hits.Add(1)
		if cached.Version == 0 || !cached.Live(now) {
			return engine.Item{}, engine.ErrNotFound
		}
		it := cached
		it.Value = append(make([]byte, 0, len(it.Value)), it.Value...)
		return it, nil
	}
	c.misses.Add(1)
	it, err := c.eng.Get(ctx, table, key, now)
	absent := errors.Is(err, engine.ErrNotFound)
	if (err != nil && !absent) || c.shardBytes <= 0 {
		return it, err
	}
	size := int64(len(b) + len(it.Value) + 64)
	if size > c.shardBytes/4 {
		return it, err // too big to be worth a slot
	}
	cp := engine.Item{} // the absent marker
	if !absent {
		cp = it
		cp.Value = append([]byte(nil), it.Value...)
	}
	sh.mu.Lock()
	if sh.gen == gen && sh.pending == 0 { // no write touched this shard since the read began: the item is current
		if _, dup := sh.items[string(b)]; !dup {
			for sh.bytes+size > c.shardBytes && len(sh.items) > 0 {
				for k, old := range sh.items { // evict an arbitrary entry: map order is random
					sh.bytes -= int64(len(k) + len(old.Value) + 64)
					delete(sh.items, k)
					break
				}
			}
			sh.items[string(b)] = cp
			sh.bytes += size
		}
	}
	sh.mu.Unlock()
	return it, err
}

// Apply implements engine.Engine: the keys the batch may change leave the cache, and stay uncacheable, from
// before the engine applies it until after; a flush makes every shard so.
func (c *Cache) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	slots, all := touched(b)
	c.mark(slots, all, +1)
	res, err := c.eng.Apply(ctx, b)
	c.mark(slots, all, -1)
	return res, err
}

// touched lists the cache slots a batch may change, or reports that it flushes.
func touched(b *engine.Batch) (slots []string, all bool) {
	for i := range b.Muts {
		m := &b.Muts[i]
		switch {
		case m.Op == engine.OpFlush:
			return nil, true
		case !m.Writes():
			continue
		}
		slots = append(slots, slot(m.Table, m.Key))
		if m.Op == engine.OpRename || m.Op == engine.OpCopy || m.Op == engine.OpCall && m.Target.Table != "" {
			slots = append(slots, slot(m.Target.Table, m.Target.Key))
		}
		for _, k := range m.Call.Keys { // further keys a function may write
			slots = append(slots, slot(m.Table, k))
		}
	}
	return slots, false
}

// mark drops the slots (every entry, if all) and moves their shards' in-flight count by delta.
func (c *Cache) mark(slots []string, all bool, delta int) {
	if all {
		for i := range c.shards {
			sh := &c.shards[i]
			sh.mu.Lock()
			sh.gen++
			sh.pending += delta
			sh.items = make(map[string]engine.Item)
			sh.bytes = 0
			sh.mu.Unlock()
		}
		return
	}
	for _, s := range slots {
		sh := c.shard(s)
		sh.mu.Lock()
		sh.gen++
		sh.pending += delta
		if old, ok := sh.items[s]; ok {
			sh.bytes -= int64(len(s) + len(old.Value) + 64)
			delete(sh.items, s)
		}
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

// Stats forwards engine.Statser and adds the cache's own figures.
func (c *Cache) Stats() map[string]int64 {
	out := map[string]int64{}
	if st, ok := c.eng.(engine.Statser); ok {
		for k, v := range st.Stats() {
			out[k] = v
		}
	}
	var n, bytes int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n, bytes = n+int64(len(sh.items)), bytes+sh.bytes
		sh.mu.RUnlock()
	}
	out["cache_items"], out["cache_bytes"] = n, bytes
	out["cache_hits"], out["cache_misses"] = c.hits.Load(), c.misses.Load()
	return out
}
