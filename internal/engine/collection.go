package engine

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// Kind is the type of an item: a string (a plain value, the zero Kind) or one of Redis's collections.
type Kind uint8

// The kinds. Values are stored: append new ones, never renumber.
const (
	KindString Kind = iota
	KindHash
	KindList
	KindSet
	KindZSet
	KindStream
	kindMax
)

// String is the name Redis's TYPE command gives the kind.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindHash:
		return "hash"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindStream:
		return "stream"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Collections.
//
// A collection (a hash, list, set or sorted set) is a meta item plus one item per member. The meta item lives at
// the collection's key in its table, like a string, so KEYS, SCAN, TYPE, EXISTS, DEL, EXPIRE and TTL treat every
// type alike; its Kind names the type and its Value is a CollMeta. Each member is an item of its own in the
// table's member table (MemberTable), keyed by the collection's key, its generation and the member: so HSET on a
// hash of a million fields writes one member and the meta, never the whole hash, and members of one collection
// are contiguous and ordered, which makes ranges scans.
//
// The generation is a version allocated when the collection is created. Deleting or expiring a collection
// removes (or outdates) only its meta item, an O(1) write; its members, whose generation no live meta names any
// more, are invisible at once and reclaimed in the background. Every write of a member also rewrites the meta
// (its count, and so its version), so the meta's version changes with any change of the collection: WATCH on the
// key sees it, and a remote engine's optimistic commit of the meta alone detects every conflict.

// memberTablePrefix starts every member table name. Client-given table names never start with it (kv refuses
// them), so member tables are invisible to clients.
const memberTablePrefix = "\x00m"

// MemberTable returns the name of the hidden table that holds the members of table's collections.
func MemberTable(table string) string {
	if p := lastMemberTable.Load(); p != nil && p[0] == table {
		return p[1] // most servers use one table: every collection command asked, and built a new string
	}
	mt := memberTablePrefix + table
	lastMemberTable.Store(&[2]string{table, mt})
	return mt
}

// lastMemberTable is the last table MemberTable was asked for, and its answer.
var lastMemberTable atomic.Pointer[[2]string]

// IsInternalTable reports whether a table name is reserved for the engine's own use (member tables).
func IsInternalTable(table string) bool { return len(table) > 0 && table[0] == 0 }

// UserTable returns the table whose collections a member table holds, and whether name is a member table.
func UserTable(name string) (string, bool) {
	if len(name) < len(memberTablePrefix) || name[:len(memberTablePrefix)] != memberTablePrefix {
		return "", false
	}
	return name[len(memberTablePrefix):], true
}

// CollMeta is what a collection's meta item holds.
type CollMeta struct {
	// Gen is the generation: fixed when the collection is created, part of every member's key.
	Gen uint64
	// Count is the number of members (HLEN, SCARD, ...).
	Count int64
	// Head is a list's first index: its elements are at Head .. Head+Count-1; a stream's entries deleted since it
	// last ran empty, where its trims' nodes begin (collections.StreamTrim); 0 for other kinds.
	Head int64
	// LastMS and LastSeq are a stream's last entry ID, which new IDs must exceed (0 for other kinds).
	LastMS, LastSeq uint64
	// Floor is a seek hint of sorted sets and streams: no live member key (a sorted set's index entry, a stream's
	// entry ID) sorts below it (nil: none known). Popping or trimming from the low end raises it, so the next pop
	// or trim seeks past the deletions instead of stepping over each (a queue's ZPOPMIN, a capped stream's
	// XADD MAXLEN would otherwise slow down with every pop until a compaction).
	Floor []byte
	// Ceil is Floor's mirror for sorted sets: no live index entry sorts above it (nil: none known), raised by
	// pops from the high end (ZPOPMAX).
	Ceil []byte
}

// AppendCollMeta encodes m: gen (8 bytes), count (varint), then head (varint) when it or any field after it is
// not 0, then the last ID (two uvarints) when it or a hint is set, then the floor's length (uvarint) and bytes
// when a hint is set, then the ceiling's when it is. Each field is optional at the end, so older metas still
// decode.
func AppendCollMeta(dst []byte, m CollMeta) []byte {
	floor := len(m.Floor) > 0 || len(m.Ceil) > 0
	last := m.LastMS != 0 || m.LastSeq != 0 || floor
	if dst == nil { // one allocation, not one per field appended
		n := 8 + 2*binary.MaxVarintLen64
		if last {
			n += 4*binary.MaxVarintLen64 + len(m.Floor) + len(m.Ceil)
		}
		dst = make([]byte, 0, n)
	}
	dst = binary.BigEndian.AppendUint64(dst, m.Gen)
	dst = binary.AppendVarint(dst, m.Count)
	if m.Head != 0 || last {
		dst = binary.AppendVarint(dst, m.Head)
	}
	if last {
		dst = binary.AppendUvarint(dst, m.LastMS)
		dst = binary.AppendUvarint(dst, m.LastSeq)
	}
	if floor {
		dst = binary.AppendUvarint(dst, uint64(len(m.Floor)))
		dst = append(dst, m.Floor...)
	}
	if len(m.Ceil) > 0 {
		dst = binary.AppendUvarint(dst, uint64(len(m.Ceil)))
		dst = append(dst, m.Ceil...)
	}
	return dst
}

// DecodeCollMeta decodes a meta item's value.
func DecodeCollMeta(v []byte) (CollMeta, error) {
	if len(v) < 9 {
		return CollMeta{}, fmt.Errorf("%w: collection meta of %d bytes", ErrCorrupt, len(v))
	}
	m := CollMeta{Gen: binary.BigEndian.Uint64(v)}
	n, w := binary.Varint(v[8:])
	if w <= 0 {
		return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
	}
	m.Count = n
	rest := v[8+w:]
	if len(rest) > 0 {
		h, hw := binary.Varint(rest)
		if hw <= 0 {
			return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
		}
		m.Head, rest = h, rest[hw:]
	}
	if len(rest) > 0 {
		ms, w1 := binary.Uvarint(rest)
		if w1 <= 0 {
			return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
		}
		seq, w2 := binary.Uvarint(rest[w1:])
		if w2 <= 0 {
			return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
		}
		m.LastMS, m.LastSeq, rest = ms, seq, rest[w1+w2:]
	}
	for i, hint := range []*[]byte{&m.Floor, &m.Ceil} {
		if len(rest) == 0 {
			break
		}
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) < n || n == 0 && (i == 1 || len(rest) == w) {
			return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
		}
		if n > 0 {
			*hint = append([]byte(nil), rest[w:w+int(n)]...)
		}
		rest = rest[w+int(n):]
	}
	if len(rest) > 0 {
		return CollMeta{}, fmt.Errorf("%w: collection meta", ErrCorrupt)
	}
	return m, nil
}

// MemberPrefix returns the key prefix of every member of the collection at key with generation gen, in its
// member table: uvarint(len(key)) key gen(8 bytes, big endian). Length-prefixed, so no two collections' member
// spans overlap.
func MemberPrefix(dst, key []byte, gen uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return binary.BigEndian.AppendUint64(dst, gen)
}

// MemberKey returns the member-table key of member of the collection at key with generation gen.
func MemberKey(key []byte, gen uint64, member []byte) []byte {
	return append(MemberPrefix(make([]byte, 0, 10+len(key)+len(member)), key, gen), member...)
}

// SplitMemberKey splits a member-table key into the collection's key, its generation and the member.
func SplitMemberKey(mk []byte) (key []byte, gen uint64, member []byte, err error) {
	n, w := binary.Uvarint(mk)
	// n+8 would wrap for a length within 8 of 2^64: compare without adding to it.
	if w <= 0 || uint64(len(mk)-w) < 8 || uint64(len(mk)-w)-8 < n {
		return nil, 0, nil, fmt.Errorf("%w: member key %q", ErrCorrupt, mk)
	}
	key = mk[w : w+int(n)]
	gen = binary.BigEndian.Uint64(mk[w+int(n):])
	return key, gen, mk[w+int(n)+8:], nil
}
