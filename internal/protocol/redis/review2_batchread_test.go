package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// resolver.apply counts every OpCall as a read (rs.reading), so writing functions count what they read before
// changing the key: SETBIT reads the whole string, and a transaction of two SETBITs of a string bigger than
// engine.MaxBatchRead is refused (EXEC has no one-at-a-time fallback), though no reply carries any value.
func TestTransactionOfWritingCallsIsNotRefused(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 256 << 10
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	if err := c.Set(ctx, "big", strings.Repeat("v", 512<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.SetBit(ctx, "big", 0, 1)
		p.SetBit(ctx, "big", 1, 1)
		return nil
	})
	if err != nil {
		t.Fatalf("MULTI; SETBIT big 0 1; SETBIT big 1 1; EXEC on a 512 KiB string under a 256 KiB read bound: %v", err)
	}
}
