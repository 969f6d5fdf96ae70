package collections

import (
	"math"
	"testing"
)

// TestSortDouble: SORT reads numbers as glibc's strtod does over a C string, refusing what it does not read
// whole, NaN, and what it answers ERANGE for (redis-server's replies to these are in TestSortMatchesRedis).
func TestSortDouble(t *testing.T) {
	for _, c := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"", 0, true}, {"\x00junk", 0, true}, {"5\x00x", 5, true}, {" \t\n7", 7, true}, {"0x10", 16, true},
		{"0X1P3", 8, true}, {"-.5", -0.5, true}, {"+1", 1, true}, {"1E1", 10, true}, {"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true}, {"0x1p-1074", 0x1p-1074, true}, {"-0x1.8p-1070", -0x1.8p-1070, true},
		{"1e-320", 0, false}, {"4.9e-324", 0, false}, {"2.2250738585072011e-308", 0, false},
		{"2.2250738585072014e-308", 0x1p-1022, true}, {"1e-400", 0, false}, {"1e400", 0, false}, {"0e-400", 0, true},
		{" ", 0, false}, {"1 ", 0, false}, {"nan", 0, false}, {"0x", 0, false}, {"1e", 0, false}, {"+-1", 0, false},
		{"1_000", 0, false}, {"0x1_0", 0, false}, {"infinit", 0, false}, {"12abc", 0, false},
	} {
		f, ok := sortDouble([]byte(c.in))
		if ok != c.ok || ok && f != c.f {
			t.Errorf("sortDouble(%q) = %v, %v; want %v, %v", c.in, f, ok, c.f, c.ok)
		}
	}
}

// TestSortLimits: LIMIT's offset and count clamp to the elements as Redis's sortCommandGeneric clamps them.
func TestSortLimits(t *testing.T) {
	for _, c := range []struct{ offset, count, n, start, end int64 }{
		{0, -1, 5, 0, 4}, {1, 2, 5, 1, 2}, {-3, 2, 5, 0, 1}, {2, 100, 5, 2, 4}, {2, 0, 5, 2, 1}, {5, 1, 5, 4, 3},
		{9, 1, 5, 4, 3}, {0, -7, 5, 0, 4}, {0, 1, 0, -1, -2}, {math.MaxInt64, math.MaxInt64, 5, 4, 3},
		{math.MinInt64, 2, 5, 0, 1},
	} {
		if start, end := sortLimits(c.offset, c.count, c.n); start != c.start || end != c.end {
			t.Errorf("sortLimits(%d, %d, %d) = %d, %d; want %d, %d", c.offset, c.count, c.n, start, end, c.start, c.end)
		}
	}
}
