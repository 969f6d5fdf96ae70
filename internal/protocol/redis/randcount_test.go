package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/membudget"
)

// TestRandomPicksAreBounded: a negative count past -maxRandPicks is refused with Redis's out-of-range error
// (SRANDMEMBER s -9223372036854775807 built a pick per count and ran the process out of memory); up to the bound
// every pick is answered.
func TestRandomPicksAreBounded(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.SAdd(ctx, "s", "a", "b", "c")
	c.HSet(ctx, "h", "f", "v")
	c.ZAdd(ctx, "z", goredis.Z{Score: 1, Member: "m"})
	for _, cmd := range [][]any{{"srandmember", "s"}, {"hrandfield", "h"}, {"zrandmember", "z"}} {
		err := c.Do(ctx, append(cmd, "-9223372036854775807")...).Err()
		if err == nil || !strings.Contains(err.Error(), "value is out of range") {
			t.Errorf("%v -9223372036854775807: %v, want out of range", cmd, err)
		}
		if err := c.Do(ctx, append(cmd, -maxRandPicks-1)...).Err(); err == nil {
			t.Errorf("%v %d: accepted", cmd, -maxRandPicks-1)
		}
	}
	got, err := c.SRandMemberN(ctx, "s", -maxRandPicks).Result()
	if err != nil || len(got) != maxRandPicks {
		t.Fatalf("SRANDMEMBER s %d: %d picks, %v", -maxRandPicks, len(got), err)
	}
}

// TestLCSTableIsBounded: LCS's table (4 bytes per pair of positions) may not pass proto-max-bulk-len (as Redis
// 7.2), and several clients' tables together count against maxmemory-clients: a hard-coded 1 GiB per call, with
// calls running at once, let 20 clients run the machine out of memory (the audit's case).
func TestLCSTableIsBounded(t *testing.T) {
	a, b := strings.Repeat("ab", 500), strings.Repeat("ba", 500) // a table of about 4 MB
	ts := startServer(t, Options{Budget: membudget.New(2<<20, nil)}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "a", a, 0)
	c.Set(ctx, "b", b, 0)
	if err := c.Do(ctx, "lcs", "a", "b", "len").Err(); err == nil || !strings.Contains(err.Error(), "maxmemory-clients") {
		t.Fatalf("LCS of a 4 MB table under a 2 MiB budget: %v", err)
	}
	c.Set(ctx, "a", a[:100], 0)
	if n, err := c.Do(ctx, "lcs", "a", "b", "len").Int(); err != nil || n != 100 {
		t.Fatalf("LCS LEN of a small table = %d, %v", n, err)
	}
	c.ConfigSet(ctx, "proto-max-bulk-len", "1mb")
	c.Set(ctx, "a", a, 0)
	if err := c.Do(ctx, "lcs", "a", "b").Err(); err == nil || !strings.Contains(err.Error(), "proto-max-bulk-len") {
		t.Fatalf("LCS of a 4 MB table with proto-max-bulk-len 1mb: %v", err)
	}
}
