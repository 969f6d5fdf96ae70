package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Encoding: anykv writes strings raw or, as Redis does, as an integer when they are one that fits 32 bits (never
// LZF-compressed); sets, hashes and sorted sets in their plain encodings (RDB_TYPE_SET, RDB_TYPE_HASH,
// RDB_TYPE_ZSET_2 with binary scores); lists as RDB_TYPE_LIST_QUICKLIST_2 of listpacks of up to 8 KiB (Redis's
// default node size), an element too big for one alone in its node. Redis 7.0 loads all of them, converting to
// its small encodings by its own thresholds.

// listpackNode is the size past which Encode starts a new quicklist node (Redis's list-max-listpack-size -2).
const listpackNode = 8 << 10

// Encode writes v's DUMP payload, footer included.
func Encode(v Value) []byte {
	var b []byte
	switch v.Kind {
	case String:
		b = appendString(append(make([]byte, 0, len(v.Str)+24), TypeString), v.Str)
	case Set, Hash:
		t := byte(TypeSet)
		n := len(v.Elems)
		if v.Kind == Hash {
			t, n = TypeHash, n/2
		}
		b = AppendLen(append(make([]byte, 0, elemsSize(v.Elems)+24), t), uint64(n))
		for _, e := range v.Elems {
			b = appendString(b, e)
		}
	case ZSet:
		b = AppendLen(append(make([]byte, 0, elemsSize(v.Elems)+9*len(v.Elems)+24), TypeZSet2), uint64(len(v.Elems)))
		for i, e := range v.Elems {
			b = binary.LittleEndian.AppendUint64(appendString(b, e), math.Float64bits(v.Scores[i]))
		}
	case List:
		b = appendQuicklist(make([]byte, 0, elemsSize(v.Elems)+24), v.Elems)
	}
	return Finish(b)
}

// elemsSize is about what elems take encoded (their bytes and a length each).
func elemsSize(elems [][]byte) int {
	n := 0
	for _, e := range elems {
		n += len(e) + 5
	}
	return n
}

// Finish appends the footer: the RDB version and the CRC64 of all before it.
func Finish(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
}

// AppendLen appends an RDB length.
func AppendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// appendString appends an RDB string: an integer of up to 32 bits when s is one's canonical text (as Redis
// writes it), else its length and bytes.
func appendString(b []byte, s []byte) []byte {
	if n, ok := canonicalInt(s); ok && len(s) <= 11 {
		switch {
		case n >= math.MinInt8 && n <= math.MaxInt8:
			return append(b, 0xc0, byte(n))
		case n >= math.MinInt16 && n <= math.MaxInt16:
			return binary.LittleEndian.AppendUint16(append(b, 0xc1), uint16(n))
		case n >= math.MinInt32 && n <= math.MaxInt32:
			return binary.LittleEndian.AppendUint32(append(b, 0xc2), uint32(n))
		}
	}
	return append(AppendLen(b, uint64(len(s))), s...)
}

// canonicalInt reads s as an integer if it is one written as Redis writes integers (no sign but a minus, no
// leading zeros or blanks), which Redis's string2ll and listpacks accept.
func canonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	return n, string(strconv.AppendInt(buf[:0], n, 10)) == string(s)
}

// appendQuicklist appends a list as RDB_TYPE_LIST_QUICKLIST_2 whose nodes are listpacks (container 2).
func appendQuicklist(b []byte, elems [][]byte) []byte {
	var nodes [][][]byte
	for start := 0; start < len(elems); {
		end, size := start, 0
		for end < len(elems) && (end == start || size+len(elems[end]) <= listpackNode) && end-start < 0xfffe {
			size += len(elems[end]) + 6
			end++
		}
		nodes = append(nodes, elems[start:end])
		start = end
	}
	b = AppendLen(append(b, TypeListQuicklist2), uint64(len(nodes)))
	var lp []byte
	for _, node := range nodes {
		lp = appendListpack(lp[:0], node)
		b = append(AppendLen(append(b, 2), uint64(len(lp))), lp...)
	}
	return b
}

// appendListpack appends a listpack of elems, each an integer entry when it is an integer's canonical text (as
// Redis's lpAppend encodes), else a string entry.
func appendListpack(lp []byte, elems [][]byte) []byte {
	start := len(lp)
	lp = append(lp, 0, 0, 0, 0, 0, 0) // total bytes and count, set below
	for _, e := range elems {
		at := len(lp)
		if n, ok := canonicalInt(e); ok {
			switch {
			case n >= 0 && n <= 127:
				lp = append(lp, byte(n))
			case n >= -4096 && n <= 4095:
				lp = append(lp, 0xc0|byte(uint64(n)>>8&0x1f), byte(n))
			case n >= math.MinInt16 && n <= math.MaxInt16:
				lp = binary.LittleEndian.AppendUint16(append(lp, 0xf1), uint16(n))
			case n >= -1<<23 && n < 1<<23:
				lp = append(lp, 0xf2, byte(n), byte(n>>8), byte(n>>16))
			case n >= math.MinInt32 && n <= math.MaxInt32:
				lp = binary.LittleEndian.AppendUint32(append(lp, 0xf3), uint32(n))
			default:
				lp = binary.LittleEndian.AppendUint64(append(lp, 0xf4), uint64(n))
			}
		} else {
			switch l := len(e); {
			case l < 64:
				lp = append(lp, 0x80|byte(l))
			case l < 4096:
				lp = append(lp, 0xe0|byte(l>>8), byte(l))
			default:
				lp = binary.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(l))
			}
			lp = append(lp, e...)
		}
		lp = appendBacklen(lp, len(lp)-at)
	}
	lp = append(lp, 0xff)
	binary.LittleEndian.PutUint32(lp[start:], uint32(len(lp)-start))
	binary.LittleEndian.PutUint16(lp[start+4:], uint16(min(len(elems), 0xffff)))
	return lp
}

// appendBacklen appends a listpack entry's length written backwards: 7 bits a byte, the last byte first.
func appendBacklen(b []byte, l int) []byte {
	n := backlenSize(l)
	for i := n - 1; i >= 0; i-- {
		c := byte(l >> (7 * i) & 0x7f)
		if i != n-1 {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}
