package redis

import (
	"fmt"
	"strings"
	"testing"
)

// scriptPubTranscript has a script publish to channel, pattern and shard subscribers, in RESP2 and RESP3, and
// returns every reply's bytes in order.
func scriptPubTranscript(t *testing.T, addr string) []string {
	eval := func(script string) string {
		return fmt.Sprintf("*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n", len(script), script)
	}
	return pubsubTranscript(t, addr, []transcriptStep{
		{"sub", "SUBSCRIBE ch1", 1}, {"sub", "PSUBSCRIBE ch*", 1}, {"sub", "SSUBSCRIBE s1", 1},
		{"pub", eval(`local a = redis.call('PUBLISH', 'ch1', 'hello') ` +
			`redis.call('SET', 'k', 'v') ` +
			`local b = redis.call('publish', 'other', 'x') ` +
			`local c = redis.call('SPUBLISH', 's1', 'shard') ` +
			`local d = redis.call('PUBLISH', 'ch2', '') ` +
			`return {a, b, c, d}`), 1},
		{"sub", "", 4}, // message and pmessage of ch1, smessage of s1, pmessage of ch2, in the order sent
		{"pub", eval(`return redis.pcall('PUBLISH', 'ch1')['err']`), 1},
		{"pub", eval(`redis.call('PUBLISH', 'ch1', 'kept') return redis.call('INCR', 'k')`), 1},
		{"sub", "", 2}, // a script that fails keeps what it published before, as its writes
		{"pub", "*3\r\n$7\r\nEVAL_RO\r\n$48\r\nreturn redis.pcall('PUBLISH', 'ch1', 'ro')['err']\r\n$1\r\n0\r\n", 1},
		{"sub", "PING", 1}, // no message from the read-only script came before it
	})
}

// TestScriptPublishMatchesRedis: PUBLISH and SPUBLISH from a script reach channel, pattern and shard subscribers
// and count them as redis-server 7 does, byte for byte, and EVAL_RO refuses them (they answered "This Redis
// command is not allowed from script": Bull's scripts publish the job they queue).
func TestScriptPublishMatchesRedis(t *testing.T) {
	sameAsRedis(t, scriptPubTranscript)
}

// TestScriptMessageFollowsItsWrite: a script's message goes out once its batch is applied and durable, so a
// subscriber that hears of a write reads it (the message waits with the script's keyspace events).
func TestScriptMessageFollowsItsWrite(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	sub, pub, reader := ts.raw(t), ts.raw(t), ts.raw(t)
	sub.send("SUBSCRIBE jobs\r\n")
	sub.reply()
	const script = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('PUBLISH', 'jobs', KEYS[1])"
	for i := range 200 {
		key, val := fmt.Sprint("job", i), fmt.Sprint("v", i)
		pub.send(fmt.Sprintf("*5\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n1\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n",
			len(script), script, len(key), key, len(val), val))
		msg := sub.reply()
		if !strings.Contains(msg, key) {
			t.Fatalf("message %d: %q", i, msg)
		}
		reader.send("GET " + key + "\r\n")
		if got := reader.reply(); got != fmt.Sprintf("$%d\r\n%s\r\n", len(val), val) {
			t.Fatalf("GET %s right after its message: %q, want %s", key, got, val)
		}
		if got := pub.reply(); got != ":1\r\n" {
			t.Fatalf("EVAL %d: %q, want the one subscriber counted", i, got)
		}
	}
}

// bitScript exercises Redis's bit library (LuaBitOp): normalization of arguments, every function, and tohex's
// widths.
const bitScript = `return {bit.tobit(0xffffffff), bit.tobit(2^32+5), bit.tobit(-1.5), bit.tobit(2.5), bit.tobit(3.5),
	bit.tobit(1e15), bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x12345678, 3), bit.tohex(1, 0), bit.tohex(1, 12),
	bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(7, 2), bit.lshift(1, 31), bit.lshift(1, 33),
	bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 40), bit.bswap(0x12345678),
	bit.band("12", 4), bit.band(12345 * 4096 + 99, 0xfff), bit.tobit(-2^31 - 1), bit.tohex(bit.bnot(5), -8),
	pcall(bit.band, {}), pcall(bit.tohex, 1, nil), type(bit.tobit),
	bit.tohex(1, -2147483648), bit.tobit(2^60+1024), bit.tobit(2^53+3), bit.tobit(1/0), bit.tobit(0/0), bit.band(-2^52, 1)}`

// TestBitLibraryMatchesRedis: the bit library answers as redis-server's (Bull's delayed jobs call bit.band; it
// was missing).
func TestBitLibraryMatchesRedis(t *testing.T) { sameEvalAsRedis(t, bitScript) }
