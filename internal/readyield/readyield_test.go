package readyield

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// TestYieldsOnlyWhileTheNetpollerWakesReaders: fast reads (data was there) do not count as wake-ups; a read that
// parked does, and connections yield for maxStarve after it, then stop so that Go polls the network again.
func TestYieldsOnlyWhileTheNetpollerWakesReaders(t *testing.T) {
	oneCore(t)
	ms := int64(time.Millisecond)
	if Yield(10 * ms) {
		t.Fatal("yields with no wake-up within maxStarve")
	}
	Read(10*ms, 10*ms+int64(5*time.Microsecond), 100) // found its data: no wake-up
	if Yield(10*ms + int64(6*time.Microsecond)) {
		t.Fatal("a read that did not park counted as a wake-up")
	}
	end := 10*ms + int64(parkedRead)
	Read(10*ms, end, 100) // parked, then woken
	if !Yield(end + 1) {
		t.Fatal("no yield right after a wake-up")
	}
	if !Yield(end + int64(maxStarve) - 1) {
		t.Fatal("no yield within maxStarve of a wake-up")
	}
	if Yield(end + int64(maxStarve)) {
		t.Fatal("yields past maxStarve: parked connections would starve")
	}
	Read(0, end-1, 100) // an older wake-up reported late does not move the latest back
	if !Yield(end + 1) {
		t.Fatal("a late report moved the latest wake-up back")
	}
	Read(end, end+int64(parkedRead)+int64(grain), 100) // a later one does
	if !Yield(end + int64(maxStarve) + 1) {
		t.Fatal("a later wake-up was not recorded")
	}
}

// TestAtIsNow: At of a time read from the clock is Now at that moment.
func TestAtIsNow(t *testing.T) {
	before := Now()
	at := At(time.Now())
	if after := Now(); at < before || at > after {
		t.Fatalf("At(time.Now()) = %d, not between Now's %d and %d", at, before, after)
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

// oneCore runs the test with GOMAXPROCS=1 and no wake-up recorded.
func oneCore(t *testing.T) {
	t.Helper()
	woken.Store(0)
	prev := runtime.GOMAXPROCS(1)
	recount()
	t.Cleanup(func() { runtime.GOMAXPROCS(prev); woken.Store(0); recount() })
}

// recount makes the next Read ask the runtime for the core count.
func recount() { coresAt.Store(math.MinInt64 / 2) }

// TestBigReadsAndManyCoresAreNoWakeUps: a read of a big request takes as long as one that parked, but is no sign
// that the netpoller ran; and with more than one core connections do not yield at all.
func TestBigReadsAndManyCoresAreNoWakeUps(t *testing.T) {
	oneCore(t)
	ms := int64(time.Millisecond)
	Read(10*ms, 12*ms, 2<<20)
	if Yield(12*ms + 1) {
		t.Fatal("a 2 MiB read counted as a wake-up")
	}
	runtime.GOMAXPROCS(2)
	recount()
	Read(10*ms, 12*ms, 100)
	if Yield(12*ms + 1) {
		t.Fatal("yields with GOMAXPROCS=2")
	}
}
