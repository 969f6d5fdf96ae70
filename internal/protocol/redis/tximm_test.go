package redis

import "testing"

// txKeyspaceTranscript queues KEYS, SCAN, RANDOMKEY, DBSIZE and XREAD between writes in transactions, in both
// protocols; each must see the writes queued before it and none after (they ran after the batch, and so saw the
// transaction's later writes too).
func txKeyspaceTranscript(t *testing.T, addr string) []string {
	var steps []transcriptStep
	add := func(cmds ...string) {
		for _, c := range cmds {
			steps = append(steps, transcriptStep{"sub", c, 1})
		}
	}
	add("FLUSHALL", "CONFIG RESETSTAT", "SET a 1", "MULTI", "DBSIZE", "SET b 2", "DBSIZE", "KEYS b", "DEL a", "KEYS a",
		"RANDOMKEY", "SCAN 0 MATCH b COUNT 100", "SCAN 0 TYPE string COUNT 100", "XREAD STREAMS s 0", "XADD s 1-1 f v",
		"XREAD COUNT 5 STREAMS s 0", "XREAD BLOCK 0 STREAMS s $", "XREAD BLOCK 10 STREAMS s 0", "SCAN x", "KEYS c",
		"SET c 3", "EXEC")
	add("MULTI", "SELECT 1", "SET x 1", "DBSIZE", "KEYS *", "SCAN 0 COUNT 100", "SELECT 0", "DBSIZE", "EXEC", "DBSIZE")
	add("MULTI", "FLUSHDB", "DBSIZE", "RANDOMKEY", "KEYS *", "SET z 1", "KEYS *", "RANDOMKEY", "DEL z", "DBSIZE", "EXEC")
	add("INFO errorstats") // the SCAN's error counted once
	return pubsubTranscript(t, addr, steps)
}

// TestTxKeyspaceReadsMatchRedis: queued key-space reads run in their place inside the transaction, as in Redis,
// with its replies byte for byte (errors and INFO errorstats' count of them included).
func TestTxKeyspaceReadsMatchRedis(t *testing.T) {
	sameAsRedis(t, txKeyspaceTranscript)
}

// txPopTranscript queues LMPOP, ZMPOP and the blocking pops in a transaction between pushes, while a subscriber
// hears the keyspace events: each pop must take what the writes queued before it left (they ran after the batch,
// and so saw the transaction's later pushes too, outside its atomicity), and send Redis's events in order.
func txPopTranscript(t *testing.T, addr string) []string {
	steps := []transcriptStep{{"pub", "FLUSHALL", 1}, {"pub", "CONFIG RESETSTAT", 1},
		{"pub", "CONFIG SET notify-keyspace-events KEA", 1},
		{"sub", "PSUBSCRIBE __keyevent@0__:*", 1}, {"pub", "RPUSH l a b c", 1}, {"pub", "ZADD z 1 x 2 y", 1}}
	for _, c := range []string{"MULTI", "LMPOP 2 nol l LEFT COUNT 2", "RPUSH l d", "BLPOP l 0", "BRPOP nol2 l 1",
		"BZPOPMIN z 0", "ZMPOP 1 z MAX", "ZMPOP 1 z MAX", "BLMOVE l l2 LEFT RIGHT 0", "RPUSH l e f", "RPUSH l2 p",
		"BLMOVE l l2 LEFT RIGHT 0", "BRPOPLPUSH l2 l3 x", "BLMOVE l l2 LEFT UP 0", "RPUSH l3 q", "BRPOPLPUSH l2 l3 0",
		"LRANGE l 0 -1", "LRANGE l2 0 -1", "LRANGE l3 0 -1",
		"LMPOP 0 l LEFT", "SET s v", "BLPOP s 0", "BLMPOP 0 1 l LEFT", "BZMPOP 0 1 z MIN", "BZPOPMAX z -1", "EXEC"} {
		steps = append(steps, transcriptStep{"pub", c, 1})
	}
	return pubsubTranscript(t, addr, append(steps, transcriptStep{"pub", "SET end x", 1},
		transcriptStep{"sub", "", 21}, transcriptStep{"pub", "INFO errorstats", 1}))
}

// TestTxPopsMatchRedis: pops queued in MULTI run in their place, atomically with the transaction, with Redis's
// replies and keyspace events byte for byte.
func TestTxPopsMatchRedis(t *testing.T) {
	sameAsRedis(t, txPopTranscript)
}

// scriptPopTranscript: scripts may call LMPOP, ZMPOP, BLMPOP and BZMPOP (the blocking forms answer at once), as
// in Redis 7, whose error they answered; BLPOP and its kin stay refused there, as Redis refuses them.
func scriptPopTranscript(t *testing.T, addr string) []string {
	steps := []transcriptStep{{"pub", "FLUSHALL", 1}, {"pub", "CONFIG SET notify-keyspace-events KEA", 1},
		{"sub", "PSUBSCRIBE __keyevent@0__:*", 1}, {"pub", "RPUSH l a b c", 1}, {"pub", "ZADD z 1 x 2 y", 1}}
	for _, sc := range []string{
		"return redis.call('lmpop', 2, KEYS[2], KEYS[1], 'right', 'count', 2)",
		"return redis.call('blmpop', 0, 1, KEYS[1], 'left')",
		"return redis.call('blmpop', 0, 1, KEYS[1], 'left')",
		"return redis.call('zmpop', 1, KEYS[3], 'max')",
		"return redis.call('bzmpop', 5, 1, KEYS[3], 'min', 'count', 3)",
		"return redis.call('bzmpop', 0, 1, KEYS[3], 'min')",
		"return redis.pcall('lmpop', 0, KEYS[1], 'left')",
		"return redis.pcall('blpop', KEYS[1], 0)",
		"return redis.pcall('bzpopmin', KEYS[3], 0)",
	} {
		steps = append(steps, transcriptStep{"pub", respCmd("EVAL", sc, "3", "l", "nol", "z"), 1})
	}
	// The last event heard must be the SET after them: an event too many would take its place (a PUBLISH's count
	// could include the last round's subscriber, whose close anykv may not have read yet).
	return pubsubTranscript(t, addr, append(steps, transcriptStep{"pub", "SET end x", 1},
		transcriptStep{"sub", "", 9}))
}

// TestScriptPopsMatchRedis: the pops a script may call answer as redis-server's, keyspace events included.
func TestScriptPopsMatchRedis(t *testing.T) {
	sameAsRedis(t, scriptPopTranscript)
}

// noMultiTranscript queues SAVE, SHUTDOWN and MONITOR in transactions: Redis refuses the first two there
// ("Command not allowed inside a transaction") and EXEC then aborts, where anykv queued them and EXEC shut it
// down; it queues MONITOR and EXEC answers it an error, where anykv refused it.
func noMultiTranscript(t *testing.T, addr string) []string {
	var steps []transcriptStep
	for _, c := range []string{"SAVE", "SHUTDOWN", "SHUTDOWN NOSAVE", "MONITOR"} {
		for _, s := range []string{"DEL foo", "MULTI", "SET foo bar", c, "EXEC", "GET foo"} {
			steps = append(steps, transcriptStep{"pub", s, 1})
		}
	}
	return pubsubTranscript(t, addr, steps)
}

// TestMultiRefusesNoMultiCommandsMatchesRedis: unit/multi's "MULTI with SAVE" and "MULTI with SHUTDOWN".
func TestMultiRefusesNoMultiCommandsMatchesRedis(t *testing.T) {
	sameAsRedis(t, noMultiTranscript)
}
