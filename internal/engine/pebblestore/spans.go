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
// none (the rest of the keyspace is one span).
func memberTableEdge(start []byte) []byte {
	if len(start) == 0 || start[0] != nsData {
		return dataStart // the store's meta records: their own span
	}
	table, _, plen, err := splitKey(start)
	if err != nil {
		return nil
	}
	if _, member := engine.UserTable(string(table)); member {
		return prefixEnd(start[:plen])
	}
	// Tables of names up to 127 bytes (a one-byte length) sort by the length of their name, then by name. The
	// first member table after this one has a name of the same length if this name sorts below the member
	// tables' common prefix, else one byte longer (or of the prefix's own length, for shorter names). Past 127
	// bytes the order of lengths is not the order of their encodings: no more cuts.
	mp := []byte(engine.MemberTable(""))
	n := len(table)
	if n < len(mp) {
		n = len(mp)
	} else if bytes.Compare(table[:len(mp)], mp) > 0 {
		n++
	}
	if n > 127 {
		return nil
	}
	edge := append([]byte{nsData, byte(n)}, mp...)
	if bytes.Compare(edge, start) <= 0 {
		return nil // cannot happen with the layout above; an edge must lie after start
	}
	return edge
}
