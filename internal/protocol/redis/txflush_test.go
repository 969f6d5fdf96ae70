package redis

import (
	"strings"
	"testing"
)

// txFlushTranscript: FLUSHDB and FLUSHALL, from the watching connection or another, inside MULTI or not, abort
// only the transactions watching a key they deleted (live, in the flushed database), as Redis's
// touchAllWatchedKeysInDb; anykv aborted every watch of the flushed databases. (An expired key counts as absent:
// kv's TestWatchSeesEveryWrite; the test server's clock stands still.)
func txFlushTranscript(t *testing.T, addr string) []string {
	var steps []transcriptStep
	on := func(conn string, cmds ...string) {
		for _, c := range cmds {
			steps = append(steps, transcriptStep{conn, c, 1})
		}
	}
	exec := func() { on("sub", "MULTI", "PING", "EXEC") }
	for _, flush := range []string{"FLUSHDB", "FLUSHALL"} {
		on("pub", "FLUSHALL")
		on("sub", "WATCH x")
		on("sub", flush) // absent: the transaction runs
		exec()
		on("sub", "SET x 30", "WATCH x")
		on("pub", flush) // live, flushed from another connection: aborted
		exec()
		on("pub", "SELECT 1", "SET y 1", "SELECT 0") // y lives in database 1 only
		on("sub", "WATCH y")
		on("pub", flush) // FLUSHDB leaves database 1; FLUSHALL flushes it, but y is absent from 0: runs
		exec()
		on("sub", "WATCH z")
		on("pub", "MULTI", "SET z 1", flush, "EXEC") // written, then flushed, by one transaction: aborted
		exec()
		on("sub", "SET w 1", "WATCH w v")
		on("pub", "MULTI", "DEL w", flush, "EXEC") // deleted before the flush: aborted
		exec()
	}
	return pubsubTranscript(t, addr, steps)
}

// TestTxFlushAbortsWatchesOfFlushedKeysMatchesRedis compares the transcript with redis-server byte for byte.
func TestTxFlushAbortsWatchesOfFlushedKeysMatchesRedis(t *testing.T) {
	sameAsRedis(t, txFlushTranscript)
}

// watchLookupsTranscript: WATCH and a flush's check of the watched keys are no lookups in INFO's keyspace_hits
// and keyspace_misses, as in Redis; the GETs after them are.
func watchLookupsTranscript(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	for _, args := range [][]string{{"FLUSHALL"}, {"SET", "a", "1"}, {"CONFIG", "RESETSTAT"}, {"WATCH", "a", "b"},
		{"FLUSHALL"}, {"SET", "a", "1"}, {"GET", "a"}, {"GET", "c"}, {"UNWATCH"}} {
		c.do(args...)
	}
	var out []string
	for _, line := range strings.Split(c.do("INFO", "stats"), "\r\n") {
		if strings.HasPrefix(line, "keyspace_hits:") || strings.HasPrefix(line, "keyspace_misses:") {
			out = append(out, line)
		}
	}
	return out
}

// TestWatchIsNoLookupMatchesRedis compares the counts with redis-server.
func TestWatchIsNoLookupMatchesRedis(t *testing.T) {
	sameAsRedis(t, watchLookupsTranscript)
}
