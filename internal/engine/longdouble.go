package engine

// Float text as Redis reads it for INCRBYFLOAT and HINCRBYFLOAT (and the blocking commands' timeouts): C's
// strtold in long double, and ld2string's printing.

import (
	"math/big"
	"strings"
)

// Redis computes INCRBYFLOAT in C's long double: a 64-bit mantissa and a 15-bit exponent on x86-64.
const (
	longDoublePrec   = 64
	longDoubleMaxExp = 16384
	// longDoubleMinExp is the binary exponent (big.Float's MantExp) of numbers from half the smallest subnormal
	// long double (2^-16446) up: text of a smaller nonzero number rounds to zero, which strtold reports as a range
	// error.
	longDoubleMinExp = -16445
	// maxLongDoubleText is Redis's MAX_LONG_DOUBLE_CHARS: string2ld refuses longer text (and big.ParseFloat's time
	// grows with the square of the digits: a million took 2.4 s).
	maxLongDoubleText = 5 * 1024
)

// ParseLongDouble parses decimal or hexadecimal float text as strtold does in Redis's string2ld, with 64 bits of
// mantissa: it refuses text of 5 KiB or more, spaces, underscores, NaN, and a finite number out of range or so
// small it reads as zero; "inf" and "infinity" (any case, signed) are infinities.
func ParseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleText {
		return nil, false
	}
	s := string(b)
	if strings.TrimSpace(s) != s || strings.IndexByte(s, '_') >= 0 { // Go's syntax allows 0x_1 and 1_0
		return nil, false
	}
	if inf, neg := IsInfText(s); inf {
		return new(big.Float).SetInf(neg), true
	}
	digits := strings.TrimLeft(s, "+-")
	hex := len(digits) > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')
	switch {
	case len(digits) > 1 && digits[0] == '0' && strings.IndexByte("bBoO", digits[1]) >= 0:
		return nil, false // Go's 0b and 0o prefixes; strtold reads only 0x
	case !hex && strings.ContainsAny(digits, "pP"):
		return nil, false // Go takes a binary exponent after decimal digits (1p5); strtold stops at the p
	}
	f, _, err := big.ParseFloat(s, 0, longDoublePrec, big.ToNearestEven)
	if err != nil || f.IsInf() || f.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	if f.Sign() == 0 {
		return f, f.Acc() == big.Exact // a nonzero number below big.Float's range reads as an inexact zero
	}
	mant := new(big.Float)
	switch exp := f.MantExp(mant); {
	case exp < longDoubleMinExp:
		return nil, false
	case exp == longDoubleMinExp && mant.Abs(mant).Cmp(big.NewFloat(0.5)) == 0:
		return nil, false // exactly half the smallest subnormal: strtold rounds the tie to even, zero
	}
	return f, true
}

// IsFloatText reports whether b is an increment OpIncrFloat and OpMemberIncrFloat accept (strtold's syntax), so
// that a protocol can refuse a bad one before it looks at the key, in Redis's order.
func IsFloatText(b []byte) bool {
	_, ok := ParseLongDouble(b)
	return ok
}

// IsInfText reports whether s spells an infinity as strtold reads one ("inf", "-Infinity", ...), and its sign.
func IsInfText(s string) (inf, neg bool) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	s = strings.ToLower(s)
	return s == "inf" || s == "infinity", neg
}

// formatLongDouble prints as Redis's ld2string in human mode: fixed point with 17 decimals, trailing zeros and a
// trailing dot removed.
func formatLongDouble(f *big.Float) []byte {
	s := f.Text('f', 17)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return []byte(s)
}
