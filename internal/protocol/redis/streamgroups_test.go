package redis

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cmdRESP encodes a command line (arguments split on spaces) as a RESP array.
func cmdRESP(line string) string {
	args := strings.Fields(line)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// Masks of what differs between runs (times) and between Redis 7.0, the redis-server compared with, and 7.2,
// whose replies anykv gives: 7.2 added XINFO CONSUMERS' "inactive" and XINFO STREAM FULL's consumer
// "active-time", which are taken out of anykv's replies before comparing.
var (
	timeMasks = []*regexp.Regexp{
		regexp.MustCompile(`(\*4\r\n\$\d+\r\n\d+-\d+\r\n\$\d+\r\n[^\r]*\r\n):\d+`), // XPENDING's idle, FULL's delivery time
		regexp.MustCompile(`(\*3\r\n\$\d+\r\n\d+-\d+\r\n):\d+`),                    // a FULL consumer's pending entry's delivery time
		regexp.MustCompile(`(\$4\r\nidle\r\n):\d+`),
		regexp.MustCompile(`(\$9\r\nseen-time\r\n):\d+`),
	}
	only72 = []*regexp.Regexp{
		regexp.MustCompile(`\$8\r\ninactive\r\n:-?\d+\r\n`),
		regexp.MustCompile(`\$11\r\nactive-time\r\n:-?\d+\r\n`),
	}
	consumerMap = regexp.MustCompile(`(%|\*)(4|5|8|10)(\r\n\$4\r\nname\r\n\$\d+\r\n[^\r]*\r\n\$(?:7\r\npending|9\r\nseen-time)\r\n)`)
)

func maskTimes(r string) string {
	for _, m := range timeMasks {
		r = m.ReplaceAllString(r, "${1}:T")
	}
	return r
}

// as70 turns anykv's Redis 7.2 reply into 7.0's: without the fields 7.2 added to a consumer's map.
func as70(r string) string {
	n := len(r)
	for _, m := range only72 {
		r = m.ReplaceAllString(r, "")
	}
	if len(r) == n {
		return r
	}
	return consumerMap.ReplaceAllStringFunc(r, func(s string) string {
		sub := consumerMap.FindStringSubmatch(s)
		less := map[string]string{"4": "3", "5": "4", "8": "6", "10": "8"}[sub[2]]
		return sub[1] + less + sub[3]
	})
}

// groupTranscript runs lines (a leading "~" masks the reply's times) on a fresh connection to addr, in RESP2
// and RESP3, after FLUSHALL, and returns every reply.
func groupTranscript(lines []string, anykv bool) func(t *testing.T, addr string) []string {
	return func(t *testing.T, addr string) []string {
		var out []string
		for _, proto := range []string{"2", "3"} {
			rc := dialRaw(t, addr)
			rc.send(cmdRESP("HELLO " + proto))
			rc.reply()
			rc.send(cmdRESP("FLUSHALL"))
			rc.reply()
			for _, l := range lines {
				mask := strings.HasPrefix(l, "~")
				l = strings.TrimPrefix(l, "~")
				rc.send(cmdRESP(l))
				r := rc.reply()
				if anykv {
					r = as70(r)
				}
				if mask {
					r = maskTimes(r)
				}
				out = append(out, proto+" "+l+" -> "+r)
			}
			rc.c.Close()
		}
		return out
	}
}

// sameAsRedisGroups runs the transcript against redis-server and anykv and requires the same replies.
func sameAsRedisGroups(t *testing.T, lines []string) {
	t.Helper()
	want := groupTranscript(lines, false)(t, startRedisServer(t))
	ts := startServer(t, Options{}, 0)
	got := groupTranscript(lines, true)(t, ts.addr)
	if len(got) != len(want) {
		t.Fatalf("%d replies, redis-server %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reply %d: %q\nredis-server: %q", i, got[i], want[i])
		}
	}
}

// TestStreamGroupsMatchRedis: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO answer as
// redis-server 7 does, byte for byte in RESP2 and RESP3 (times masked; 7.2's added consumer fields taken out):
// replies, errors and their order, entries-read and lag through deletions, deleted entries in a PEL.
func TestStreamGroupsMatchRedis(t *testing.T) {
	sameAsRedisGroups(t, []string{
		"XGROUP CREATE s g $", "XGROUP CREATE s g $ MKSTREAM", "XGROUP CREATE s g $ MKSTREAM",
		"XGROUP CREATE s g2 0 MKSTREAM foo", "XGROUP CREATE s g2 0 ENTRIESREAD -3", "XGROUP CREATE s g2 0 ENTRIESREAD x",
		"XGROUP CREATE s g2 bad", "XGROUP", "XGROUP foo", "XGROUP CREATE s", "XGROUP SETID s nog 0",
		"XGROUP SETID nokey nog 0", "XGROUP DESTROY nokey g", "XGROUP CREATECONSUMER nokey g c",
		"XGROUP CREATECONSUMER s nog c", "XGROUP CREATECONSUMER s g c", "XGROUP CREATECONSUMER s g c",
		"XGROUP DELCONSUMER s g c", "XGROUP DELCONSUMER s g c", "XGROUP SETID s g 5 ENTRIESREAD 3",
		"XGROUP SETID s g 5 ENTRIESREAD", "XGROUP SETID s g 5 foo 3", "XGROUP HELP", "XINFO HELP",
		"XADD s 1-1 a 1", "XADD s 2-1 b 2", "XADD s 3-1 c 3", "XADD s 4-1 d 4", "XINFO GROUPS s",
		"XGROUP SETID s g 0", "XINFO GROUPS s",
		"XREADGROUP GROUP g c1 COUNT 2 STREAMS s >", "XINFO GROUPS s",
		"XREADGROUP GROUP g c2 NOACK COUNT 1 STREAMS s >", "XREADGROUP GROUP g c2 STREAMS s >",
		"XREADGROUP GROUP g c2 STREAMS s >", "XREADGROUP GROUP g c1 STREAMS s 0", "XREADGROUP GROUP g c1 COUNT 1 STREAMS s 1-1",
		"XPENDING s g", "~XPENDING s g - + 10", "~XPENDING s g IDLE 0 - + 10 c1", "XPENDING s g - + 10 nobody",
		"~XPENDING s g (1-1 + 10", "~XPENDING s g - (4-1 1", "XPENDING s g - + 0", "XPENDING s g IDLE 99999999 - + 9",
		"XPENDING s g IDLE", "XPENDING s g - + x", "XPENDING s g IDLE x - + 1", "XPENDING s g - + 1 c 1",
		"XPENDING s g (18446744073709551615-18446744073709551615 + 1", "XPENDING s g - (0-0 1", "XPENDING s g bad + 1",
		"XPENDING nokey g - + 1", "XPENDING s nog",
		"XACK s g 2-1 2-1 9-9", "XACK s g bad", "XACK s nog bad", "XACK nokey g 1", "XPENDING s g",
		"XDEL s 1-1", "XREADGROUP GROUP g c1 STREAMS s 0", "XINFO GROUPS s", "~XINFO CONSUMERS s g",
		"XCLAIM s g c3 0 1-1 2-1 3-1 4-1 9-1 JUSTID", "XPENDING s g", "XCLAIM s g c3 0 3-1 RETRYCOUNT 5",
		"~XCLAIM s g c4 0 4-1 FORCE IDLE 5000", "~XPENDING s g - + 10", "XCLAIM s g c5 3600000 3-1",
		"XCLAIM s g c 0 1-1 foo", "XCLAIM s g c x 1-1", "XCLAIM s nog c x 1-1", "XCLAIM s g c 0 1-1 IDLE x",
		"XCLAIM s g c 0 1-1 LASTID bad", "XCLAIM s g c 0 1-1 LASTID 10-0 JUSTID", "XINFO GROUPS s",
		"XADD s 5-1 e 5", "XDEL s 2-1", "XAUTOCLAIM s g c6 0 - COUNT 1", "XAUTOCLAIM s g c6 0 - COUNT 1 JUSTID",
		"XAUTOCLAIM s g c6 0 0", "XAUTOCLAIM s g c 0 - COUNT 0", "XAUTOCLAIM s g c 0 bad", "XAUTOCLAIM s g c x -",
		"XAUTOCLAIM s g c 0 - foo", "XAUTOCLAIM s nog c 0 -", "XAUTOCLAIM s g c 3600000 -", "XPENDING s g",
		"~XINFO CONSUMERS s g", "XINFO CONSUMERS s nog", "XINFO CONSUMERS nokey g", "XINFO STREAM nokey",
		"XINFO STREAM s FULL COUNT", "XINFO STREAM s foo", "XINFO foo", "XINFO GROUPS", "XINFO STREAM s",
		"~XINFO STREAM s FULL", "~XINFO STREAM s FULL COUNT 1", "XGROUP DELCONSUMER s g c6", "XPENDING s g",
		"SET str x", "XINFO STREAM str", "XGROUP CREATE str g $", "XREADGROUP GROUP g c STREAMS str >",
		"XREADGROUP GROUP g c STREAMS s str > >", "XREADGROUP GROUP g c STREAMS s nokey > >",
		"XREADGROUP GROUP g c STREAMS s $", "XREADGROUP GROUP g c STREAMS s", "XREADGROUP GROUP g c STREAMS s bad",
		"XREADGROUP STREAMS s >", "XREADGROUP GROUP g c COUNT x STREAMS s >", "XREADGROUP GROUP g c BLOCK -1 STREAMS s >",
		"XREADGROUP GROUP g c foo STREAMS s >", "XREAD GROUP g c STREAMS s >", "XREAD STREAMS s >",
		"XACK str g 1-1", "XPENDING str g", "XCLAIM str g c 0 1-1", "XAUTOCLAIM str g c 0 0",
		"XGROUP DESTROY s g", "XGROUP DESTROY s g", "XINFO GROUPS s", "XINFO STREAM s",
		// lag and entries-read through trims, and a group created at $ of a stream emptied
		"XADD t 1-1 a 1", "XADD t 2-1 a 1", "XGROUP CREATE t g 0", "XGROUP CREATE t h $", "XGROUP CREATE t i 0 ENTRIESREAD 1",
		"XINFO GROUPS t", "XTRIM t MAXLEN 1", "XINFO GROUPS t", "XREADGROUP GROUP g c STREAMS t >", "XINFO GROUPS t",
		"XDEL t 2-1", "XINFO GROUPS t", "XINFO STREAM t", "XADD t 3-1 a 1", "XINFO GROUPS t",
		"XREADGROUP GROUP i c STREAMS t >", "XINFO GROUPS t", "~XINFO STREAM t FULL COUNT 0",
		// several streams: all are checked before any is read; in a script and in MULTI (where BLOCK does not wait)
		"XADD m1 1-1 a 1", "XADD m1 2-1 b 2", "XGROUP CREATE m1 g 0", "XREADGROUP GROUP g c STREAMS m1 m2 > >",
		"XREADGROUP GROUP g c COUNT 1 STREAMS m1 str > >", "XPENDING m1 g", "XINFO GROUPS m1",
		"EVAL return(redis.call('XREADGROUP','GROUP','g','c','COUNT','1','BLOCK','0','STREAMS',KEYS[1],'>')) 1 m1",
		"EVAL return(redis.call('XREADGROUP','GROUP','g','c3','COUNT','1','STREAMS',KEYS[1],'>')) 1 m1",
		"EVAL return(redis.call('XREADGROUP','GROUP','g','c3','STREAMS',KEYS[1],'0')) 1 m1",
		"MULTI", "XREADGROUP GROUP g c2 BLOCK 100 STREAMS m1 >", "XREADGROUP GROUP g c2 BLOCK 100 STREAMS m1 >", "EXEC",
		"XPENDING m1 g", "XADD m3 1-1 a 1", "XGROUP CREATE m3 g 0", "XREADGROUP GROUP g c STREAMS m1 m3 0 >",
		// a group command that changes nothing leaves a WATCH of the stream (one that writes fails it, where
		// Redis's do not: docs/resp.md)
		"WATCH m3", "XCLAIM m3 g c 3600000 1-1", "XAUTOCLAIM m3 g c 3600000 0", "XPENDING m3 g", "XACK m3 g 9-9",
		"XINFO STREAM m3", "MULTI", "PING", "EXEC", "WATCH m3", "XADD m3 2-1 b 2", "MULTI", "PING", "EXEC",
	})
}

// TestStreamGroupRecordsStayHidden: a stream's group records never show as entries (XRANGE, XREVRANGE with
// the largest ID present, XREAD, XLEN, trims), DEL removes them with the stream, RENAME and COPY carry them; the
// replies are redis-server's. Before entry scans stopped at the largest ID's key, XRANGE - + answered the group
// records as entries.
func TestStreamGroupRecordsStayHidden(t *testing.T) {
	sameAsRedisGroups(t, []string{
		"XADD s 1-1 a 1", "XADD s 18446744073709551615-18446744073709551615 z 26", "XGROUP CREATE s g 0",
		"XGROUP CREATE s h $", "XREADGROUP GROUP g c STREAMS s >", "XGROUP CREATECONSUMER s h d",
		"XRANGE s - +", "XREVRANGE s + - COUNT 1", "XREVRANGE s + -", "XREAD STREAMS s 0", "XLEN s", "TYPE s",
		"SCAN 0", "XRANGE s (1-1 +", "XDEL s 18446744073709551615-18446744073709551615", "XRANGE s - +",
		"XINFO GROUPS s", "RENAME s r", "EXISTS s", "XINFO GROUPS r", "XPENDING r g", "COPY r c", "XINFO GROUPS c",
		"XPENDING c g", "XTRIM c MAXLEN 0", "XLEN c", "XRANGE c - +", "XINFO GROUPS c", "XPENDING c g",
		"DEL r", "XADD r 5-5 f v", "XINFO GROUPS r", "XGROUP CREATE r g $", "XINFO GROUPS r", "XPENDING r g",
		"DEL c", "XGROUP CREATE c g $ MKSTREAM", "XLEN c", "XRANGE c - +", "XINFO GROUPS c",
	})
}

// TestXReadGroupBlocks: XREADGROUP BLOCK waits for XADD as redis-server does, and one that times out answers a
// null array; a blocked reader whose stream is deleted (DEL, UNLINK, FLUSHALL) or group destroyed is answered
// NOGROUP, and one whose key now holds another type (SET, or a transaction's DEL and SADD) WRONGTYPE, as Redis 7.2
// answers (it runs the command again; 7.0 answered "the stream key no longer exists").
func TestXReadGroupBlocks(t *testing.T) {
	steps := []transcriptStep{
		{"pub", "FLUSHALL", 1}, {"pub", "XGROUP CREATE s g $ MKSTREAM", 1},
		{"sub", "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", 0},
		{"pub", "XADD s 1-1 a 1", 1}, {"sub", "", 1},
		{"pub", "XPENDING s g", 1},
		{"sub", "XREADGROUP GROUP g c BLOCK 50 STREAMS s >", 1},
		{"sub", "XREADGROUP GROUP g c BLOCK 0 STREAMS s 0", 1}, // the history does not wait
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })

	ts := startServer(t, Options{}, 0)
	sub, pub := ts.raw(t), ts.raw(t)
	noGroup := "-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n"
	wrongType := "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	for _, c := range []struct{ end, want string }{{"DEL s", noGroup}, {"UNLINK s", noGroup},
		{"XGROUP DESTROY s g", noGroup}, {"FLUSHALL", noGroup}, {"SET s x", wrongType}, {"SADD s x", wrongType}} {
		pub.send(cmdRESP("DEL s"))
		pub.reply()
		pub.send(cmdRESP("XGROUP CREATE s g $ MKSTREAM"))
		pub.reply()
		sub.send(cmdRESP("XREADGROUP GROUP g c BLOCK 0 STREAMS s >"))
		time.Sleep(100 * time.Millisecond)
		if c.end == "SADD s x" { // in a transaction that deletes the stream first
			pub.send(cmdRESP("MULTI") + cmdRESP("DEL s") + cmdRESP(c.end) + cmdRESP("EXEC"))
			for range 4 {
				pub.reply()
			}
		} else {
			pub.send(cmdRESP(c.end))
			pub.reply()
		}
		if got := sub.reply(); got != c.want {
			t.Errorf("after %s: %q, want %q", c.end, got, c.want)
		}
	}
}

// groupNotifyScript runs the consumer-group commands whose keyspace events TestStreamGroupEvents checks.
const groupNotifyScript = `XGROUP CREATE gs g $ MKSTREAM
XGROUP CREATE gs h 0
XGROUP CREATECONSUMER gs g c1
XGROUP CREATECONSUMER gs g c1
XADD gs 1-1 f v
XREADGROUP GROUP g c2 STREAMS gs >
XREADGROUP GROUP g c2 STREAMS gs >
XGROUP SETID gs g 0
XCLAIM gs g c4 0 1-1
XCLAIM gs g c5 0 9-9
XAUTOCLAIM gs g c6 0 0
XACK gs g 1-1
XPENDING gs g
XGROUP DELCONSUMER gs g c1
XGROUP DELCONSUMER gs g nobody
XGROUP DESTROY gs h
XGROUP DESTROY gs h
XGROUP CREATE gs2 g $ MKSTREAM
XADD gs2 1-1 f v
XREADGROUP GROUP g c NOACK STREAMS gs2 >
XREADGROUP GROUP g c STREAMS gs2 0`

// TestStreamGroupEvents: the consumer-group commands send the keyspace events redis-server sends (run against
// it when installed), names, keys and order: xgroup-create (and new for MKSTREAM), xgroup-createconsumer from
// XGROUP, XREADGROUP, XCLAIM and XAUTOCLAIM, xgroup-setid, xgroup-delconsumer, xgroup-destroy; none for XACK.
func TestStreamGroupEvents(t *testing.T) {
	want := strings.Split("new gs|xgroup-create gs|xgroup-create gs|xgroup-createconsumer gs|xadd gs|"+
		"xgroup-createconsumer gs|xgroup-setid gs|xgroup-createconsumer gs|xgroup-createconsumer gs|"+
		"xgroup-delconsumer gs|xgroup-destroy gs|new gs2|xgroup-create gs2|xadd gs2|xgroup-createconsumer gs2", "|")
	plain := func(a []any) []any { return a }
	ts := startServer(t, Options{}, 0)
	compareEvents(t, runNotifyLines(t, ts.addr, groupNotifyScript, plain), want)
	if addr := startRedisServerIfAny(t); addr != "" {
		compareEvents(t, runNotifyLines(t, addr, groupNotifyScript, plain), want)
	}
}

// TestStreamGroupsMemoryUsage: MEMORY USAGE of a stream counts its groups' records (a group, its consumers and
// pending entries) with its entries, and what XGROUP DESTROY removed no longer.
func TestStreamGroupsMemoryUsage(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	do := func(line string) string {
		rc.send(cmdRESP(line))
		return rc.reply()
	}
	do("XADD s 1-1 field value")
	do("XADD s 2-1 field value")
	bare := do("MEMORY USAGE s")
	do("XGROUP CREATE s g 0")
	withGroup := do("MEMORY USAGE s")
	do("XREADGROUP GROUP g consumer STREAMS s >")
	withPending := do("MEMORY USAGE s")
	do("XGROUP DESTROY s g")
	after := do("MEMORY USAGE s")
	n := func(r string) int {
		var v int
		fmt.Sscanf(r, ":%d", &v)
		return v
	}
	if !(n(bare) > 0 && n(withGroup) > n(bare) && n(withPending) > n(withGroup) && n(after) == n(bare)) {
		t.Fatalf("MEMORY USAGE: stream %q, with a group %q, with 2 pending entries %q, group destroyed %q", bare, withGroup, withPending, after)
	}
}

// randomGroupScript is a random sequence of consumer-group commands over one stream, two groups and three
// consumers, whose replies Redis 7.0 and 7.2 give alike (consumers exist before they read; idle times 0 or an
// hour; times masked with "~").
func randomGroupScript(seed int64, n int) []string {
	r := rand.New(rand.NewSource(seed))
	lines := []string{"XGROUP CREATE s g1 $ MKSTREAM", "XGROUP CREATE s g2 0"}
	for _, g := range []string{"g1", "g2"} {
		for _, c := range []string{"c1", "c2", "c3"} {
			lines = append(lines, "XGROUP CREATECONSUMER s "+g+" "+c)
		}
	}
	next := 1
	id := func() string { return fmt.Sprintf("%d-1", 1+r.Intn(next+1)) }
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	for len(lines) < n {
		g, c := pick("g1", "g2"), pick("c1", "c2", "c3")
		switch r.Intn(16) {
		case 0, 1, 2:
			lines = append(lines, fmt.Sprintf("XADD s %d-1 f %d", next, next))
			next++
		case 3:
			lines = append(lines, "XDEL s "+id())
		case 4:
			lines = append(lines, fmt.Sprintf("XTRIM s MAXLEN %d", r.Intn(6)))
		case 5, 6, 7:
			lines = append(lines, fmt.Sprintf("XREADGROUP GROUP %s %s COUNT %d %sSTREAMS s %s", g, c, r.Intn(4),
				pick("", "NOACK "), pick(">", ">", "0", id())))
		case 8:
			lines = append(lines, "XACK s "+g+" "+id()+" "+id())
		case 9:
			lines = append(lines, "XCLAIM s "+g+" "+c+" "+pick("0", "3600000")+" "+id()+" "+id()+
				pick("", " JUSTID", " FORCE", " RETRYCOUNT 3", " LASTID "+id()))
		case 10:
			lines = append(lines, fmt.Sprintf("XAUTOCLAIM s %s %s %s %s COUNT %d%s", g, c, pick("0", "3600000"), id(),
				1+r.Intn(3), pick("", " JUSTID")))
		case 11:
			lines = append(lines, "XPENDING s "+g, "~XPENDING s "+g+" - + 10", "~XPENDING s "+g+" - + 10 "+c)
		case 12:
			lines = append(lines, "XINFO GROUPS s", "XINFO STREAM s", "~XINFO STREAM s FULL", "~XINFO CONSUMERS s "+g)
		case 13:
			lines = append(lines, "XGROUP SETID s "+g+" "+pick("$", id(), "0")+pick("", fmt.Sprintf(" ENTRIESREAD %d", r.Intn(4))))
		case 14:
			lines = append(lines, "XGROUP DELCONSUMER s "+g+" "+c, "XGROUP CREATECONSUMER s "+g+" "+c)
		case 15:
			lines = append(lines, "XGROUP DESTROY s "+g, "XGROUP CREATE s "+g+" "+pick("$", "0", id()))
			for _, c := range []string{"c1", "c2", "c3"} {
				lines = append(lines, "XGROUP CREATECONSUMER s "+g+" "+c)
			}
		}
	}
	return append(lines, "XINFO GROUPS s", "~XINFO STREAM s FULL COUNT 0", "XPENDING s g1", "XPENDING s g2")
}

// TestStreamGroupsRandomMatchRedis runs random sequences of group commands (deliveries, acknowledgements, claims,
// deletions and trims under them, SETID, consumers and groups deleted and made again) against redis-server and
// anykv, and requires the same replies: pending entries, delivery counts, cursors, entries-read and lag.
func TestStreamGroupsRandomMatchRedis(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { sameAsRedisGroups(t, randomGroupScript(seed, 250)) })
	}
}

// TestStreamGroupTimes: delivery, seen and active times are the batch's time (the test's clock), and answer as
// Redis 7.2 defines them: XPENDING's idle since the last delivery, XCLAIM's IDLE and TIME setting it; XINFO
// CONSUMERS' idle since the last attempt to read or claim (a consumer XREADGROUP made reading nothing among
// them, 7.2's) and inactive since the last read or claim that got something (-1: never); XINFO STREAM FULL's
// seen-time, active-time and delivery times as unix ms.
func TestStreamGroupTimes(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	now := ts.clock.Load()
	steps := []struct {
		cmd, want string
		advance   time.Duration
	}{
		{"XGROUP CREATE s g $ MKSTREAM", "+OK\r\n", 0},
		{"XREADGROUP GROUP g alice COUNT 1 STREAMS s >", "*-1\r\n", 100 * time.Millisecond},
		{"XINFO CONSUMERS s g", "*1\r\n*8\r\n$4\r\nname\r\n$5\r\nalice\r\n$7\r\npending\r\n:0\r\n$4\r\nidle\r\n:100\r\n$8\r\ninactive\r\n:-1\r\n", 0},
		{"XADD s 1-1 f v", "$3\r\n1-1\r\n", 0},
		{"XREADGROUP GROUP g alice COUNT 1 STREAMS s >", "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n", 250 * time.Millisecond},
		{"XREADGROUP GROUP g alice STREAMS s >", "*-1\r\n", 50 * time.Millisecond},
		{"XINFO CONSUMERS s g", "*1\r\n*8\r\n$4\r\nname\r\n$5\r\nalice\r\n$7\r\npending\r\n:1\r\n$4\r\nidle\r\n:50\r\n$8\r\ninactive\r\n:300\r\n", 0},
		{"XPENDING s g - + 10", "*1\r\n*4\r\n$3\r\n1-1\r\n$5\r\nalice\r\n:300\r\n:1\r\n", 0},
		{"XCLAIM s g bob 0 1-1 IDLE 1000 JUSTID", "*1\r\n$3\r\n1-1\r\n", 0},
		{"XPENDING s g - + 10", "*1\r\n*4\r\n$3\r\n1-1\r\n$3\r\nbob\r\n:1000\r\n:1\r\n", 0},
		{fmt.Sprintf("XCLAIM s g bob 0 1-1 TIME %d JUSTID", now+400-20), "*1\r\n$3\r\n1-1\r\n", 0},
		{"XPENDING s g - + 10", "*1\r\n*4\r\n$3\r\n1-1\r\n$3\r\nbob\r\n:20\r\n:1\r\n", 0},
		{"XPENDING s g IDLE 21 - + 10", "*0\r\n", 0},
		{fmt.Sprintf("XCLAIM s g bob 0 1-1 TIME %d JUSTID", now+10_000), "*1\r\n$3\r\n1-1\r\n", 0}, // the future: now
		{"XPENDING s g - + 10", "*1\r\n*4\r\n$3\r\n1-1\r\n$3\r\nbob\r\n:0\r\n:1\r\n", 0},
		{"XINFO STREAM s FULL", fmt.Sprintf("*18\r\n$6\r\nlength\r\n:1\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n"+
			"$17\r\nlast-generated-id\r\n$3\r\n1-1\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:1\r\n"+
			"$23\r\nrecorded-first-entry-id\r\n$3\r\n1-1\r\n$7\r\nentries\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"+
			"$6\r\ngroups\r\n*1\r\n*14\r\n$4\r\nname\r\n$1\r\ng\r\n$17\r\nlast-delivered-id\r\n$3\r\n1-1\r\n$12\r\nentries-read\r\n:1\r\n"+
			"$3\r\nlag\r\n:0\r\n$9\r\npel-count\r\n:1\r\n$7\r\npending\r\n*1\r\n*4\r\n$3\r\n1-1\r\n$3\r\nbob\r\n:%[1]d\r\n:1\r\n"+
			"$9\r\nconsumers\r\n*2\r\n*10\r\n$4\r\nname\r\n$5\r\nalice\r\n$9\r\nseen-time\r\n:%[2]d\r\n$11\r\nactive-time\r\n:%[3]d\r\n"+
			"$9\r\npel-count\r\n:0\r\n$7\r\npending\r\n*0\r\n*10\r\n$4\r\nname\r\n$3\r\nbob\r\n$9\r\nseen-time\r\n:%[1]d\r\n"+
			"$11\r\nactive-time\r\n:%[1]d\r\n$9\r\npel-count\r\n:1\r\n$7\r\npending\r\n*1\r\n*3\r\n$3\r\n1-1\r\n:%[1]d\r\n:1\r\n",
			now+400, now+350, now+100), 0},
	}
	for _, st := range steps {
		rc.send(cmdRESP(st.cmd))
		if got := rc.reply(); got != st.want {
			t.Errorf("%s (at +%d ms): %q\nwant %q", st.cmd, ts.clock.Load()-now, got, st.want)
		}
		ts.advance(st.advance)
	}
}

// TestXReadGroupPipelinedMatchesRedis: XREADGROUP's reply names its streams by the key it was sent, also when a
// command pipelined after it is parsed before the batch runs (difffuzz seed 5100000, --groups stream --pipeline:
// the reply named the stream by the next command's argument, the parser's argument slice being reused).
func TestXReadGroupPipelinedMatchesRedis(t *testing.T) {
	resp := func(cmds ...string) string {
		var b strings.Builder
		for _, c := range cmds {
			f := strings.Fields(c)
			fmt.Fprintf(&b, "*%d\r\n", len(f))
			for _, a := range f {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
		}
		return b.String()
	}
	steps := []transcriptStep{
		{"pub", "DEL s t", 1},
		{"pub", "XADD s 1-1 f a", 1},
		{"pub", "XADD t 2-1 f b", 1},
		{"pub", "XGROUP CREATE s g 0", 1},
		{"pub", "XGROUP CREATE t g 0", 1},
		{"pub", resp("XREADGROUP GROUP g c1 COUNT 2 STREAMS s >", "XREADGROUP GROUP g c2 STREAMS t s 0-0 1-0", "XREADGROUP GROUP g c1 STREAMS t s > 0", "PING"), 4},
		{"pub", resp("XREADGROUP GROUP g c1 STREAMS s 0", "XREADGROUP GROUP g c3 STREAMS nosuch 0", "XREADGROUP GROUP g c1 STREAMS t s x y"), 3},
		{"pub", "DEL s t", 1},
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })
}

// TestXReadGroupMaxIDIsNewEntriesMatchesRedis: XREADGROUP's ID 18446744073709551615-18446744073709551615 reads new
// entries as ">" does, as in Redis, whose parser marks ">" with that very ID (difffuzz seed 5100043, --groups stream:
// anykv read the consumer's history after it, always empty).
func TestXReadGroupMaxIDIsNewEntriesMatchesRedis(t *testing.T) {
	const max = "18446744073709551615-18446744073709551615"
	var steps []transcriptStep
	for _, line := range []string{"DEL s t", "XADD s 1-1 f a", "XADD t 1-1 f b", "XGROUP CREATE s g 0", "XGROUP CREATE t g 0",
		"XREADGROUP GROUP g c STREAMS s " + max, "XREADGROUP GROUP g c STREAMS s " + max, "XPENDING s g",
		"XREADGROUP GROUP g c STREAMS s 0", "XADD s 2-1 f c", "XREADGROUP GROUP g c2 COUNT 1 NOACK STREAMS t s " + max + " " + max,
		"XREADGROUP GROUP g c STREAMS t 18446744073709551615-18446744073709551614", "XPENDING s g", "DEL s t"} {
		steps = append(steps, transcriptStep{"pub", line, 1})
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })
}
