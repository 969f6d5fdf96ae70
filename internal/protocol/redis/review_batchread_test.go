package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// a DEL of several big strings reads nothing a reply holds, but each OpDelete's read of the old item
// counts against engine.MaxBatchRead, so one DEL (one request: no fallback) is refused.
func TestDelOfBigKeysIsNotRefused(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
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
	if n, err := c.Del(ctx, keys...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("DEL of 6 keys of 512 KiB under a 1 MiB read bound: %d, %v", n, err)
	}
}

// s.picks is reset only when roomForPicks meets an empty batch, so a count left from an earlier batch
// counts against a later transaction whose first command is not a random pick: 100 picks are refused.
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

// EXISTS (and TYPE, TTL, STRLEN... whatever reads through OpGet) holds no value in its reply, but
// readDirect counts each value it viewed against engine.MaxBatchRead: one EXISTS of several big keys answers
// the too-big error (no fallback: it is one request).
func TestExistsOfBigKeysIsNotRefused(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
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
	if n, err := c.Exists(ctx, keys...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("EXISTS of 6 keys of 512 KiB under a 1 MiB read bound: %d, %v", n, err)
	}
}
