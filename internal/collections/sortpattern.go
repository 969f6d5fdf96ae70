package collections

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"

	"anykv/internal/engine"
)

// What SORT reads besides the key it sorts: the values its BY and GET patterns name, and the numbers it sorts by.

// lookupPattern finds what pattern names for the element subst, as Redis's lookupKeyByPattern: "#" is the
// element itself; otherwise the first '*' is replaced by the element to make a key, whose string value it is,
// or, when a "->" follows the '*' with something after it, the hash field of that name at the key made of what
// comes before the "->". A pattern without '*', a missing key or field, or a key of another kind finds nothing
// (ok false). Like Redis, it looks for "#", '*' and "->" in the pattern as a C string (up to a NUL byte) but
// copies the parts whole.
func lookupPattern(tx *engine.Tx, pattern, subst []byte) (val []byte, ok bool, err error) {
	p := cString(pattern)
	if len(p) == 1 && p[0] == '#' {
		return subst, true, nil
	}
	star := bytes.IndexByte(p, '*')
	if star < 0 {
		return nil, false, nil
	}
	keyEnd, field := len(pattern), []byte(nil)
	if f := bytes.Index(p[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(p) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd-1+len(subst))
	key = append(append(append(key, pattern[:star]...), subst...), pattern[star+1:keyEnd]...)
	it, found, err := tx.Get(tx.Table(), key)
	switch {
	case err != nil || !found:
		return nil, false, err
	case field == nil && it.Kind == engine.KindString:
		return it.Value, true, nil
	case field == nil || it.Kind != engine.KindHash:
		return nil, false, nil
	}
	meta, err := engine.DecodeCollMeta(it.Value)
	if err != nil {
		return nil, false, err
	}
	fv, found, err := tx.Get(engine.MemberTable(tx.Table()), engine.MemberKey(key, meta.Gen, field))
	if err != nil || !found {
		return nil, false, err
	}
	return fv.Value, true, nil
}

// sortDouble reads a number to sort by as Redis's SORT does: C's strtod over the bytes up to the first NUL,
// which must read them all (leading white space is skipped; an empty string is 0); NaN, and what strtod answers
// ERANGE for (an overflow, an underflow to zero, an inexact subnormal), are not numbers.
func sortDouble(b []byte) (float64, bool) {
	b = cString(b)
	if len(b) == 0 {
		return 0, true // strtod converts nothing and stops at the NUL
	}
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	if s == "" || strings.Contains(s, "_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(hexExponent(s), 64)
	switch {
	case err != nil || math.IsNaN(f): // strconv.ErrRange: an overflow
		return 0, false
	case f == 0:
		return 0, zeroMantissa(s)
	case math.Abs(f) < 0x1p-1022:
		return f, exactly(s, f)
	}
	return f, true
}

// exactly reports whether the number s is exactly f (glibc's strtod answers ERANGE for an inexact subnormal).
// Only a text of up to 2,000 bytes is checked; a longer one counts as inexact.
func exactly(s string, f float64) bool {
	if len(s) > 2000 {
		return false
	}
	r, ok := new(big.Rat).SetString(hexExponent(s))
	return ok && r.Cmp(new(big.Rat).SetFloat64(f)) == 0
}
