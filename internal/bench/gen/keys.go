package gen

import (
	"fmt"
	"strconv"
)

// FNVHash64 is YCSB's Utils.fnvhash64: FNV-1a over the eight little-endian
// bytes of v, made non-negative.
func FNVHash64(v int64) int64 {
	const offset = 0xCBF29CE484222325
	const prime = 1099511628211
	h := uint64(offset)
	u := uint64(v)
	for i := 0; i < 8; i++ {
		h ^= u & 0xff
		u >>= 8
		h *= prime
	}
	s := int64(h)
	if s < 0 {
		s = -s // Java's Math.abs; MinInt64 stays negative there too
		if s < 0 {
			s = 0
		}
	}
	return s
}

// YCSBKey is YCSB's key name for record n with insertorder=hashed:
// "user" followed by the decimal FNV hash of n.
func YCSBKey(n int64) string {
	return "user" + strconv.FormatInt(FNVHash64(n), 10)
}

// SeqKey is a key with a fixed-width decimal id after prefix, so keys sort
// in id order and share prefixes predictably.
func SeqKey(prefix string, n int64) string {
	return fmt.Sprintf("%s%010d", prefix, n)
}
