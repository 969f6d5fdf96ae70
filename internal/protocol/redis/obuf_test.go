package redis

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/membudget"
	"anykv/internal/servertest"
)

// obufConfigTranscript sets client-output-buffer-limit well and badly, and reads it back.
func obufConfigTranscript(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	var out []string
	for _, v := range []string{"wrong number", "invalid_class 10mb 10mb 60", "master 10mb 10mb 60",
		"normal 10mbs 10mb 60", "replica 10mb 10mbs 60", "pubsub 10mb 10mb 60s", "pubsub 10mb 10mb -1",
		"normal 1 2 3 pubsub", "normal 1mb 2mb 60 replica 3mb 4mb 70 pubsub 5mb 6mb 80", "PUBSUB 1k 2kb +9",
		"slave 0 0 0", "", "normal 100 100 0  ", "pubsub 18446744073709551615 0 0", "pubsub 9223372036854775808 1 1",
		"pubsub 100000000000gb 99999999999999999999 0", "pubsub 1mb 2MB 4294967297", "pubsub 1 2 9999999999",
		"pubsub 0  0", "pubsub 1 2 +5", "normal 0 0 \t5", "normal 0 0 \n7", "pubsub 1 2 -0", "pubsub +1 2 3", "pubsub 1b 2B 3", "pubsub 1 2 3 normal 1k 2k"} {
		out = append(out, "SET "+v+" -> "+c.do("CONFIG", "SET", "client-output-buffer-limit", v))
		out = append(out, "GET -> "+c.do("CONFIG", "GET", "client-output-buffer-limit"))
	}
	return out
}

// TestObufConfigMatchesRedis: CONFIG SET and GET client-output-buffer-limit answer as redis-server 7's, the
// classes not named keeping their limits and a bad group refusing the whole value.
func TestObufConfigMatchesRedis(t *testing.T) {
	sameAsRedis(t, obufConfigTranscript)
}

// TestObufLimitsCutOffClients: a normal client whose replies pass the hard limit is closed without them; a
// subscriber that does not read is cut off at the pubsub class's hard limit, and at its soft limit once it stayed
// over it past the soft seconds with no more traffic; CLIENT LIST shows the subscriber's queue as omem.
func TestObufLimitsCutOffClients(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 100000 0 0")
	admin.expect("+OK\r\n", "SET", "big", strings.Repeat("x", 60000))
	small := ts.raw(t)
	if got := small.do("GET", "big"); len(got) < 60000 {
		t.Fatalf("a reply under the limit: %.40q", got)
	}
	big := ts.raw(t)
	big.send(respCmd("GET", "big") + respCmd("GET", "big")) // one run of replies: 120,000 bytes
	if !big.closed() {
		t.Fatal("a client whose replies passed the hard limit was answered")
	}
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")

	// Subscribers whose socket does not drain: a small receive buffer, never read.
	subscriber := func(name string) net.Conn {
		d := net.Dialer{Control: nil}
		c, err := d.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.(*net.TCPConn).SetReadBuffer(4096)
		c.Write([]byte(respCmd("CLIENT", "SETNAME", name) + respCmd("SUBSCRIBE", "ch")))
		for i := 0; !strings.Contains(admin.do("CLIENT", "LIST"), "name="+name+" "); i++ {
			if i == 500 {
				t.Fatalf("subscriber %s never listed", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return c
	}
	omem := func(name string) (int64, bool) {
		for _, line := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, "name="+name+" ") {
				_, v, _ := strings.Cut(line, " omem=")
				n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				return n, true
			}
		}
		return 0, false
	}
	msg := strings.Repeat("m", 10000)
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 300000 0 0")
	subscriber("hard")
	maxSeen := int64(0)
	for i := 0; ; i++ {
		admin.do("PUBLISH", "ch", msg)
		n, ok := omem("hard")
		if !ok {
			break
		}
		maxSeen = max(maxSeen, n)
		if i > 10000 {
			t.Fatalf("a subscriber with %d bytes queued against a hard limit of 300000 is still connected", n)
		}
	}
	if maxSeen == 0 || maxSeen >= 300000+obufGrace {
		t.Errorf("omem peaked at %d before the cut at 300000 (and the %d a client's own buffer holds)", maxSeen, obufGrace)
	}

	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 100000 2")
	subscriber("soft")
	for { // until the socket's buffers are full and the queue stays over the soft limit with no traffic
		admin.do("PUBLISH", "ch", msg)
		if n, ok := omem("soft"); !ok || n < 300000 {
			continue
		}
		time.Sleep(100 * time.Millisecond)
		if n, ok := omem("soft"); !ok || n >= 100000 {
			break
		}
	}
	over := time.Now()
	if _, ok := omem("soft"); !ok {
		t.Fatal("cut off at the soft limit at once")
	}
	for { // no more traffic: the soft limit's time alone ends it
		if _, ok := omem("soft"); !ok {
			break
		}
		if time.Since(over) > 8*time.Second {
			t.Fatal("a subscriber over the soft limit for 8 s, with 2 s allowed, is still connected")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestObufClosedSubscribersFreeTheirQueues: subscribers that went over the soft limit and then closed leave
// nothing behind: the soft limit's timer held each pusher, queue and all, for the soft seconds (a review: 20
// stalled subscribers closing left 190 MiB for a minute, a cycle at a time past maxclients).
func TestObufClosedSubscribersFreeTheirQueues(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 100kb 3600")
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	var subs []net.Conn
	for i := 0; i < 10; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(4096)
		c.Write([]byte(respCmd("SUBSCRIBE", "ch")))
		subs = append(subs, c)
	}
	for i := 0; !strings.Contains(admin.do("PUBSUB", "NUMSUB", "ch"), ":10\r\n"); i++ {
		if i == 500 {
			t.Fatal("the subscribers never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	msg := strings.Repeat("m", 64<<10)
	for i := 0; i < 160; i++ { // 10 MiB to each subscriber, none of which reads
		admin.do("PUBLISH", "ch", msg)
	}
	for _, c := range subs {
		c.Close()
	}
	for i := 0; strings.Count(admin.do("CLIENT", "LIST"), "id=") > 1; i++ {
		if i == 500 {
			t.Fatal("subscribers still listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if grew := int64(heap()) - int64(base); grew > 8<<20 {
		t.Fatalf("every subscriber is gone, yet the heap is %d MiB over what it was before they subscribed", grew>>20)
	}
}

// TestObufClassesAsRedis: the pubsub class holds only connections with subscriptions (one that unsubscribed from
// everything, or a RESP3 tracking client with a pusher, is a normal client, as in Redis); a limit counts only
// what a client's own reply buffer would not hold, so "normal 1 0 0" closes no client at its +OK; and the normal
// class counts a run's replies together: a pipeline or an EXEC whose replies pass the hard limit gets none of
// those past the MiB written at a time (a review found each point).
func TestObufClassesAsRedis(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 100kb 0 0")
	admin.expect("+OK\r\n", "SET", "big", strings.Repeat("x", 200<<10))
	answered := func(c *rawConn, what string) {
		t.Helper()
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.r.Peek(1); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	c := ts.raw(t)
	c.send(respCmd("SUBSCRIBE", "ch"))
	c.reply()
	c.send(respCmd("UNSUBSCRIBE", "ch"))
	c.reply()
	c.send(respCmd("GET", "big"))
	answered(c, "a client subscribed to nothing was cut off at the pubsub limit")
	c.reply()

	tr := ts.raw(t)
	tr.send(respCmd("HELLO", "3") + respCmd("CLIENT", "TRACKING", "on") + respCmd("GET", "k"))
	tr.reply()
	tr.reply()
	tr.reply()
	admin.expect("+OK\r\n", "SET", "k", "v") // an invalidation: the tracking client now writes through a pusher
	tr.reply()
	tr.send(respCmd("GET", "big"))
	answered(tr, "a RESP3 tracking client was cut off at the pubsub limit")
	tr.reply()

	admin.send(respCmd("CONFIG", "SET", "client-output-buffer-limit", "normal 1 0 0"))
	answered(admin, `CONFIG SET client-output-buffer-limit "normal 1 0 0" closed its own connection`)
	admin.reply()
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 200kb 0 0")
	admin.expect("+OK\r\n", "SET", "part", strings.Repeat("p", 50000))
	pipe := ts.raw(t)
	pipe.send(strings.Repeat(respCmd("GET", "part"), 10)) // 500 KB of replies in one run
	if !pipe.closed() {
		t.Error("a pipeline whose replies passed the normal hard limit was answered")
	}
	tx := ts.raw(t)
	tx.send(respCmd("MULTI") + strings.Repeat(respCmd("GET", "part"), 10) + respCmd("EXEC")) // one run: not even +OK
	if !tx.closed() {
		t.Error("an EXEC whose replies passed the normal hard limit was answered")
	}
	one := ts.raw(t)
	if got := one.do("GET", "part"); len(got) < 50000 {
		t.Errorf("a reply under the limit: %.40q", got)
	}

	// Replies written before a blocking command waits are the client's: the run after the wait counts alone (a
	// review: a BLPOP's reply counted with them, the client closed, the element it popped lost).
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 120kb 0 0")
	b := ts.raw(t)
	b.send(respCmd("GET", "part") + respCmd("GET", "part") + respCmd("BLPOP", "l", "0") + respCmd("GET", "part"))
	b.reply()
	b.reply()
	time.Sleep(100 * time.Millisecond)
	admin.expect(":1\r\n", "RPUSH", "l", "x")
	if got := b.reply(); got != "*2\r\n$1\r\nl\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP answered %q", got)
	}
	b.reply()
}

// TestObufHeldRunsStayWithinTheBudget: with a normal hard limit set, connections that ask for big replies and
// never read hold no more than without one: a run's replies still go out a MiB at a time, within the request
// budget (a review: holding a run's replies up to the limit took the heap 791 MiB up from 8 requests of 1.6 KB,
// with maxmemory-clients at 16 MiB).
func TestObufHeldRunsStayWithinTheBudget(t *testing.T) {
	ts := startServer(t, Options{Budget: membudget.New(16<<20, nil)}, 0)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 1gb 0 0")
	admin.expect("+OK\r\n", "SET", "big", strings.Repeat("x", 1<<20-64))
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	runtime.GC()
	base := heap()
	req := []byte(strings.Repeat(respCmd("GET", "big"), 80)) // 1.6 KB asking for 80 MiB
	for i := 0; i < 8; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.(*net.TCPConn).SetReadBuffer(4096)
		c.Write(req) // never read
	}
	peak := uint64(0)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		peak = max(peak, heap())
	}
	if grew := int64(peak) - int64(base); grew > 128<<20 {
		t.Fatalf("8 connections sending 1.6 KB each took the heap %d MiB up, with maxmemory-clients at 16 MiB", grew>>20)
	}
}

// A subscriber cut off at its limit is closed without waiting for it: a TLS Close sends close_notify first, which
// waits up to 5 s for a client that does not read, and held the pusher's lock, so every publisher to it waited.
func TestCutOffDoesNotHoldPublishers(t *testing.T) {
	certs := servertest.MakeCerts(t)
	cert, err := tls.LoadX509KeyPair(certs.Cert, certs.Key)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe() // synchronous: the client, which reads nothing, takes no byte
	defer b.Close()
	conn := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}})
	cli := tls.Client(b, &tls.Config{InsecureSkipVerify: true})
	go cli.Handshake()
	if err := conn.Handshake(); err != nil {
		t.Fatal(err)
	}
	lim := obufLimits{{}, {}, {hard: 1 << 10}}
	p := &pusher{conn: conn, lim: func() *obufLimits { return &lim }, state: &clientState{}, done: make(chan struct{}),
		log: slog.New(slog.DiscardHandler)}
	p.state.sub.Store(1)
	p.cond = sync.NewCond(&p.mu)
	delivered := make(chan struct{})
	go func() {
		for range 8 {
			p.Deliver("", "ch", bytes.Repeat([]byte("x"), 8<<10)) // past the hard limit and Redis's 16 KiB of grace
		}
		close(delivered)
	}()
	select {
	case <-delivered:
	case <-time.After(2 * time.Second):
		t.Fatal("publishing to a subscriber being closed waited for its Close")
	}
}
