package memcache

import (
	"fmt"
	"testing"
)

// accesses answers a version's first fetch as not hit before, later ones with the seconds since the last, a new
// version as a new item, and stays within its bound however many keys are fetched.
func TestAccessesRememberFetchesWithinABound(t *testing.T) {
	a := newAccesses()
	for _, c := range []struct {
		key     string
		version uint64
		now     int64
		before  bool
		ago     int64
	}{
		{"k", 1, 100, false, 0}, {"k", 1, 103, true, 3}, {"k", 1, 103, true, 0}, {"k", 2, 110, false, 0},
		{"k", 2, 111, true, 1}, {"other", 2, 111, false, 0}, {"k", 2, 109, true, 0}, // a clock step back: 0, not -2
	} {
		if before, ago := a.fetch([]byte(c.key), c.version, c.version, c.now); before != c.before || ago != c.ago {
			t.Fatalf("fetch %s v%d at %d: %v %d, want %v %d", c.key, c.version, c.now, before, ago, c.before, c.ago)
		}
	}
	for i := range 3 * accessCap {
		a.fetch(fmt.Appendf(nil, "key%d", i), 1, 1, 1)
	}
	n := 0
	for i := range a.shards {
		n += len(a.shards[i].m)
	}
	if n > accessCap {
		t.Fatalf("%d entries after %d keys, bound %d", n, 3*accessCap, accessCap)
	}
}
