package readyield

import (
	"testing"
	"time"
)

// TestYieldsOnlyWhileTheNetpollerWakesReaders: fast reads (data was there) do not count as wake-ups; a read that
// parked does, and connections yield for maxStarve after it, then stop so that Go polls the network again.
func TestYieldsOnlyWhileTheNetpollerWakesReaders(t *testing.T) {
	woken.Store(0)
	t.Cleanup(func() { woken.Store(0) })
	ms := int64(time.Millisecond)
	if Yield(10 * ms) {
		t.Fatal("yields with no wake-up within maxStarve")
	}
	Read(10*ms, 10*ms+int64(5*time.Microsecond)) // found its data: no wake-up
	if Yield(10*ms + int64(6*time.Microsecond)) {
		t.Fatal("a read that did not park counted as a wake-up")
	}
	end := 10*ms + int64(parkedRead)
	Read(10*ms, end) // parked, then woken
	if !Yield(end + 1) {
		t.Fatal("no yield right after a wake-up")
	}
	if !Yield(end + int64(maxStarve) - 1) {
		t.Fatal("no yield within maxStarve of a wake-up")
	}
	if Yield(end + int64(maxStarve)) {
		t.Fatal("yields past maxStarve: parked connections would starve")
	}
	Read(0, end-1) // an older wake-up reported late does not move the latest back
	if !Yield(end + 1) {
		t.Fatal("a late report moved the latest wake-up back")
	}
	Read(end, end+int64(parkedRead)+int64(grain)) // a later one does
	if !Yield(end + int64(maxStarve) + 1) {
		t.Fatal("a later wake-up was not recorded")
	}
}

// TestNowIsMonotonic: Now never goes back.
func TestNowIsMonotonic(t *testing.T) {
	prev := Now()
	for range 1000 {
		n := Now()
		if n < prev {
			t.Fatalf("Now went back: %d after %d", n, prev)
		}
		prev = n
	}
}
