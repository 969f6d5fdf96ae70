package redis

import (
	"context"
	"strings"
	"testing"
)

// TestStreamEntryBoundedByTheValueLimit: an XADD whose fields and values together pass --max-value-size is refused
// with the string limit's error and adds nothing, as a string or a hash value over it is; until 2026-12-02 an
// entry of any size up to the query buffer was stored (two 40 MB fields under the 64 MiB default).
func TestStreamEntryBoundedByTheValueLimit(t *testing.T) {
	ts := startServer(t, Options{}, 0) // the test server's value limit: 1 MiB
	c := ts.client(t, nil)
	ctx := context.Background()
	half := strings.Repeat("v", 600<<10)
	for _, vals := range [][]any{
		{"f", strings.Repeat("v", 1<<20+1)}, // one value over the limit
		{"f", half, "g", half},              // each under it, together over it
	} {
		err := c.Do(ctx, append([]any{"XADD", "s", "*"}, vals...)...).Err()
		if err == nil || err.Error() != "ERR string exceeds maximum allowed size (proto-max-bulk-len)" {
			t.Fatalf("XADD of %d fields over the limit: %v", len(vals)/2, err)
		}
		if n := c.XLen(ctx, "s").Val(); n != 0 {
			t.Fatalf("the refused XADD added %d entries", n)
		}
	}
	if err := c.Do(ctx, "XADD", "s", "*", "f", half).Err(); err != nil {
		t.Fatalf("an entry within the limit: %v", err)
	}
	if n := c.XLen(ctx, "s").Val(); n != 1 {
		t.Fatalf("XLEN = %d, want 1", n)
	}
}
