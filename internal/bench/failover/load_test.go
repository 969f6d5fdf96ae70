package failover

import (
	"context"
	"testing"
	"time"
)

// TestSleepUntilAfterTheLoad: once the load's context has ended, a time already passed is not reached (the
// select between an expired timer and a closed context used to pick either at random, so a late kill could
// happen after the load).
func TestSleepUntilAfterTheLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !sleepUntil(ctx, time.Now().Add(-time.Second)) {
		t.Fatal("a passed time with the load running: not reached")
	}
	cancel()
	for range 100 {
		if sleepUntil(ctx, time.Now().Add(-time.Second)) {
			t.Fatal("a passed time after the load ended: reached")
		}
	}
}
