package redis

import "testing"

// TestSwapDBMatchesRedis: SWAPDB answers as redis-server 7 does, byte for byte in RESP2 and RESP3: its errors;
// every type's data traded between the two databases, expiry included; two swaps queued in one MULTI (go-redis's
// TxPipeline test); a WATCH aborted when its key is live in either database and kept when it is in neither (Redis's
// touchAllWatchedKeysInDb, which also aborts a watch that two swaps
// leave as it was); and a client blocked on a list served when a swap brings the list into its database.
func TestSwapDBMatchesRedis(t *testing.T) {
	c := func(args ...string) transcriptStep { return transcriptStep{"sub", respCmd(args...), 1} }
	p := func(args ...string) transcriptStep { return transcriptStep{"pub", respCmd(args...), 1} }
	steps := []transcriptStep{
		c("FLUSHALL"), c("SWAPDB"), c("SWAPDB", "0"), c("SWAPDB", "x", "1"), c("SWAPDB", "0", "x"),
		c("SWAPDB", "x", "y"), c("SWAPDB", "0", "16"), c("SWAPDB", "-1", "0"), c("SWAPDB", "0", "2147483648"),
		c("SWAPDB", "1.5", "0"), c("SWAPDB", "0", "0"), c("SWAPDB", "3", "3"),
		c("SET", "s", "zero"), c("RPUSH", "l", "a", "b"), c("HSET", "h", "f", "v"), c("SADD", "st", "m"),
		c("ZADD", "z", "1", "a", "2", "b"), c("XADD", "x", "1-1", "f", "v"), c("SET", "t", "v", "EX", "1000"),
		c("SETBIT", "bits", "7", "1"), c("SELECT", "1"), c("SET", "s", "one"), c("SET", "only1", "x"),
		c("SELECT", "0"), c("SWAPDB", "0", "1"),
		c("MGET", "s", "only1", "t"), c("DBSIZE"), c("SELECT", "1"), c("DBSIZE"), c("GET", "s"),
		c("LRANGE", "l", "0", "-1"), c("HGETALL", "h"), c("SMEMBERS", "st"), c("ZRANGE", "z", "0", "-1", "WITHSCORES"),
		c("XRANGE", "x", "-", "+"), c("TTL", "t"), c("GETBIT", "bits", "7"), c("TYPE", "x"),
		c("SWAPDB", "1", "0"), c("GET", "s"), c("SELECT", "0"), c("GET", "s"), c("LLEN", "l"),
		// Two swaps in one transaction, each seeing the one before: 0→2, then 1↔0.
		c("MULTI"), c("SWAPDB", "0", "2"), c("SET", "after", "1"), c("SWAPDB", "1", "0"), c("EXEC"),
		c("MGET", "s", "only1", "after"), c("SELECT", "1"), c("MGET", "s", "only1", "after"), c("SELECT", "2"),
		c("MGET", "s", "only1", "after"), c("HGETALL", "h"), c("SELECT", "0"),
		// WATCH: a key live in the other database aborts, a key in neither does not.
		c("FLUSHALL"), p("SELECT", "1"), p("SET", "w", "1"),
		c("WATCH", "w"), p("SWAPDB", "0", "1"), c("MULTI"), c("GET", "w"), c("EXEC"),
		c("WATCH", "nokey"), p("SWAPDB", "0", "1"), c("MULTI"), c("GET", "nokey"), c("EXEC"),
		c("WATCH", "w"), p("SWAPDB", "2", "3"), c("MULTI"), c("GET", "w"), c("EXEC"),
		c("WATCH", "w"), p("SWAPDB", "0", "1"), p("SWAPDB", "0", "1"), c("MULTI"), c("GET", "w"), c("EXEC"),
		c("WATCH", "w"), p("MULTI"), p("SWAPDB", "0", "1"), p("SWAPDB", "1", "0"), p("EXEC"), c("MULTI"),
		c("GET", "w"), c("EXEC"),
		// A client blocked on a list is served by a swap that brings one (in either order of the two).
		c("FLUSHALL"), p("RPUSH", "q", "job"), {"sub", respCmd("BLPOP", "q", "5"), 0}, p("PING"), p("PING"), p("PING"),
		p("SWAPDB", "0", "1"),
		{"sub", "", 1}, c("LLEN", "q"), p("LLEN", "q"), p("SELECT", "0"),
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })
}

// TestSwapDBInvalidatesTrackingOnce: a client tracking keys is told once to drop everything when a SWAPDB changes
// what its database holds (one null invalidation for the two tables swapped, as after a FLUSHDB), where Redis
// sends nothing and leaves the client's cache with the other database's values.
func TestSwapDBInvalidatesTrackingOnce(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	a, b := ts.raw(t), ts.raw(t)
	a.send(respCmd("HELLO", "3"))
	a.reply()
	for _, cmd := range [][]string{{"CLIENT", "TRACKING", "ON"}, {"GET", "k"}} {
		a.send(respCmd(cmd...))
		a.reply()
	}
	b.send(respCmd("SWAPDB", "0", "1"))
	if got := b.reply(); got != "+OK\r\n" {
		t.Fatalf("SWAPDB: %q", got)
	}
	want := ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	if got := a.reply(); got != want {
		t.Fatalf("push %q, want %q", got, want)
	}
	a.send(respCmd("PING"))
	if got := a.reply(); got != "+PONG\r\n" {
		t.Fatalf("after the invalidation: %q (a second one?)", got)
	}
}
