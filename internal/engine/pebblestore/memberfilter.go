package pebblestore

import (
	"hash/maphash"
	"sync/atomic"

	"anykv/internal/engine"
)

// memberFilters let the writer answer "absent" for a collection's member without reading Pebble, for the
// collections created since the store opened. Resolving SADD, HSET or ZADD of a new member reads the member first;
// the item cache cannot answer for a key it never saw, and Pebble's answer for an absent key is a seek through
// every memtable and level (about 5 µs here: a quarter of redis-benchmark's SADD, HSET and ZADD added new members,
// and those reads were a tenth of their CPU). A collection's members all carry its generation in their keys
// (engine.MemberKey), and a generation is a version: allocated once, never reused, also across restarts. So a
// generation above floor was allocated after the filters began, every member key of it ever written went through
// the writer's add, and a filter of those keys proves the absence of any other:
//   - a generation above floor with no filter has never been written: every member of it is absent;
//   - one with a filter holds at most the keys the filter may contain (a bloom filter: false positives only).
//
// Deletes and range deletes leave their keys in the filter (more false positives, never a wrong absence), and so
// do writes of a group that is resolved again or whose commit fails. What does lose keys is dropping a filter:
// past their bound the filters of the older generations go (shed), and floor rises past them, so that those
// generations are never filtered again. Only the main writer has filters (as its item cache); every write of the
// store goes through it.
type memberFilters struct {
	floor uint64 // generations above it have filters, or were never written
	m     map[uint64]*genFilter
	bytes int64 // what the filters hold (genFilter.bytes)
	max   int64
	seed  maphash.Seed
	// Figures for Stats: the writer stores, Stats loads. asked counts the reads the filters were asked about (of
	// generations above floor), proved those answered "absent" without Pebble.
	asked, proved, held atomic.Int64
}

// DefaultMemberFilterBytes bounds the member filters: 2 to 4 bytes a member of a big collection (the last part's
// room included), and 192 bytes a small one (so about ten million members of big collections, or 175,000 small
// collections, before the oldest are shed).
const DefaultMemberFilterBytes = 32 << 20

// filterOverhead is what a generation's filter costs beside its bit arrays: the map's slot, the genFilter and its
// parts' slice.
const filterOverhead = 128

func newMemberFilters(floor uint64, max int64) *memberFilters {
	return &memberFilters{floor: floor, m: make(map[uint64]*genFilter), max: max, seed: maphash.MakeSeed()}
}

// memberGen returns the generation in a member table's key, or false for a key of another table or one that does
// not parse.
func memberGen(table string, key []byte) (uint64, bool) {
	if _, member := engine.UserTable(table); !member {
		return 0, false
	}
	_, gen, _, err := engine.SplitMemberKey(key)
	return gen, err == nil
}

// absent reports whether the filters prove that Pebble key k, the member key key of member table table, is absent.
func (f *memberFilters) absent(table string, key, k []byte) bool {
	gen, ok := memberGen(table, key)
	if !ok || gen <= f.floor {
		return false
	}
	f.asked.Add(1)
	g := f.m[gen]
	if g != nil && g.mayHave(maphash.Bytes(f.seed, k)) {
		return false
	}
	f.proved.Add(1)
	return true
}

// added records that Pebble key k, the member key key of member table table, is written; version is the highest
// allocated.
func (f *memberFilters) added(table string, key, k []byte, version uint64) {
	gen, ok := memberGen(table, key)
	if !ok || gen <= f.floor {
		return
	}
	g := f.m[gen]
	if g == nil {
		g = &genFilter{bytes: filterOverhead}
		f.m[gen] = g
		f.bytes += filterOverhead
	}
	if grown := g.add(maphash.Bytes(f.seed, k)); grown > 0 {
		f.bytes += grown
		if f.bytes > f.max {
			f.shed(version)
		}
		f.held.Store(f.bytes)
	}
}

// shed drops the filters of the older generations until the rest hold at most half the bound: each pass raises
// floor halfway to version (the highest allocated: no generation above it exists) and drops every filter at or
// below it. Generations are versions, so the older half of the range is the collections created longest ago.
func (f *memberFilters) shed(version uint64) {
	for f.bytes > f.max/2 && f.floor < version {
		f.floor += (version - f.floor + 1) / 2
		for gen, g := range f.m {
			if gen <= f.floor {
				f.bytes -= g.bytes
				delete(f.m, gen)
			}
		}
	}
}

// genFilter is a growing bloom filter of one generation's member keys: a chain of parts, each twice the capacity
// of the last, so that a collection of three members costs a few words and one of a million 2 to 4 MB (2.1 MB measured). New keys
// go to the last part; a lookup asks the parts newest first. The filters are blocked: a key's bits in a part all
// lie in one 64-byte block, so that adding it or asking a part for it is one cache line (with its bits spread
// over a part of megabytes, every push onto a big list paid a cache miss a probe: LPUSH -6%).
type genFilter struct {
	parts [][]uint64
	n     int   // keys in the last part
	bytes int64 // its parts' arrays and filterOverhead
}

const (
	filterFirstKeys  = 32 // the first part's capacity: one block
	filterBitsPerKey = 16
	filterProbes     = 10 // about 0.07% false positives a full part, 1% a chain of a million keys
	blockWords       = 8  // a block: 512 bits, a cache line
)

// add puts hash h in the filter and returns the bytes it allocated.
func (g *genFilter) add(h uint64) int64 {
	var grown int64
	if len(g.parts) == 0 || g.n >= partKeys(len(g.parts)-1) {
		words := partKeys(len(g.parts)) * filterBitsPerKey / 64
		g.parts = append(g.parts, make([]uint64, words))
		g.n = 0
		grown = int64(words * 8)
		g.bytes += grown
	}
	b := block(g.parts[len(g.parts)-1], h)
	for range filterProbes {
		h = probe(h)
		bit := h >> 55 // 0..511
		b[bit/64] |= 1 << (bit % 64)
	}
	g.n++
	return grown
}

// mayHave reports whether hash h may have been added.
func (g *genFilter) mayHave(h uint64) bool {
parts:
	for i := len(g.parts) - 1; i >= 0; i-- {
		b, x := block(g.parts[i], h), h
		for range filterProbes {
			x = probe(x)
			bit := x >> 55
			if b[bit/64]&(1<<(bit%64)) == 0 {
				continue parts
			}
		}
		return true
	}
	return false
}

// block returns the block of part p that holds hash h's bits: picked by h's low 32 bits (multiplied into range),
// where the bits within it come from the top bits of the probe sequence.
func block(p []uint64, h uint64) []uint64 {
	i := int(uint64(uint32(h)) * uint64(len(p)/blockWords) >> 32)
	return p[i*blockWords : (i+1)*blockWords : (i+1)*blockWords]
}

// probe steps a key's probe sequence, a linear congruential step whose top bits pick the bit: double hashing with
// the hash's two halves gave small parts ten times their expected false positives.
func probe(x uint64) uint64 { return x*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019 }

// partKeys is the capacity of part i.
func partKeys(i int) int { return filterFirstKeys << i }
