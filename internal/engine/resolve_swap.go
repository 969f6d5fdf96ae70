package engine

import "fmt"

// swapEntryCost is what swap counts against maxBuilt for each item it holds beyond its key and value bytes: the
// entry and the Write it becomes.
const swapEntryCost = 160

// swap carries out OpSwap (Redis's SWAPDB): every live item of table a moves to table b and every one of b to a,
// collections with their members, inside this batch, so the exchange is as atomic and as durable as any batch
// and every layer above sees it as the flush of both tables and the writes of their new items.
//
// It is a copy, O(items of both tables), where Redis swaps two pointers: tables are named in every stored key,
// and a durable indirection from a database to a table would be one more thing every engine, cache and front end
// must agree on. Each item copied counts against maxBuilt, so that two tables holding more than that together are
// refused whole (ErrBatchTooBig, nothing applied) rather than held in memory. Items keep their versions and
// expiry times, and a string its annotation (annotation.go), which stays valid as it names the version; members
// (and annotations) are written with fresh versions, so that a member the reclaimer saw before a swap and judged
// dead during it is not the one a second swap brings back (kv/reclaim.go deletes only the version it saw). Members of
// collections no live meta item names (deleted or expired ones the reclaimer has not reached) stay behind, and go
// with the flush, as do annotations of items no longer live.
func (rs *resolver) swap(a, b string) error {
	if a == b {
		return nil
	}
	type entry struct {
		key []byte
		it  Item
	}
	from := [4]string{a, b, MemberTable(a), MemberTable(b)}
	to := [4]string{b, a, MemberTable(b), MemberTable(a)}
	var held [4][]entry
	gens := [2]map[string]uint64{{}, {}} // each table's live items: key → generation (0: a string)
	for i, t := range from {
		over := false
		var bad error
		err := rs.scanRange(t, Range{}, false, func(k []byte, it Item) bool {
			switch {
			case i >= 2: // a member: kept if a live collection of its table has its generation
				ck, gen, _, err := SplitMemberKey(k)
				if g, ok := gens[i-2][string(ck)]; err != nil || !ok || g != gen {
					return true
				}
			case it.Kind == KindString:
				gens[i][string(k)] = 0 // a string's annotation (memcached's stale and win bits) is at generation 0
			default:
				meta, err := DecodeCollMeta(it.Value)
				if err != nil {
					bad = fmt.Errorf("swapping %q and %q: %w", a, b, err)
					return false
				}
				gens[i][string(k)] = meta.Gen
			}
			if rs.built += len(k) + len(it.Value) + swapEntryCost; rs.built > maxBuilt {
				over = true
				return false
			}
			held[i] = append(held[i], entry{k, it})
			return true
		})
		switch {
		case err != nil:
			return err
		case bad != nil:
			return bad
		case over:
			return ErrBatchTooBig
		}
	}
	for _, t := range from {
		rs.flush(t)
	}
	for i := range held {
		for _, e := range held[i] {
			if i >= 2 {
				// A member gets a fresh version: its key (collection, generation, name) may come back to the
				// member table it left (a second swap), where the reclaimer may have judged it dead while it was
				// away; the reclaimer deletes only the version it saw (kv/reclaim.go).
				e.it.Version = rs.next()
			}
			rs.record(Write{Table: to[i], Key: e.key, Item: e.it})
		}
	}
	return nil
}
