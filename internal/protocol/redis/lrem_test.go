package redis

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/pebblestore"
	"anykv/internal/kv"
)

// TestLRemMatchesRedis: LREM with every kind of count on lists with repeated elements, random, answers and
// leaves the list as redis-server does; it reads from its end only as far as its last match and moves the
// shorter side of the list, so both sides are exercised (heads that moved, lists pushed on both ends). Over
// Pebble, where a removal is the engine's writes and deletes of positions.
func TestLRemMatchesRedis(t *testing.T) {
	theirs := goredis.NewClient(&goredis.Options{Addr: startRedisServer(t)})
	t.Cleanup(func() { theirs.Close() })
	ps, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir(), Sync: pebblestore.SyncNever,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mine := startServerOver(t, ps, kv.Options{}, Options{}, 0).client(t, nil)
	r := rand.New(rand.NewPCG(16, 1))
	for round := range 300 {
		key := fmt.Sprint("l", round%7)
		for _, c := range []*goredis.Client{mine, theirs} {
			c.Del(ctx, key)
		}
		n := r.IntN(40)
		for i := range n {
			v := fmt.Sprint("e", r.IntN(5))
			push := "RPUSH"
			if i%3 == 0 {
				push = "LPUSH"
			}
			for _, c := range []*goredis.Client{mine, theirs} {
				c.Do(ctx, push, key, v)
			}
		}
		for range 4 {
			count, v := r.IntN(7)-3, fmt.Sprint("e", r.IntN(6))
			got, err1 := mine.LRem(ctx, key, int64(count), v).Result()
			want, err2 := theirs.LRem(ctx, key, int64(count), v).Result()
			gotList, _ := mine.LRange(ctx, key, 0, -1).Result()
			wantList, _ := theirs.LRange(ctx, key, 0, -1).Result()
			if got != want || fmt.Sprint(err1) != fmt.Sprint(err2) || !slices.Equal(gotList, wantList) {
				t.Fatalf("round %d: LREM %s %d %s = %d %v, list %q; redis-server: %d %v, list %q", round, key, count, v,
					got, err1, gotList, want, err2, wantList)
			}
			if l, _ := mine.LIndex(ctx, key, -1).Result(); len(gotList) > 0 && l != gotList[len(gotList)-1] {
				t.Fatalf("round %d: LINDEX -1 = %q after LREM, the list ends with %q", round, l, gotList[len(gotList)-1])
			}
		}
	}
}
