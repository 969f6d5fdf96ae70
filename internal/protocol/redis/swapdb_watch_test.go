package redis

import "testing"

// TestSwapDBWatchSeesBatchWrites: a SWAPDB aborts the watches of a key that exists in either database when it runs,
// as Redis's touchAllWatchedKeysInDb, also when the transaction that swaps wrote the key there itself, or brought it
// there by an earlier swap, and deleted it again afterwards (the key ends absent, as it was watched, so the WATCH's
// version cannot tell; anykv's EXEC went through where Redis's aborts).
func TestSwapDBWatchSeesBatchWrites(t *testing.T) {
	c := func(args ...string) transcriptStep { return transcriptStep{"sub", respCmd(args...), 1} }
	p := func(args ...string) transcriptStep { return transcriptStep{"pub", respCmd(args...), 1} }
	steps := []transcriptStep{
		c("FLUSHALL"),
		c("WATCH", "w"), p("MULTI"), p("SELECT", "1"), p("SET", "w", "v"), p("SWAPDB", "0", "1"), p("SELECT", "0"), p("EXEC"),
		c("MULTI"), c("GET", "w"), c("EXEC"),
		c("FLUSHALL"), p("SELECT", "2"), p("SET", "w", "2"), p("SELECT", "0"),
		c("WATCH", "w"), p("MULTI"), p("SWAPDB", "1", "2"), p("SWAPDB", "0", "1"), p("EXEC"),
		c("MULTI"), c("GET", "w"), c("EXEC"),
		// Written in database 1, swapped into 0 and back out, deleted: database 0 ends as it was watched.
		c("FLUSHALL"),
		c("WATCH", "w"), p("MULTI"), p("SELECT", "1"), p("SET", "w", "v"), p("SWAPDB", "0", "1"), p("SWAPDB", "0", "1"),
		p("DEL", "w"), p("SELECT", "0"), p("EXEC"),
		c("MULTI"), c("GET", "w"), c("EXEC"),
		// Live in database 2 before, brought to 0 through 1 by two swaps, then out again and deleted.
		c("FLUSHALL"), p("SELECT", "2"), p("SET", "w", "2"), p("SELECT", "0"),
		c("WATCH", "w"), p("MULTI"), p("SWAPDB", "1", "2"), p("SWAPDB", "0", "1"), p("SWAPDB", "0", "1"),
		p("SELECT", "1"), p("DEL", "w"), p("SELECT", "0"), p("EXEC"),
		c("MULTI"), c("GET", "w"), c("EXEC"),
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })
}
