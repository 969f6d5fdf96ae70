package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"anykv/internal/membudget"

	goredis "github.com/redis/go-redis/v9"
)

// A SCAN page that ends at the empty key hands out a cursor, not 0: the empty key must not read as "the end"
// (it did, and the keys after it were never returned).
func TestScanResumesAfterTheEmptyKey(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, k := range []string{"", "\x01", "a"} {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := uint64(0)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("SCAN never ends")
		}
		keys, next, err := c.Scan(ctx, cursor, "", 1).Result()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys...)
		if next == 0 {
			break
		}
		cursor = next
	}
	if fmt.Sprintf("%q", got) != `["" "\x01" "a"]` {
		t.Fatalf("SCAN COUNT 1 returned %q", got)
	}
}

// TestQuadraticPatternsStop: a long literal after a '*' matched against a long string of near misses takes
// len(pattern)*len(string) steps in a backtracking matcher (10 s of CPU for one SSCAN, an audit). Matching stops at
// glob.Limit: SSCAN and KEYS answer an error, a PUBLISH counts the pattern as not matching and returns at once,
// and a pattern longer than four times max-key-size is refused.
func TestQuadraticPatternsStop(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{ReadTimeout: 10 * time.Second, MaxRetries: -1})
	pat := "*" + strings.Repeat("a", 4000) + "b" // within the 4 KiB (4 x max-key-size) bound
	if err := c.SAdd(ctx, "s", strings.Repeat("a", 900<<10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.SScan(ctx, "s", 0, pat, 10).Err(); err == nil || err.Error() != errPatternTooComplex {
		t.Fatalf("SSCAN MATCH of a quadratic pattern: %v", err)
	}
	if err := c.Set(ctx, strings.Repeat("a", 1024), "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Keys(ctx, "*"+strings.Repeat("a", 900)+"b").Err(); err == nil || err.Error() != errPatternTooComplex {
		t.Fatalf("KEYS of a quadratic pattern: %v", err)
	}
	if err := c.Keys(ctx, strings.Repeat("a", 4097)).Err(); err == nil || err.Error() != errPatternTooLong {
		t.Fatalf("KEYS of a pattern over the bound: %v", err)
	}
	if m, _, err := c.SScan(ctx, "s", 0, "*a", 10).Result(); err != nil || len(m) != 1 {
		t.Fatalf("SSCAN MATCH *a: %v, %v", m, err)
	}

	sub := ts.client(t, nil).PSubscribe(ctx, pat)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// 4 MiB against 4,000 bytes: 16 G steps unbounded (minutes), 32 M at the bound.
	if n, err := c.Publish(ctx, strings.Repeat("a", 4<<20), "x").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH to a channel the pattern cannot finish matching: %d, %v", n, err)
	}
	bad := ts.client(t, nil).PSubscribe(ctx, strings.Repeat("a", 4097))
	defer bad.Close()
	if _, err := bad.Receive(ctx); err == nil || err.Error() != errPatternTooLong {
		t.Fatalf("PSUBSCRIBE of a pattern over the bound: %v", err)
	}
}

// TestScanCursorsOfOthersSurvive: a connection that makes cursors by the tens of thousands (70,000 pipelined
// SCAN 0 COUNT 1: an audit) evicts its own oldest, not the cursor of another client paused in its scan; the
// table stays bounded.
func TestScanCursorsOfOthersSurvive(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	a := ts.client(t, &goredis.Options{PoolSize: 1})
	for i := 0; i < 20; i++ {
		if err := a.Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, paused, err := a.Scan(ctx, 0, "", 5).Result()
	if err != nil || paused == 0 {
		t.Fatalf("SCAN: %d %v", paused, err)
	}
	b := ts.client(t, &goredis.Options{PoolSize: 1})
	pipe := b.Pipeline()
	for i := 0; i < maxCursors+4000; i++ {
		pipe.Scan(ctx, 0, "", 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _, err := a.Scan(ctx, paused, "", 5).Result(); err != nil || len(keys) == 0 {
		t.Fatalf("the paused SCAN after another client's %d cursors: %v %v", maxCursors+4000, keys, err)
	}
	ts.h.cursors.mu.Lock()
	n := len(ts.h.cursors.m)
	ts.h.cursors.mu.Unlock()
	if n > maxCursors {
		t.Fatalf("%d cursors held, bound %d", n, maxCursors)
	}
}

// TestEmptyKeyMatchesAsInRedis: Redis's stringmatchlen never matches the empty string but with the empty
// pattern; KEYS and SCAN answer "*" as every key without matching, the empty one included. So KEYS ** and a
// PSUBSCRIBE * (against PUBLISH "") do not match it (a review: they did).
func TestEmptyKeyMatchesAsInRedis(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, k := range []string{"", "a"} {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for pat, want := range map[string]int{"*": 2, "**": 1, "": 1} {
		if keys, err := c.Keys(ctx, pat).Result(); err != nil || len(keys) != want {
			t.Errorf("KEYS %q: %q, %v; want %d keys", pat, keys, err, want)
		}
		if keys, _, err := c.Scan(ctx, 0, pat, 100).Result(); pat != "" && (err != nil || len(keys) != want) {
			t.Errorf("SCAN MATCH %q: %q, %v; want %d keys", pat, keys, err, want)
		}
	}
	sub := ts.client(t, nil).PSubscribe(ctx, "*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Publish(ctx, "", "x").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH to the empty channel reached %d (%v); Redis's * does not match it", n, err)
	}
	if n, err := c.Publish(ctx, "a", "x").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH a reached %d (%v)", n, err)
	}
}

// TestCompiledPatternsCountAgainstTheBudget: a PSUBSCRIBE pattern holds its compiled form (8 bytes a token, 32 a
// class: a 4 KiB pattern of one-byte classes about 55 KB), and that is what it counts against the client memory
// budget, where counting its text let the budget's 1 GiB hold about 15 GiB of compiled patterns (a review).
func TestCompiledPatternsCountAgainstTheBudget(t *testing.T) {
	ts := startServer(t, Options{Budget: membudget.New(96<<10, nil)}, 0)
	sub := ts.client(t, nil).PSubscribe(ctx)
	defer sub.Close()
	pat := strings.Repeat("[a]", 1365)
	if err := sub.PSubscribe(ctx, pat+"1"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("the first pattern: %v", err)
	}
	if err := sub.PSubscribe(ctx, pat+"2"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err == nil || !strings.Contains(err.Error(), "maxmemory-clients") {
		t.Fatalf("a second 55 KB pattern within a 96 KiB budget: %v", err)
	}
}
