package membudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSpentWaitEvictsNoOne: ReserveWait whose patience is spent (a caller's deadline passed: d of 0 or less, as
// time.Until gives it) refuses what does not fit; it does not turn into Reserve and evict another client.
func TestSpentWaitEvictsNoOne(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		b := New(1000, nil)
		evicted := false
		big := b.Open("big", func() { evicted = true })
		if err := big.Reserve(700); err != nil {
			t.Fatal(err)
		}
		reader := b.Open("reader", nil)
		if err := reader.Reserve(100); err != nil {
			t.Fatal(err)
		}
		if err := reader.ReserveWait(context.Background(), 500, d); !errors.Is(err, ErrOverBudget) {
			t.Fatalf("ReserveWait(500, %v) past the budget: %v, want ErrOverBudget", d, err)
		}
		if evicted || big.Evicted() || b.Evictions() != 0 {
			t.Fatalf("ReserveWait(500, %v) evicted the client holding 700", d)
		}
		big.Close()
		reader.Close()
	}
}
