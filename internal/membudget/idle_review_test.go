package membudget

import (
	"context"
	"testing"
	"time"
)

// TestPatientWaitEvictsHoldersThatGoIdleLater: a reservation waiting in ReserveWait evicts a bigger client once it
// has been idle for idleEvict, also when it went idle after the wait began (it released a byte while the reader
// waited) and so was not idle yet when the wait first looked, idleEvict after it began. Before, that one look was
// the only one: nothing woke the wait again, and it waited out its patience and was refused although the holder
// had been idle for most of it.
func TestPatientWaitEvictsHoldersThatGoIdleLater(t *testing.T) {
	old := idleEvict
	idleEvict = 300 * time.Millisecond
	defer func() { idleEvict = old }()

	b := New(1000, nil)
	idle := b.Open("idle", nil)
	if err := idle.Reserve(800); err != nil {
		t.Fatal(err)
	}
	idle.evict = func() { go func() { time.Sleep(10 * time.Millisecond); idle.Close() }() } // its connection ends
	reader := b.Open("reader", nil)
	defer reader.Close()
	go func() {
		time.Sleep(idleEvict / 2)
		idle.Release(1) // still holding 799, then nothing more: idle from here on
	}()
	start := time.Now()
	if err := reader.ReserveWait(context.Background(), 500, 5*time.Second); err != nil {
		t.Fatalf("a wait that only a client idle since %v held up: %v after %v", idleEvict/2, err, time.Since(start))
	}
	// Idle for idleEvict from idleEvict/2 on: evictable from 1.5 idleEvict; looked at within a second more.
	if took := time.Since(start); took > 3*idleEvict/2+2*time.Second {
		t.Fatalf("served after %v", took)
	}
	if !idle.Evicted() || b.Evictions() != 1 {
		t.Fatalf("the idle client evicted: %v (%d evictions)", idle.Evicted(), b.Evictions())
	}
}
