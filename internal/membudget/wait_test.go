package membudget

import (
	"errors"
	"testing"
	"time"
)

// TestEvictionEndsAWait: a client waiting in ReserveWait (for room its read needs) that another client's
// reservation evicts hears of it at once, and lets go, so the evicting reservation gets its room; the wait does
// not last until its patience ends, nor the evictor's until evictWait refuses it (its client then closed
// although the victim held more than enough).
func TestEvictionEndsAWait(t *testing.T) {
	b := New(1000, nil)
	others := b.Open("others", nil) // replies of other clients being written
	defer others.Close()
	if err := others.Reserve(200); err != nil {
		t.Fatal(err)
	}
	waiter := b.Open("waiter", func() {})       // blocked in ReserveWait, not on its connection
	if err := waiter.Reserve(600); err != nil { // its request buffer
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		start := time.Now()
		err := waiter.ReserveWait(300, 10*time.Second)
		if err == nil {
			waiter.Release(300)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the evicted waiter heard of it after %v", took)
		}
		waiter.Close() // the connection closes
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond) // it waits
	small := b.Open("small", nil)
	defer small.Close()
	start := time.Now()
	if err := small.Reserve(300); err != nil {
		t.Fatalf("a reservation that evicted the waiter (holding 600) was refused after %v: %v", time.Since(start), err)
	}
	if err := <-waited; !errors.Is(err, ErrEvicted) {
		t.Fatalf("the waiter's ReserveWait: %v, want ErrEvicted", err)
	}
}
