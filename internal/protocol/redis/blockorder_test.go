package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// blockTranscript runs script on addr with a connection per client letter and returns the replies read. A line
// is "A> command" (A sends it and the script goes on once CLIENT LIST shows A blocked), "A: command" (A sends it
// and its reply is read) or "A?" (A's next reply is read, as the blocked command's answer).
func blockTranscript(t *testing.T, addr, script string) []string {
	t.Helper()
	ctl := dialRaw(t, addr)
	conns, ids := map[string]*rawConn{}, map[string]string{}
	conn := func(name string) *rawConn {
		if c := conns[name]; c != nil {
			return c
		}
		c := dialRaw(t, addr)
		c.send(respCmd("CLIENT", "ID"))
		conns[name], ids[name] = c, strings.TrimSpace(strings.TrimPrefix(c.reply(), ":"))
		return c
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
		line = strings.TrimSpace(line)
		name, op, cmd := line[:1], line[1:2], strings.TrimSpace(line[2:])
		c := conn(name)
		switch op {
		case ">":
			c.send(cmd + "\r\n")
			deadline := time.Now().Add(5 * time.Second)
			for {
				ctl.send("CLIENT LIST\r\n")
				list := ctl.reply()
				if i := strings.Index(list, "id="+ids[name]+" "); i >= 0 {
					if f := list[i:]; strings.Contains(f[:strings.Index(f, "\n")], " flags=b ") {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: not blocked after 5 s", line)
				}
				time.Sleep(time.Millisecond)
			}
		case ":":
			c.send(cmd + "\r\n")
			out = append(out, fmt.Sprintf("%s %q", line, c.reply()))
		case "?":
			c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var b strings.Builder
			if err := readValue(c.r, &b); err != nil {
				t.Fatalf("%s: %v (replies so far: %q)", line, err, out)
			}
			out = append(out, fmt.Sprintf("%s %q", line, b.String()))
		default:
			t.Fatalf("bad line %q", line)
		}
	}
	return out
}

// blockScriptMatchesRedis runs script (blockTranscript's) on anykv and redis-server and compares the replies.
func blockScriptMatchesRedis(t *testing.T, script string) {
	t.Helper()
	sameAsRedis(t, func(t *testing.T, addr string) []string { return blockTranscript(t, addr, script) })
}

// TestBlockedXReadGroupsServedInOrderMatchRedis: XREADGROUP readers of one group blocked on a stream are served
// first come, first served, as in Redis: the first takes the new entry and the others wait for the next; a reader
// of another group, blocked among them, is served the same entry; an XREAD reader is served too. anykv woke every
// reader at once, and whichever got there first took the entry (blockfuzz seed 38). Several rounds, since a
// wrong order may come out right by luck.
func TestBlockedXReadGroupsServedInOrderMatchRedis(t *testing.T) {
	var b strings.Builder
	b.WriteString("X: XGROUP CREATE s g $ MKSTREAM\nX: XGROUP CREATE s g2 $\nX: XGROUP CREATE s2 g $ MKSTREAM\n")
	for round := 1; round <= 6; round++ {
		fmt.Fprintf(&b, `A> XREADGROUP GROUP g a BLOCK 0 STREAMS s >
			D> XREADGROUP GROUP g2 d BLOCK 0 STREAMS s >
			B> XREADGROUP GROUP g b COUNT 1 BLOCK 0 STREAMS s >
			E> XREAD BLOCK 0 STREAMS s $
			C> XREADGROUP GROUP g c BLOCK 0 STREAMS s2 s > >
			X: XADD s %[1]d-1 f v
			A?
			D?
			E?
			X: XADD s %[1]d-2 f v
			B?
			X: XADD s %[1]d-3 f v
			C?
			X: XPENDING s g
			X: XGROUP SETID s g2 $
			`, round)
	}
	blockScriptMatchesRedis(t, b.String())
}

// TestBlockedPopServedFromTheKeyThatFilledMatchesRedis: a client blocked on several keys is served from the key
// that was filled first (the order of the transaction's or script's writes), not from the first of its keys
// that holds something, as Redis serves it from the key that became ready; a key filled after it was served
// keeps its element, and a client blocked on that key alone still waits. anykv popped the first key listed
// (blockfuzz seed 61).
func TestBlockedPopServedFromTheKeyThatFilledMatchesRedis(t *testing.T) {
	blockScriptMatchesRedis(t, `
		A> BLPOP l2 l1 0
		B: MULTI
		B: RPUSH l1 a
		B: RPUSH l2 b
		B: EXEC
		A?
		B: LRANGE l1 0 -1
		B: LRANGE l2 0 -1
		B: DEL l1 l2
		A> BLPOP l1 l2 0
		C> BLPOP l2 0
		B: MULTI
		B: RPUSH l2 x
		B: RPUSH l1 y
		B: EXEC
		A?
		B: LRANGE l1 0 -1
		B: RPUSH l2 z
		C?
		B: DEL l1 l2
		A> BLMPOP 0 2 l2 l1 LEFT COUNT 2
		B: EVAL "redis.call('rpush', KEYS[1], 'a', 'b', 'c'); redis.call('rpush', KEYS[2], 'd')" 2 l1 l2
		A?
		B: LRANGE l1 0 -1
		B: LRANGE l2 0 -1
		A> BZPOPMIN z2 z1 0
		B: MULTI
		B: ZADD z1 1 a
		B: ZADD z2 0 b
		B: EXEC
		A?
		B: ZRANGE z1 0 -1
		B: ZRANGE z2 0 -1
		B: DEL z1 z2
		A> BZMPOP 0 2 z1 z2 MAX COUNT 5
		B: ZADD z2 5 c
		A?
		B: ZRANGE z1 0 -1`)
}

// TestBlockedMoveSourceOfOtherTypeMatchesRedis: a BLMOVE or BRPOPLPUSH whose source key is given another type
// while it waits waits on (Redis serves it only from a list), and is served once the key is a list again; one
// whose destination holds another type when its source fills is answered WRONGTYPE, the element left in the
// source, as in Redis. anykv answered WRONGTYPE as soon as a script (whose declared keys wake their clients)
// made the source a hash (blockfuzz seed 68).
func TestBlockedMoveSourceOfOtherTypeMatchesRedis(t *testing.T) {
	blockScriptMatchesRedis(t, `
		A> BLMOVE src dst LEFT RIGHT 0
		C> BRPOPLPUSH src2 dst 0
		B: EVAL "redis.call('hset', KEYS[1], 'f', 'v')" 1 src
		B: EVAL "redis.call('set', KEYS[1], 'x')" 1 src2
		B: DEL src src2
		B: RPUSH src a
		A?
		B: RPUSH src2 b
		C?
		B: LRANGE dst 0 -1
		A> BLMOVE src3 dst3 LEFT RIGHT 0
		B: SET dst3 str
		B: RPUSH src3 c
		A?
		B: LRANGE src3 0 -1
		B: GET dst3`)
}

// TestBlockedXReadServedFromTheStreamThatFilledMatchesRedis: an XREAD or XREADGROUP blocked on several streams
// is answered with the entries of the stream whose XADD woke it alone, as Redis serves it from the key that became
// ready, even when a transaction added to another of its streams too; the other stream's entries are read by
// the next call. anykv answered every stream that had something new (blockfuzz seed 145).
func TestBlockedXReadServedFromTheStreamThatFilledMatchesRedis(t *testing.T) {
	blockScriptMatchesRedis(t, `
		X: XGROUP CREATE s1 g $ MKSTREAM
		X: XGROUP CREATE s2 g $ MKSTREAM
		A> XREAD BLOCK 0 STREAMS s1 s2 $ $
		C> XREADGROUP GROUP g c BLOCK 0 STREAMS s1 s2 > >
		B: MULTI
		B: XADD s2 1-1 f a
		B: XADD s1 1-1 f b
		B: EXEC
		A?
		C?
		C: XREADGROUP GROUP g c STREAMS s1 s2 > >
		C: XPENDING s1 g
		C: XPENDING s2 g`)
}

// TestBlockedXReadWokenByAWriteThatAddsNothingMatchesRedis: an XREAD blocked on two streams is woken by a write
// of the first that adds nothing (while an XREADGROUP waits somewhere, any write of a stream wakes its readers)
// and, in the same transaction, an XADD to the second. Redis serves it from the second, the only one that became
// ready. A guard for the wake that names its key (wakeAck.key): a reader tried on the first stream alone, the
// second's wake dropped as it was woken already, would wait on until the next write or its timeout.
func TestBlockedXReadWokenByAWriteThatAddsNothingMatchesRedis(t *testing.T) {
	blockScriptMatchesRedis(t, `
X: XADD a 1-1 f v
X: XADD b 1-1 f v
X: XGROUP CREATE a g $
X: XGROUP CREATE other g $ MKSTREAM
G> XREADGROUP GROUP g c BLOCK 0 STREAMS other >
A> XREAD BLOCK 0 STREAMS a b 1-1 1-1
X: MULTI
X: XGROUP SETID a g 0-0
X: XADD b 2-1 f v
X: EXEC
A?
X: XADD other 1-1 f v
G?`)
}

// TestBlockedClientsOfAnotherTypeStillServedMatchesRedis: a list and a sorted set popper blocked on one key are
// both waiting for it; a ZADD serves the BZPOPMIN even though a BLPOP blocked before it, and an RPUSH serves the
// list popper even though a BZPOPMAX blocked before it, as in Redis, which serves a blocked client only from a
// key of its type and passes over the others. The earlier client of the other type, which finds nothing it can
// take, must not end the wake for the clients after it.
func TestBlockedClientsOfAnotherTypeStillServedMatchesRedis(t *testing.T) {
	blockScriptMatchesRedis(t, `
		A> BLPOP k 0
		B> BZPOPMIN k 0
		C: ZADD k 1 m
		B?
		C: RPUSH k a
		A?
		D> BZPOPMAX z 0
		E> BLMPOP 0 1 z LEFT
		F> BLMOVE z dst LEFT RIGHT 0
		C: RPUSH z x y
		E?
		F?
		C: ZADD z 2 n
		D?
		C: LRANGE dst 0 -1`)
}
