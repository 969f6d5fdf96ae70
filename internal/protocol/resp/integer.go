package resp

import "math"

// parseInt parses a length the way Redis's string2ll does: an optional '-'
// then digits with no leading zeros ("0" alone is fine), no '+', no spaces,
// at most 20 bytes, and within int64. Anything else is not a number.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true // wraps to MinInt64 for v == 1<<63, which is right
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}
