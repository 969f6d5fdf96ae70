package clockmap

import "math/bits"

// index finds a map's entries by their 64-bit hash: an open-addressing table with linear probing whose slots hold
// the hash beside the entry's pointer, so a probe compares hashes without loading entries, and a lookup is a load
// of the slot's cache line and then of the entry. It replaced a Go map[uint64]*Entry, whose lookup first walks
// the map's header, directory and table (dependent loads that miss the cache under load: the read cache's
// lookup was about a quarter of a GET's CPU at pipeline 16, nearly all of it waiting on memory). At most 3/4 of
// the slots are used; a deletion shifts the entries after it back (no tombstones), so a probe stops at the first
// empty slot.
type index[V any] struct {
	slots []islot[V] // len is a power of two, at least minSlots; nil while empty
	n     int        // entries held
	shift uint8      // 64 - log2(len(slots)): a hash's top bits are its home slot
}

type islot[V any] struct {
	h uint64
	e *Entry[V] // nil: the slot is empty
}

const minSlots = 8

// home is the slot where a probe for hash h starts. The top bits: the read cache picks its shard by the low ones.
func (x *index[V]) home(h uint64) int { return int(h >> x.shift) }

// get returns the entry of hash h, or nil.
func (x *index[V]) get(h uint64) *Entry[V] {
	if x.n == 0 {
		return nil
	}
	mask := len(x.slots) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h {
			return s.e
		}
	}
}

// put stores e under hash h, which no entry holds (the caller dropped any first).
func (x *index[V]) put(h uint64, e *Entry[V]) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	mask := len(x.slots) - 1
	i := x.home(h)
	for x.slots[i].e != nil {
		i = (i + 1) & mask
	}
	x.slots[i] = islot[V]{h: h, e: e}
	x.n++
}

// del removes the entry of hash h, if any, shifting back the entries after it that probed past its slot.
func (x *index[V]) del(h uint64) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	i := x.home(h)
	for {
		s := &x.slots[i]
		if s.e == nil {
			return
		}
		if s.h == h {
			break
		}
		i = (i + 1) & mask
	}
	// i is the hole. An entry at j (after it, before the next empty slot) moves into the hole unless its home
	// lies cyclically in (i, j]: there its probe would not pass the hole.
	for j := (i + 1) & mask; x.slots[j].e != nil; j = (j + 1) & mask {
		k := x.home(x.slots[j].h)
		if (j-k)&mask >= (j-i)&mask { // the distance from its home to j covers the hole
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = islot[V]{}
	x.n--
}

// grow doubles the slots (or makes the first ones) and puts every entry back.
func (x *index[V]) grow() {
	old := x.slots
	size := max(minSlots, 2*len(old))
	x.slots = make([]islot[V], size)
	x.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, s := range old {
		if s.e == nil {
			continue
		}
		i := x.home(s.h)
		for x.slots[i].e != nil {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}
