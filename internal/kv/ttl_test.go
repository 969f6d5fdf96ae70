package kv

import (
	"math"
	"testing"
	"time"
)

func TestExpiresInAndAt(t *testing.T) {
	const now = 1_700_000_000_000
	for _, c := range []struct {
		name      string
		got       func() (int64, bool)
		want      int64
		wantValid bool
	}{
		{"10 s", func() (int64, bool) { return ExpiresIn(now, 10, time.Second) }, now + 10_000, true},
		{"10 ms", func() (int64, bool) { return ExpiresIn(now, 10, time.Millisecond) }, now + 10, true},
		{"negative", func() (int64, bool) { return ExpiresIn(now, -5, time.Second) }, now - 5000, true},
		{"seconds overflow", func() (int64, bool) { return ExpiresIn(now, math.MaxInt64/1000+1, time.Second) }, 0, false},
		{"sum overflow", func() (int64, bool) { return ExpiresIn(now, math.MaxInt64-now+1, time.Millisecond) }, 0, false},
		{"largest sum", func() (int64, bool) { return ExpiresIn(now, math.MaxInt64-now, time.Millisecond) }, math.MaxInt64, true},
		{"most negative", func() (int64, bool) { return ExpiresIn(now, math.MinInt64, time.Millisecond) }, now + math.MinInt64, true},
		{"at seconds", func() (int64, bool) { return ExpiresAt(1_700_000_000, time.Second) }, 1_700_000_000_000, true},
		{"at ms", func() (int64, bool) { return ExpiresAt(5, time.Millisecond) }, 5, true},
		{"at overflow", func() (int64, bool) { return ExpiresAt(math.MaxInt64/1000+1, time.Second) }, 0, false},
		{"at negative overflow", func() (int64, bool) { return ExpiresAt(math.MinInt64/1000-1, time.Second) }, 0, false},
	} {
		got, ok := c.got()
		if ok != c.wantValid || (ok && got != c.want) {
			t.Errorf("%s: got %d, %v; want %d, %v", c.name, got, ok, c.want, c.wantValid)
		}
	}
}
