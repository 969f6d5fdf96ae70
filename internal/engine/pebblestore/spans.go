package pebblestore

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// Where flushes and compactions end their sstables.
//
// A collection's meta item lives with the keys of its table and is rewritten by every command on the collection;
// its members live in the table's member table, which sorts elsewhere. Left to itself, Pebble cuts sstables by
// size only, so a flush that wrote to a list held the list's meta and its newest members in one sstable spanning
// everything between them, and each compaction of that sstable rewrote what it overlapped below: the list so far
// for RPUSH (10× the bytes flushed), the first sstable of the list for LPUSH (4.6×). memberTableSpans cuts every
// output sstable at the edges of each member table, so members pushed at either end of a collection land in
// sstables that overlap nothing below and move down without a rewrite, and the metas compact on their own.
// Cuts are made only around member tables (one per table holding collections), not between every pair of
// tables, so a flush that touched many client tables does not turn into as many small sstables.

// memberTableSpans is Pebble's SpanPolicyFunc: the default policy everywhere, valid from start up to the next
// edge of a member table.
func memberTableSpans(start []byte) (pebble.SpanPolicy, []byte, error) {
	return pebble.SpanPolicy{}, memberTableEdge(start), nil
}

// memberTableEdge returns the first key after start at which a member table begins or ends, or nil if there is
// none it can name (the rest of the keyspace is one span). start need not be a whole key: a range deletion's
// piece may begin at a bare table prefix (FLUSHALL's begins at the data namespace itself) or at an earlier edge.
func memberTableEdge(start []byte) []byte {
	switch {
	case len(start) == 0 || start[0] < nsData:
		return dataStart // the store's meta records: their own span
	case start[0] > nsData:
		return nil
	}
	// Tables of names up to 127 bytes (a one-byte length) sort by the length of their name, then by name; past
	// 127 the order of lengths is not the order of their encodings: no more cuts.
	n, name := 0, start[1:] // the table's name length, and as much of its name as start holds
	if len(start) > 1 {
		if start[1] > 127 {
			return nil
		}
		n, name = int(start[1]), start[2:]
	}
	complete := len(name) >= n
	if complete {
		name = name[:n]
	}
	mp := []byte(engine.MemberTable(""))
	var edge []byte
	switch {
	case n >= len(mp) && bytes.HasPrefix(name, mp) && complete: // in a member table: its end
		edge = prefixEnd(start[:2+n])
	case n >= len(mp) && bytes.HasPrefix(name, mp): // among the member tables of this length: after all of them
		edge = append([]byte{nsData, byte(n)}, mp[0], mp[1]+1)
	case n >= len(mp) && bytes.Compare(name, mp) < 0: // below them: the first of them
		edge = append([]byte{nsData, byte(n)}, mp...)
	default: // past them, or a name too short to be one: the first member table one byte longer
		n = max(n+1, len(mp))
		if n > 127 {
			return nil
		}
		edge = append([]byte{nsData, byte(n)}, mp...)
	}
	if bytes.Compare(edge, start) <= 0 {
		return nil // cannot happen with the layout above; an edge must lie after start
	}
	return edge
}
