package redisstore_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func TestRedis(t *testing.T) {
	server := "redis://" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s/0?prefix=t%d:", server, prefixes.Add(1)) }
	remotetest.Suite(t, fresh, redisstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}

// TestStalledServerFailsScansInTime: a scan (KEYS, SCAN, range queries), the table list and the expiry sweep of a
// stalled Redis fail once the engine's Timeout passes, per round trip (they waited for go-redis's own 5 s read
// timeout, which ignored the engine's).
func TestStalledServerFailsScansInTime(t *testing.T) {
	server := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	p := remotetest.StartStall(t, server)
	s := remotetest.Open(t, redisstore.Open, fmt.Sprintf("redis://%s/0?prefix=t%d:", p.Addr, prefixes.Add(1)))
	defer s.Close()
	s.Timeout = 300 * time.Millisecond
	remotetest.StalledScans(t, s, s.Timeout, p)
}
