// Package clockmap is a map bounded by bytes that evicts with CLOCK: the read cache's items and query answers
// (internal/cache), and the items the pebblestore writer keeps to resolve writes without reading Pebble.
package clockmap

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// Map is a map bounded by bytes that evicts with the CLOCK algorithm (second chance): every entry has a
// reference bit set by hits; the hand sweeps the ring of entries, clearing set bits and evicting the first entry
// whose bit is clear. Hot entries survive, an entry read once and never again goes within one turn of the hand,
// and a hit costs one atomic store under the owner's read lock (LRU would need the write lock to reorder a list).
//
// Map does no locking itself: the owner holds its lock for writing around Put, Remove, Resize and Reset, and at
// least for reading around Get and Has.
//
// The index (index.go) is keyed by a 64-bit hash of the key (the entry keeps the key, compared at each lookup):
// its slots hold the hash inline where a string key points to its bytes elsewhere, one cache miss fewer per
// lookup of a big map (the read cache's lookup was a fifth of GET's CPU at pipeline 16, nearly all of it memory
// stalls). Two keys of one hash (seeded per map, so not chosen by clients) share a slot: the later Put replaces
// the other.
type Map[V any] struct {
	items index[V]
	seed  maphash.Seed
	ring  []*Entry[V]
	hand  int
	bytes int64
}

// Entry is one key's value; the owner may change Val in place (under its write lock), and then Resize it.
type Entry[V any] struct {
	key  string
	Val  V
	hash uint64
	size int64
	pos  int // index in ring
	ref  atomic.Bool
}

// New returns an empty map.
func New[V any]() Map[V] { return Seeded[V](maphash.MakeSeed()) }

// Seeded returns an empty map that hashes keys with seed: an owner that hashes a key with it anyway (to pick one
// of several maps) passes the hash to the *Hashed methods instead of having the map hash the key again.
func Seeded[V any](seed maphash.Seed) Map[V] {
	return Map[V]{seed: seed}
}

// Hash is key's hash in m, for the *Hashed methods.
func (m *Map[V]) Hash(key []byte) uint64 { return maphash.Bytes(m.seed, key) }

// find returns key's entry, if any; h is key's hash.
func (m *Map[V]) find(key []byte, h uint64) (*Entry[V], bool) {
	e := m.items.get(h)
	if e == nil || e.key != string(key) {
		return nil, false
	}
	return e, true
}

// Get returns the entry of key and marks it referenced. It takes the key as bytes: the lookup does not allocate.
func (m *Map[V]) Get(key []byte) (*Entry[V], bool) {
	return m.GetHashed(key, maphash.Bytes(m.seed, key))
}

// GetHashed is Get of key whose Hash is h.
func (m *Map[V]) GetHashed(key []byte, h uint64) (*Entry[V], bool) {
	e, ok := m.find(key, h)
	if ok && !e.ref.Load() {
		e.ref.Store(true)
	}
	return e, ok
}

// Put stores val under key (replacing an entry there), first evicting until the map holds at most max bytes
// with it. It returns the number of entries evicted to make room.
func (m *Map[V]) Put(key string, val V, size, max int64) (evicted int) {
	return m.PutHashed(key, maphash.String(m.seed, key), val, size, max)
}

// PutHashed is Put of key whose Hash is h.
func (m *Map[V]) PutHashed(key string, h uint64, val V, size, max int64) (evicted int) {
	if e := m.items.get(h); e != nil {
		m.drop(e) // key's entry, or another key's of the same hash
	}
	evicted = m.evict(size, max)
	e := &Entry[V]{key: key, Val: val, hash: h, size: size, pos: len(m.ring)}
	m.items.put(h, e)
	m.ring = append(m.ring, e)
	m.bytes += size
	return evicted
}

// PutInlineHashed is PutHashed of an entry that carries n bytes of its own (its key's and its value's), allocated
// with the entry: fill copies them into b (len n) and returns the key and value, which may point into b. A hit
// then finds the entry, its key and its value in adjacent memory, where they were three allocations, three
// dependent cache misses (a third of a GET's CPU at pipeline 16 was the read cache's lookup, two thirds of it
// waiting on the entry and on its key). Past maxInline bytes, b is an allocation of its own.
func (m *Map[V]) PutInlineHashed(n int, h uint64, size, max int64, fill func(b []byte) (string, V)) (evicted int) {
	if e := m.items.get(h); e != nil {
		m.drop(e) // key's entry, or another key's of the same hash
	}
	evicted = m.evict(size, max)
	e, b := newInline[V](n)
	e.key, e.Val = fill(b)
	e.hash, e.size, e.pos = h, size, len(m.ring)
	m.items.put(h, e)
	m.ring = append(m.ring, e)
	m.bytes += size
	return evicted
}

// The entries of PutInlineHashed: an Entry and its bytes in one allocation, by size class (each half again the
// one before, so at most a third of the bytes is slack).
type (
	inline32[V any] struct {
		e Entry[V]
		b [32]byte
	}
	inline48[V any] struct {
		e Entry[V]
		b [48]byte
	}
	inline64[V any] struct {
		e Entry[V]
		b [64]byte
	}
	inline96[V any] struct {
		e Entry[V]
		b [96]byte
	}
	inline128[V any] struct {
		e Entry[V]
		b [128]byte
	}
	inline192[V any] struct {
		e Entry[V]
		b [192]byte
	}
	inline256[V any] struct {
		e Entry[V]
		b [256]byte
	}
	inline384[V any] struct {
		e Entry[V]
		b [384]byte
	}
	inline512[V any] struct {
		e Entry[V]
		b [512]byte
	}
)

// maxInline is the most bytes an entry carries in its own allocation.
const maxInline = 512

// InlineSize is about what an entry of PutInlineHashed carrying n bytes allocates: the entry and its size
// class together, or the entry and n bytes apart past maxInline. An owner bounding its bytes charges this.
func (m *Map[V]) InlineSize(n int) int64 {
	return int64(unsafe.Sizeof(Entry[V]{})) + int64(max(inlineClass(n), n))
}

// inlineClasses are the sizes of newInline's classes.
var inlineClasses = [...]int{32, 48, 64, 96, 128, 192, 256, 384, maxInline}

// inlineClass is the class of an entry carrying n bytes, 0 past maxInline.
func inlineClass(n int) int {
	for _, c := range inlineClasses {
		if n <= c {
			return c
		}
	}
	return 0
}

// newInline returns a new entry and n bytes allocated with it (after it, for a hit to find them next to it).
func newInline[V any](n int) (*Entry[V], []byte) {
	switch inlineClass(n) {
	case 32:
		x := new(inline32[V])
		return &x.e, x.b[:n:n]
	case 48:
		x := new(inline48[V])
		return &x.e, x.b[:n:n]
	case 64:
		x := new(inline64[V])
		return &x.e, x.b[:n:n]
	case 96:
		x := new(inline96[V])
		return &x.e, x.b[:n:n]
	case 128:
		x := new(inline128[V])
		return &x.e, x.b[:n:n]
	case 192:
		x := new(inline192[V])
		return &x.e, x.b[:n:n]
	case 256:
		x := new(inline256[V])
		return &x.e, x.b[:n:n]
	case 384:
		x := new(inline384[V])
		return &x.e, x.b[:n:n]
	case maxInline:
		x := new(inline512[V])
		return &x.e, x.b[:n:n]
	}
	return new(Entry[V]), make([]byte, n)
}

// evict drops entries until the map holds at most max bytes with room more, and returns how many it dropped.
func (m *Map[V]) evict(room, max int64) (evicted int) {
	for m.bytes+room > max && len(m.ring) > 0 {
		if m.hand >= len(m.ring) {
			m.hand = 0
		}
		e := m.ring[m.hand]
		if e.ref.Load() {
			e.ref.Store(false)
			m.hand++
			continue
		}
		m.drop(e)
		evicted++
	}
	return evicted
}

// Remove deletes key's entry, reporting whether there was one.
func (m *Map[V]) Remove(key string) bool { return m.RemoveHashed(key, maphash.String(m.seed, key)) }

// RemoveHashed is Remove of key whose Hash is h.
func (m *Map[V]) RemoveHashed(key string, h uint64) bool {
	e, ok := m.find([]byte(key), h) // the conversion does not allocate
	if ok {
		m.drop(e)
	}
	return ok
}

// drop takes e out of the map and the ring; the ring's last entry takes its place, so the hand, pointing at
// e's position, looks at that entry next.
func (m *Map[V]) drop(e *Entry[V]) {
	m.items.del(e.hash)
	last := len(m.ring) - 1
	m.ring[e.pos] = m.ring[last]
	m.ring[e.pos].pos = e.pos
	m.ring[last] = nil
	m.ring = m.ring[:last]
	m.bytes -= e.size
}

// Reset empties the map and returns how many entries it held.
func (m *Map[V]) Reset() int {
	n := m.items.n
	*m = Seeded[V](m.seed) // the owner's hashes stay valid
	return n
}

// Has reports whether key has an entry, without marking it referenced.
func (m *Map[V]) Has(key []byte) bool { return m.HasHashed(key, maphash.Bytes(m.seed, key)) }

// HasHashed is Has of key whose Hash is h.
func (m *Map[V]) HasHashed(key []byte, h uint64) bool {
	_, ok := m.find(key, h)
	return ok
}

// Resize records that e, changed in place, now weighs size bytes, and evicts (e itself perhaps) until the map
// holds at most max bytes. It returns the number of entries evicted.
func (m *Map[V]) Resize(e *Entry[V], size, max int64) (evicted int) {
	m.bytes += size - e.size
	e.size = size
	return m.evict(0, max)
}

// Len is the number of entries.
func (m *Map[V]) Len() int { return m.items.n }

// Bytes is the sum of the entries' sizes.
func (m *Map[V]) Bytes() int64 { return m.bytes }
