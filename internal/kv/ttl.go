package kv

import (
	"math"
	"time"
)

// Expiry is absolute unix milliseconds everywhere below the protocols. These two functions are the one place a
// protocol's relative or absolute time becomes that, so overflow is judged the same way by every protocol.

// ExpiresIn returns the absolute expiry of a time to live of n units (time.Second or time.Millisecond) from now
// (unix ms), or false if it does not fit in 64 bits. A negative n gives a time in the past.
func ExpiresIn(now, n int64, unit time.Duration) (int64, bool) {
	ms, ok := toMillis(n, unit)
	if !ok || (ms > 0 && ms > math.MaxInt64-now) || (ms < 0 && now < 0 && ms < math.MinInt64-now) {
		return 0, false
	}
	return now + ms, true
}

// ExpiresAt converts an absolute unix time t in units (time.Second or time.Millisecond) to unix ms, or false if it
// does not fit in 64 bits.
func ExpiresAt(t int64, unit time.Duration) (int64, bool) { return toMillis(t, unit) }

func toMillis(n int64, unit time.Duration) (int64, bool) {
	per := int64(unit / time.Millisecond)
	if per <= 1 {
		return n, true
	}
	if n > math.MaxInt64/per || n < math.MinInt64/per {
		return 0, false
	}
	return n * per, true
}
