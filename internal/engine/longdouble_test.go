package engine

import (
	"strings"
	"testing"
)

// Texts redis-server 7.0.15 refuses (string2ld: strtold range error to zero, no binary exponent without 0x,
// 5120 characters or more), which ParseLongDouble took.
func TestParseLongDoubleRefusesAsStrtold(t *testing.T) {
	for _, s := range []string{
		"1e-700000000",                   // below big.Float's exponent range: underflows to 0 silently (BLPOP waits forever)
		"0x1p-16446",                     // half the smallest subnormal: ties to even, strtold gives 0 and ERANGE
		"1p5",                            // Go reads a decimal mantissa with a binary exponent; strtold stops at 'p'
		"0." + strings.Repeat("1", 5200), // Redis's MAX_LONG_DOUBLE_CHARS; big.ParseFloat is quadratic in the digits
	} {
		if _, ok := ParseLongDouble([]byte(s)); ok {
			t.Errorf("ParseLongDouble(%.20q...) accepted; redis-server refuses it", s)
		}
	}
}
