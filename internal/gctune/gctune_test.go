package gctune

import (
	"runtime"
	"testing"
)

// TestBallastRaisesTheGoalNotTheHeapInUse: after Start the collector's goal counts the ballast (the next
// collection comes about Ballast bytes of allocation later), while the ballast's pages are never touched: the
// heap's resident bytes do not grow by it.
func TestBallastRaisesTheGoalNotTheHeapInUse(t *testing.T) {
	if Held() != 0 {
		t.Fatalf("Held before Start: %d", Held())
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	Start()
	Start() // once
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if Held() != Ballast {
		t.Fatalf("Held after Start: %d, want %d", Held(), Ballast)
	}
	if after.NextGC < before.NextGC+Ballast {
		t.Errorf("next collection at %d MiB of heap, was %d MiB: the ballast did not raise the goal", after.NextGC>>20, before.NextGC>>20)
	}
	// About: what an earlier test's goroutines still held may be freed between the two readings (a shuffled run
	// saw 63 MiB).
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew < Ballast-8<<20 || grew > Ballast+8<<20 {
		t.Errorf("heap in use grew by %d MiB, want about %d", grew>>20, Ballast>>20)
	}
}
