package redis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestPubSubWithGoRedis: go-redis subscribers on channels and patterns, over RESP2 and RESP3, receive what
// another connection publishes, in order; PUBSUB introspects; unsubscribing stops delivery.
func TestPubSubWithGoRedis(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			sub := ts.client(t, &goredis.Options{Protocol: proto})
			pub := ts.client(t, &goredis.Options{Protocol: proto})
			ps := sub.Subscribe(ctx, "news")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil { // the confirmation
				t.Fatal(err)
			}
			if err := ps.PSubscribe(ctx, "n*"); err != nil {
				t.Fatal(err)
			}
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if n, err := pub.Publish(ctx, "news", fmt.Sprint("m", i)).Result(); err != nil || n != 2 {
					t.Fatalf("publish reached %d, %v", n, err)
				}
			}
			var got []string
			for len(got) < 6 {
				m, err := ps.ReceiveMessage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m.Pattern+"|"+m.Channel+"|"+m.Payload)
			}
			var plain, pat []string
			for _, g := range got {
				if strings.HasPrefix(g, "|") {
					plain = append(plain, g)
				} else {
					pat = append(pat, g)
				}
			}
			if fmt.Sprint(plain) != "[|news|m0 |news|m1 |news|m2]" || fmt.Sprint(pat) != "[n*|news|m0 n*|news|m1 n*|news|m2]" {
				t.Fatalf("received %v", got)
			}
			if chs := pub.PubSubChannels(ctx, "*").Val(); fmt.Sprint(chs) != "[news]" {
				t.Fatalf("PUBSUB CHANNELS = %v", chs)
			}
			if n := pub.PubSubNumSub(ctx, "news", "none").Val(); n["news"] != 1 || n["none"] != 0 {
				t.Fatalf("PUBSUB NUMSUB = %v", n)
			}
			if n := pub.PubSubNumPat(ctx).Val(); n != 1 {
				t.Fatalf("PUBSUB NUMPAT = %d", n)
			}
			if err := ps.Unsubscribe(ctx, "news"); err != nil {
				t.Fatal(err)
			}
			if err := ps.PUnsubscribe(ctx, "n*"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ { // both confirmations: the server has dropped both subscriptions
				if m, err := ps.Receive(ctx); err != nil {
					t.Fatal(err)
				} else if sub, ok := m.(*goredis.Subscription); !ok || !strings.HasSuffix(sub.Kind, "unsubscribe") {
					t.Fatalf("got %#v, want an unsubscribe confirmation", m)
				}
			}
			if n := pub.Publish(ctx, "news", "late").Val(); n != 0 {
				t.Fatalf("publish after unsubscribing reached %d", n)
			}
		})
	}
}

// TestSubscribedContext: a RESP2 connection with subscriptions may send only the pub/sub commands, PING (answered
// as a pong message) and QUIT/RESET, with Redis's error for anything else.
func TestSubscribedContext(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("SUBSCRIBE a b\r\nGET x\r\nPING\r\nUNSUBSCRIBE\r\nGET x\r\n"))
	want := "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n" +
		"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n" +
		"*2\r\n$4\r\npong\r\n$0\r\n\r\n" +
		"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n" +
		"$-1\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(bufio.NewReader(c), got); err != nil {
		t.Fatalf("read %q: %v", got, err)
	}
	if string(got) != want {
		t.Fatalf("replies\n%q\nwant\n%q", got, want)
	}
}

// TestSlowSubscriberIsDisconnected: a subscriber that never reads is cut off once its queue passes the pub/sub
// output limit, rather than growing the server's memory without end, and the heap grows by about the limit
// until then; publishing goes on.
func TestSlowSubscriberIsDisconnected(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("SUBSCRIBE slow\r\n")) // and never read again
	pub := ts.client(t, nil)
	for pub.PubSubNumSub(ctx, "slow").Val()["slow"] != 1 {
		runtime.Gosched()
	}
	msg := strings.Repeat("x", 1<<20)
	peak := heapPeak(func() {
		for i := 0; i < 2*pubsubLimit>>20 && pub.PubSubNumSub(ctx, "slow").Val()["slow"] == 1; i++ {
			if err := pub.Publish(ctx, "slow", msg).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if peak > 52<<20 { // 32-36 MiB; 71-73 MiB when the queue was one growing slice
		t.Errorf("the slow subscriber's queue took the heap %d MiB up, against a limit of %d MiB", peak>>20, pubsubLimit>>20)
	}
	deadline := time.Now().Add(10 * time.Second)
	for pub.PubSubNumSub(ctx, "slow").Val()["slow"] != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow subscriber is still subscribed")
		}
		runtime.Gosched()
	}
}

// TestConfirmedSubscriptionIsRegistered: once a client has the confirmation of its (P)SUBSCRIBE, a PUBLISH
// reaches it, as in Redis. The confirmation used to be written by the pusher before the broker registered the
// subscription, so a PUBLISH sent right after it could reach no one (TestPubSubWithGoRedis failed so, now and
// then; this test failed in two of three runs under -race without the fix).
func TestConfirmedSubscriptionIsRegistered(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	sub, pub := ts.raw(t), ts.raw(t)
	for i := 0; i < 3000; i++ {
		cmd := "SUBSCRIBE"
		if i%2 == 1 {
			cmd = "PSUBSCRIBE"
		}
		ch := fmt.Sprint("c", i)
		sub.send(fmt.Sprintf("%s %s\r\n", cmd, ch))
		sub.reply() // the confirmation
		pub.send(fmt.Sprintf("PUBLISH %s m\r\n", ch))
		if got := pub.reply(); got != ":1\r\n" {
			t.Fatalf("round %d: PUBLISH right after the %s confirmation reached %q subscribers, want 1", i, cmd, got)
		}
		sub.reply() // the message
	}
}

// shardTranscript runs sharded pub/sub (SSUBSCRIBE, SPUBLISH, SUNSUBSCRIBE, PUBSUB SHARDCHANNELS/SHARDNUMSUB)
// beside plain pub/sub on addr, in RESP2 and RESP3, and returns every reply's bytes in order.
func shardTranscript(t *testing.T, addr string) []string {
	return pubsubTranscript(t, addr, []transcriptStep{
		{"sub", "SSUBSCRIBE sa sb", 2}, {"sub", "SUBSCRIBE c", 1}, {"pub", "SPUBLISH sa hi", 1},
		{"pub", "PUBLISH sa plain", 1}, {"pub", "PUBSUB SHARDCHANNELS sa*", 1}, {"pub", "PUBSUB SHARDNUMSUB sa zz", 1},
		{"pub", "PUBSUB CHANNELS", 1}, {"sub", "", 1}, // the smessage SPUBLISH sent
		{"sub", "SUNSUBSCRIBE sa", 1}, {"sub", "SUNSUBSCRIBE", 1}, {"sub", "PING", 1}, {"sub", "UNSUBSCRIBE", 1},
		{"pub", "SPUBLISH sb gone", 1}, {"pub", "COMMAND GETKEYS SPUBLISH ch msg", 1},
	})
}

// pubsubTranscript runs steps over two fresh connections to addr, "sub" (in the protocol of the round) and
// "pub", once in RESP2 and once in RESP3, and returns every reply's bytes in order.
func pubsubTranscript(t *testing.T, addr string, steps []transcriptStep) []string {
	var out []string
	for _, proto := range []string{"2", "3"} {
		sub, pub := dialRaw(t, addr), dialRaw(t, addr)
		sub.send("HELLO " + proto + "\r\n")
		sub.reply()
		out = append(out, runSteps(proto, map[string]*rawConn{"sub": sub, "pub": pub}, steps)...)
		sub.c.Close()
		pub.c.Close()
	}
	return out
}

// sameAsRedis runs transcript against redis-server and against anykv and requires the same replies, byte for
// byte.
func sameAsRedis(t *testing.T, transcript func(t *testing.T, addr string) []string) {
	t.Helper()
	want := transcript(t, startRedisServer(t))
	ts := startServer(t, Options{}, 0)
	got := transcript(t, ts.addr)
	if len(got) != len(want) {
		t.Fatalf("%d replies, redis-server %d:\n%q\n%q", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reply %d: %q\nredis-server: %q", i, got[i], want[i])
		}
	}
}

// transcriptStep sends cmd (an inline command, or a RESP array when it starts with '*'; none when "") on the
// connection named conn and reads that many replies.
type transcriptStep struct {
	conn, cmd string
	replies   int
}

// runSteps runs steps over conns and returns each reply, prefixed with proto and the command.
func runSteps(proto string, conns map[string]*rawConn, steps []transcriptStep) []string {
	var out []string
	for _, st := range steps {
		rc := conns[st.conn]
		switch {
		case strings.HasPrefix(st.cmd, "*"):
			rc.send(st.cmd)
		case st.cmd != "":
			rc.send(st.cmd + "\r\n")
		}
		for i := 0; i < st.replies; i++ {
			out = append(out, proto+" "+strings.TrimSpace(st.cmd)+" -> "+rc.reply())
		}
	}
	return out
}

// TestShardedPubSubMatchesRedis: sharded pub/sub answers as redis-server 7 does, byte for byte: smessage
// pushes, confirmations counting shard channels apart from the others, PUBSUB SHARDCHANNELS and SHARDNUMSUB, and
// a namespace of its own (PUBLISH does not reach a shard subscriber). redis-py's tests of it all failed
// (unknown command) before.
func TestShardedPubSubMatchesRedis(t *testing.T) {
	sameAsRedis(t, shardTranscript)
}

// TestClientKillTypePubSub: CLIENT KILL TYPE pubsub closes the subscribers, shard channels' among them, as Redis
// does (it answered a syntax error: a review).
func TestClientKillTypePubSub(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	sub := dialRaw(t, ts.addr)
	sub.send("SSUBSCRIBE ch\r\n")
	sub.reply()
	rc := dialRaw(t, ts.addr)
	rc.send("CLIENT KILL TYPE pubsub\r\n")
	if got := rc.reply(); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL TYPE pubsub: %q", got)
	}
	if !sub.closed() {
		t.Fatal("the shard subscriber's connection stayed open")
	}
	rc.send("CLIENT KILL TYPE bogus\r\n")
	if got := rc.reply(); got != "-ERR Unknown client type 'bogus'\r\n" {
		t.Fatalf("CLIENT KILL TYPE bogus: %q", got)
	}
}

// TestQuitWhileSubscribedAnswers: a subscriber's QUIT is answered +OK before the connection closes, also when
// sent with its SUBSCRIBE, whose confirmation goes out too: the output queued for a subscriber was dropped when
// its connection ended (node-redis's quit() of a subscriber waited forever for the +OK).
func TestQuitWhileSubscribedAnswers(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	for _, sends := range [][]string{{"SUBSCRIBE y\r\n", "QUIT\r\n"}, {"SUBSCRIBE y\r\nQUIT\r\n"}, {"HELLO 3\r\nSSUBSCRIBE s\r\nQUIT\r\n"}} {
		rc := ts.raw(t)
		var got []string
		for _, s := range sends {
			rc.send(s)
			got = append(got, rc.reply())
		}
		for !strings.HasPrefix(got[len(got)-1], "+OK") {
			got = append(got, rc.reply())
		}
		if !rc.closed() {
			t.Errorf("%q: the connection stayed open after QUIT", sends)
		}
	}
}
