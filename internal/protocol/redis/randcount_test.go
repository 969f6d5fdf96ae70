package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
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
