package memcache

import (
	"hash/maphash"
	"sync"
)

// accesses remembers, for mg's h (hit before) and l (last access) flags, when each item version was last
// fetched by an mg that asked for either. memcached keeps both in every item; anykv's items are the engine's,
// durable, and a read must not become a write, so this is the process's memory, bounded: past accessCap entries
// a shard forgets some at random, as memcached's LRU forgets whole items. An item it does not know (never
// fetched so, rewritten since, or forgotten) answers h0 and l0, and a plain get sets nothing (docs/memcache.md).
type accesses struct {
	seed   maphash.Seed
	shards [accessShards]accessShard
}

const (
	accessShards = 64
	// accessCap bounds the entries of all shards together (a key is at most 250 bytes: under 32 MiB in all).
	accessCap = 1 << 17
)

type accessShard struct {
	mu sync.Mutex
	m  map[string]accessed
}

// accessed is one item version's last fetch, in unix seconds.
type accessed struct {
	version uint64
	at      int64
}

func newAccesses() *accesses { return &accesses{seed: maphash.MakeSeed()} }

// fetch records that key's item, found at version read and now at version (they differ when the fetch touched
// it: mg T), was fetched at now (unix seconds), and returns whether the version read was fetched so before, and
// how many seconds ago.
func (a *accesses) fetch(key []byte, read, version uint64, now int64) (before bool, ago int64) {
	sh := a.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	before, ago = sh.seen(key, read, now)
	if sh.m == nil {
		sh.m = make(map[string]accessed)
	}
	if _, ok := sh.m[string(key)]; !ok && len(sh.m) >= accessCap/accessShards {
		for k := range sh.m { // map order is random enough to forget by
			delete(sh.m, k)
			break
		}
	}
	sh.m[string(key)] = accessed{version: version, at: now}
	return before, ago
}

// peek is fetch without recording: me's la and fetch fields, and mg's h and l with u (no LRU bump).
func (a *accesses) peek(key []byte, version uint64, now int64) (before bool, ago int64) {
	sh := a.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.seen(key, version, now)
}

func (a *accesses) shard(key []byte) *accessShard {
	return &a.shards[maphash.Bytes(a.seed, key)%accessShards]
}

// seen reports whether key's version was fetched before, and how many seconds before now; the caller holds mu.
func (sh *accessShard) seen(key []byte, version uint64, now int64) (bool, int64) {
	if prev, ok := sh.m[string(key)]; ok && prev.version == version {
		return true, max(now-prev.at, 0)
	}
	return false, 0
}
