package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestSetRangeChecksTypeAndEmptyValueBeforeTheSizeLimit: as Redis's setrangeCommand, SETRANGE answers WRONGTYPE
// for another kind and the current length (0 for a missing key, which it does not create) for an empty value
// whatever the offset, and only then refuses an end past the value limit. anykv refused every offset past
// --max-value-size first: `SETRANGE s 100000000 ""` was "string exceeds maximum allowed size" where redis-server
// 7.0 answers 5, and over a list it was that error instead of WRONGTYPE.
func TestSetRangeChecksTypeAndEmptyValueBeforeTheSizeLimit(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "s", "hello", 0)
	c.RPush(ctx, "l", "a")
	const huge = "9223372036854775807"
	for _, off := range []string{"100000000", huge} {
		if n, err := c.Do(ctx, "setrange", "s", off, "").Int64(); err != nil || n != 5 {
			t.Errorf("SETRANGE s %s \"\": %d, %v; want 5 as Redis", off, n, err)
		}
		if n, err := c.Do(ctx, "setrange", "missing", off, "").Int64(); err != nil || n != 0 {
			t.Errorf("SETRANGE missing %s \"\": %d, %v; want 0 as Redis", off, n, err)
		}
		for _, v := range []string{"", "x"} {
			err := c.Do(ctx, "setrange", "l", off, v).Err()
			if err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Errorf("SETRANGE l %s %q: %v; want WRONGTYPE as Redis", off, v, err)
			}
		}
		err := c.Do(ctx, "setrange", "s", off, "x").Err()
		if err == nil || err.Error() != "ERR string exceeds maximum allowed size (proto-max-bulk-len)" {
			t.Errorf("SETRANGE s %s x: %v; want the size limit's error", off, err)
		}
	}
	if n, err := c.Exists(ctx, "missing").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS missing: %d, %v; an empty SETRANGE created it", n, err)
	}
	if v, err := c.Get(ctx, "s").Result(); err != nil || v != "hello" {
		t.Errorf("GET s: %q, %v; want hello unchanged", v, err)
	}
}

// TestSetBitPastTheValueLimitOnAnotherKindIsWrongType: SETBIT at an offset within Redis's 2^32 bits but past
// --max-value-size, on a key of another kind, is WRONGTYPE as in redis-server 7.0 (the kind is checked before the
// size); anykv answered "string exceeds maximum allowed size". On a string it is still refused, writing nothing.
func TestSetBitPastTheValueLimitOnAnotherKindIsWrongType(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.RPush(ctx, "l", "a")
	c.Set(ctx, "s", "x", 0)
	off := "4294967295" // the last bit Redis accepts; past the default 64 MiB value limit
	err := c.Do(ctx, "setbit", "l", off, "1").Err()
	if err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
		t.Errorf("SETBIT l %s 1: %v; want WRONGTYPE as Redis", off, err)
	}
	err = c.Do(ctx, "setbit", "s", off, "1").Err()
	if err == nil || err.Error() != "ERR string exceeds maximum allowed size (proto-max-bulk-len)" {
		t.Errorf("SETBIT s %s 1: %v; want the size limit's error", off, err)
	}
	if v, err := c.Get(ctx, "s").Result(); err != nil || v != "x" {
		t.Errorf("GET s: %q, %v; want x unchanged", v, err)
	}
	if err := c.Do(ctx, "setbit", "missing", off, "1").Err(); err == nil {
		t.Error("SETBIT missing past the value limit: accepted")
	}
	if n, err := c.Exists(ctx, "missing").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS missing: %d, %v; a refused SETBIT created it", n, err)
	}
}

// TestGetExReadsItsTimeOnlyForAString: as Redis's getexCommand, GETEX looks the key up before it reads the EX/PX/
// EXAT/PXAT time: a missing key is nil and another kind WRONGTYPE whatever the time (0, negative, past int64's
// milliseconds, not a number); only a string gets the time's error, and keeps its TTL. anykv refused the time first.
func TestGetExReadsItsTimeOnlyForAString(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "s", "v", 0)
	c.RPush(ctx, "l", "a")
	for _, opt := range [][]any{{"ex", "0"}, {"px", "-1"}, {"ex", "9223372036854775807"}, {"exat", "9223372036854775807"}, {"ex", "abc"}} {
		if err := c.Do(ctx, append([]any{"getex", "missing"}, opt...)...).Err(); err != goredis.Nil {
			t.Errorf("GETEX missing %v: %v; want nil as Redis", opt, err)
		}
		err := c.Do(ctx, append([]any{"getex", "l"}, opt...)...).Err()
		if err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
			t.Errorf("GETEX l %v: %v; want WRONGTYPE as Redis", opt, err)
		}
		want := "ERR invalid expire time in 'getex' command"
		if opt[1] == "abc" {
			want = "ERR value is not an integer or out of range"
		}
		if err := c.Do(ctx, append([]any{"getex", "s"}, opt...)...).Err(); err == nil || err.Error() != want {
			t.Errorf("GETEX s %v: %v; want %q", opt, err, want)
		}
		if err := c.Do(ctx, append(append([]any{"getex", "s"}, opt...), "persist")...).Err(); err == nil || err.Error() != "ERR syntax error" {
			t.Errorf("GETEX s %v PERSIST: %v; want a syntax error", opt, err)
		}
	}
	if ttl, err := c.TTL(ctx, "s").Result(); err != nil || ttl != -1 {
		t.Errorf("TTL s: %v, %v; a refused GETEX changed it", ttl, err)
	}
	if v, err := c.Do(ctx, "getex", "s", "ex", "100").Text(); err != nil || v != "v" {
		t.Errorf("GETEX s EX 100: %q, %v", v, err)
	}
	if ttl, err := c.TTL(ctx, "s").Result(); err != nil || ttl <= 0 {
		t.Errorf("TTL s after GETEX EX 100: %v, %v", ttl, err)
	}
}

// TestScriptStringEditsKeepTheValueLimit: APPEND and SETRANGE called by a script are bounded by --max-value-size
// as outside one. A script's commands reach the engine through its Tx, which kv's check of a batch (where the
// limit was set) does not see: APPEND in a script grew a value past the limit without bound (each call adding up
// to the limit).
func TestScriptStringEditsKeepTheValueLimit(t *testing.T) {
	ts := startServer(t, Options{}, 0) // a value limit of 1 MiB
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	const limit, tooBig = 1 << 20, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	c.Set(ctx, "k", strings.Repeat("v", limit-100), 0)
	err := c.Eval(ctx, "return redis.call('append', KEYS[1], ARGV[1])", []string{"k"}, strings.Repeat("x", 200)).Err()
	if err == nil || !strings.Contains(err.Error(), tooBig) {
		t.Errorf("APPEND in a script past the limit: %v; want %q", err, tooBig)
	}
	err = c.Eval(ctx, "return redis.call('setrange', KEYS[1], ARGV[1], 'x')", []string{"k"}, limit).Err()
	if err == nil || !strings.Contains(err.Error(), tooBig) {
		t.Errorf("SETRANGE in a script past the limit: %v; want %q", err, tooBig)
	}
	if n, err := c.StrLen(ctx, "k").Result(); err != nil || n != limit-100 {
		t.Errorf("STRLEN k: %d, %v; want %d, unchanged", n, err, limit-100)
	}
	if n, err := c.Eval(ctx, "return redis.call('append', KEYS[1], ARGV[1])", []string{"k"}, strings.Repeat("x", 100)).Int64(); err != nil || n != limit {
		t.Errorf("APPEND in a script up to the limit: %d, %v; want %d", n, err, limit)
	}
}
