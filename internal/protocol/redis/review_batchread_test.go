package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// bigKeysUnderATightBound sets six keys of 512 KiB on a new server and lowers engine.MaxBatchRead to 1 MiB for
// the test.
func bigKeysUnderATightBound(t *testing.T) (*goredis.Client, []string) {
	old := engine.MaxBatchRead
	t.Cleanup(func() { engine.MaxBatchRead = old })
	engine.MaxBatchRead = 1 << 20
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	big := strings.Repeat("v", 512<<10)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		if err := c.Set(ctx, k, big, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return c, keys
}

// A DEL of several big strings is a write: what it reads of the old items does not count against
// engine.MaxBatchRead, so one DEL (one request: no fallback) is answered.
func TestDelOfBigKeysIsNotRefused(t *testing.T) {
	c, keys := bigKeysUnderATightBound(t)
	if n, err := c.Del(ctx, keys...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("DEL of 6 keys of 512 KiB under a 1 MiB read bound: %d, %v", n, err)
	}
}

// The picks an earlier batch held do not count against a later transaction whose first command is not a
// random pick.
func TestPicksOfAnEarlierBatchDoNotRefuseATransaction(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	rc.send("sadd s a\r\nset x 1\r\n")
	rc.reply()
	rc.reply()
	rc.send("srandmember s -1048566\r\n")
	rc.reply()
	rc.send("multi\r\nget x\r\nsrandmember s -100\r\nexec\r\n")
	rc.reply()
	rc.reply()
	rc.reply()
	if r := rc.reply(); strings.Contains(r, "random picks") {
		t.Fatalf("MULTI; GET x; SRANDMEMBER s -100; EXEC after an earlier batch's million picks: %.120q", r)
	}
}

// EXISTS reads without values (NoValue), so one EXISTS of several big keys is answered, not refused as too
// big (one request: no fallback).
func TestExistsOfBigKeysIsNotRefused(t *testing.T) {
	c, keys := bigKeysUnderATightBound(t)
	if n, err := c.Exists(ctx, keys...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("EXISTS of 6 keys of 512 KiB under a 1 MiB read bound: %d, %v", n, err)
	}
}
