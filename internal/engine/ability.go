package engine

import (
	"bytes"
	"hash/crc32"
	"strings"
)

// Ability is a set of the optional interfaces an engine implements. Callers learn an engine's abilities by type
// assertion (e.(Scanner)) or, all at once, with AbilitiesOf; decorators use Expose so they offer exactly the
// abilities of the engine they wrap, never more.
type Ability uint8

// The optional abilities.
const (
	CanScan   Ability = 1 << iota // Scanner: ordered scans of a table
	CanTables                     // TableLister: the list of tables
	CanSweep                      // Sweeper: background reclaim of expired items
	CanStats                      // Statser: figures for INFO, stats and metrics
	// SingleItem is a limit, not an interface: the engine's batches reach one item (ItemScoper). Expose keeps it
	// through the forwarded ItemScoper, never through a shape of its own.
	SingleItem

	AllAbilities = CanScan | CanTables | CanSweep | CanStats
)

// ItemScoper is an engine whose datastore changes only one item atomically (memcached): SingleItemBatches
// reports true, and Apply refuses every batch that reads or writes more than one item, or flushes, with an error
// wrapping ErrNotSupported that names the engine, applying nothing. An engine without it applies any batch.
type ItemScoper interface {
	SingleItemBatches() bool
}

// SingleItemOnly reports whether e refuses batches that touch more than one item (see ItemScoper).
func SingleItemOnly(e Engine) bool {
	s, ok := e.(ItemScoper)
	return ok && s.SingleItemBatches()
}

// AbilitiesOf reports which optional interfaces e implements.
func AbilitiesOf(e Engine) Ability {
	var a Ability
	if _, ok := e.(Scanner); ok {
		a |= CanScan
	}
	if _, ok := e.(TableLister); ok {
		a |= CanTables
	}
	if _, ok := e.(Sweeper); ok {
		a |= CanSweep
	}
	if _, ok := e.(Statser); ok {
		a |= CanStats
	}
	if SingleItemOnly(e) {
		a |= SingleItem
	}
	return a
}

// String lists the abilities by interface name ("Scanner,Statser"), or "none".
func (a Ability) String() string {
	var names []string
	for _, n := range []struct {
		a    Ability
		name string
	}{{CanScan, "Scanner"}, {CanTables, "TableLister"}, {CanSweep, "Sweeper"}, {CanStats, "Statser"},
		{SingleItem, "SingleItemBatches"}} {
		if a&n.a != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Decorator is an engine that implements every optional ability by forwarding to (or adding to) an engine it
// wraps. It cannot be handed out as it is, since it would claim abilities the wrapped engine may lack: Expose
// hides the ones that are not real.
type Decorator interface {
	Engine
	Scanner
	TableLister
	Sweeper
	Statser
	ReadLeveler // the wrapped engine's levels (ReadLevelsOf), so a decorator never claims a level it cannot serve
	ItemScoper  // the wrapped engine's limit (SingleItemOnly), so callers learn that multi-item batches are refused
	SlotScoped  // the wrapped engine's slots (SlotsOf), so callers learn that batches across slots are refused
	Viewer      // Get without the copy where the decorator keeps values (a cache), else the wrapped engine's (ViewOf)
}

// leveledEngine is what every engine Expose hands out has: the Engine methods, the read levels, the batch scope
// and View.
type leveledEngine interface {
	Engine
	ReadLeveler
	ItemScoper
	SlotScoped
	Viewer
}

// Expose returns d as an Engine whose optional interfaces are exactly those in has: d's methods for those, and no
// others visible to a type assertion. A decorator passes AbilitiesOf(inner), plus any ability it has by itself
// (a cache reports figures of its own: CanStats). SingleItem in has is ignored: d's SingleItemBatches decides it.
func Expose(d Decorator, has Ability) Engine {
	has &= AllAbilities
	type (
		base = leveledEngine
		sc   = Scanner
		tl   = TableLister
		sw   = Sweeper
		st   = Statser
	)
	switch has {
	case 0:
		return struct{ base }{d}
	case CanScan:
		return struct {
			base
			sc
		}{d, d}
	case CanTables:
		return struct {
			base
			tl
		}{d, d}
	case CanScan | CanTables:
		return struct {
			base
			sc
			tl
		}{d, d, d}
	case CanSweep:
		return struct {
			base
			sw
		}{d, d}
	case CanScan | CanSweep:
		return struct {
			base
			sc
			sw
		}{d, d, d}
	case CanTables | CanSweep:
		return struct {
			base
			tl
			sw
		}{d, d, d}
	case CanScan | CanTables | CanSweep:
		return struct {
			base
			sc
			tl
			sw
		}{d, d, d, d}
	}
	// With CanStats: the same eight shapes plus Statser.
	switch has &^ CanStats {
	case 0:
		return struct {
			base
			st
		}{d, d}
	case CanScan:
		return struct {
			base
			sc
			st
		}{d, d, d}
	case CanTables:
		return struct {
			base
			tl
			st
		}{d, d, d}
	case CanScan | CanTables:
		return struct {
			base
			sc
			tl
			st
		}{d, d, d, d}
	case CanSweep:
		return struct {
			base
			sw
			st
		}{d, d, d}
	case CanScan | CanSweep:
		return struct {
			base
			sc
			sw
			st
		}{d, d, d, d}
	case CanTables | CanSweep:
		return struct {
			base
			tl
			sw
			st
		}{d, d, d, d}
	}
	return d
}

// TableScoped is implemented by an engine whose batches cannot span tables (Redis Cluster keeps a table in one
// hash slot and runs a transaction within one slot only). Its Apply refuses a batch that touches two tables, or
// flushes every table, with an error wrapping ErrNotSupported, and applies nothing of it.
type TableScoped interface{ TableScoped() }

// SlotScoped is implemented by an engine whose namespace is spread over several slots (a Cassandra namespace
// over several partitions, ?slots=N): each batch must stay within one slot (SlotOf), and its Apply refuses one
// that does not with an error wrapping ErrCrossSlot (and so ErrNotSupported), applying nothing. A flush of every
// table runs slot by slot. Versions grow per slot: every key's versions grow and none is reused, but versions
// of keys in different slots are not ordered by time.
type SlotScoped interface{ Slots() int }

// BatchHinter is implemented by an engine that applies batches of at most BatchHint mutations best: a bigger
// one may be refused whole (etcd bounds a Txn's operations). Protocols end a pipeline's batch there, so that
// independent pipelined commands are not refused together; a single command may still need more.
type BatchHinter interface{ BatchHint() int }

// BatchHintOf returns e's BatchHint, or 0 when it has none.
func BatchHintOf(e Engine) int {
	if h, ok := e.(BatchHinter); ok {
		return h.BatchHint()
	}
	return 0
}

// SlotsOf returns e's number of slots: 1 unless e is SlotScoped.
func SlotsOf(e Engine) int {
	if s, ok := e.(SlotScoped); ok {
		return max(s.Slots(), 1)
	}
	return 1
}

// SlotOf returns the slot, of n, of key in table: a hash of the key's hash tag (HashTag); a member table's key
// counts as its collection's key, so a collection's members share its slot.
func SlotOf(table string, key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	if _, ok := UserTable(table); ok {
		if k, _, _, err := SplitMemberKey(key); err == nil {
			key = k
		}
	}
	return int(crc32.ChecksumIEEE(HashTag(key)) % uint32(n))
}

// HashTag returns the part of key that decides its slot: what lies between its first '{' and the next '}'
// when that is not empty, else the whole key (as Redis Cluster does: "{user1}:a" and "{user1}:b" share one).
func HashTag(key []byte) []byte {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Span tells whether muts stay within one table, for TableScoped engines: it returns the first two tables they
// name (a member table counts as its table; second is "" if there is one) and whether one flushes every table.
func Span(muts []Mutation) (first, second string, all bool) {
	for i := range muts {
		m := &muts[i]
		if m.Op == OpFlush && m.Table == "" {
			all = true
		}
		for _, t := range []string{m.Table, m.Target.Table} {
			if u, ok := UserTable(t); ok {
				t = u
			}
			switch {
			case t == "" || t == first:
			case first == "":
				first = t
			case second == "":
				second = t
			}
		}
	}
	return first, second, all
}
