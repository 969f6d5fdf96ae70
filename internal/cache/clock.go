package cache

import "sync/atomic"

// clockMap is a map bounded by bytes that evicts with the CLOCK algorithm (second chance): every entry has a
// reference bit set by hits; the hand sweeps the ring of entries, clearing set bits and evicting the first entry
// whose bit is clear. Hot entries survive, an entry read once and never again goes within one turn of the hand,
// and a hit costs one atomic store under the owner's read lock (LRU would need the write lock to reorder a list).
//
// clockMap does no locking itself: the owner holds its lock for writing around put, remove and reset, and at
// least for reading around get.
type clockMap[V any] struct {
	items map[string]*clockEntry[V]
	ring  []*clockEntry[V]
	hand  int
	bytes int64
}

type clockEntry[V any] struct {
	key  string
	val  V
	size int64
	pos  int // index in ring
	ref  atomic.Bool
}

func newClockMap[V any]() clockMap[V] { return clockMap[V]{items: make(map[string]*clockEntry[V])} }

// get returns the entry of key and marks it referenced. It takes the key as bytes: the lookup does not allocate.
func (m *clockMap[V]) get(key []byte) (*clockEntry[V], bool) {
	e, ok := m.items[string(key)]
	if ok && !e.ref.Load() {
		e.ref.Store(true)
	}
	return e, ok
}

// put stores val under key (replacing an entry there), first evicting until the map holds at most max bytes
// with it. It returns the number of entries evicted to make room.
func (m *clockMap[V]) put(key string, val V, size, max int64) (evicted int) {
	m.remove(key)
	for m.bytes+size > max && len(m.ring) > 0 {
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
	e := &clockEntry[V]{key: key, val: val, size: size, pos: len(m.ring)}
	m.items[key] = e
	m.ring = append(m.ring, e)
	m.bytes += size
	return evicted
}

// remove deletes key's entry, reporting whether there was one.
func (m *clockMap[V]) remove(key string) bool {
	e, ok := m.items[key]
	if ok {
		m.drop(e)
	}
	return ok
}

// drop takes e out of the map and the ring; the ring's last entry takes its place, so the hand, pointing at
// e's position, looks at that entry next.
func (m *clockMap[V]) drop(e *clockEntry[V]) {
	delete(m.items, e.key)
	last := len(m.ring) - 1
	m.ring[e.pos] = m.ring[last]
	m.ring[e.pos].pos = e.pos
	m.ring[last] = nil
	m.ring = m.ring[:last]
	m.bytes -= e.size
}

// reset empties the map and returns how many entries it held.
func (m *clockMap[V]) reset() int {
	n := len(m.items)
	*m = newClockMap[V]()
	return n
}

func (m *clockMap[V]) len() int { return len(m.items) }
