package redis

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// obufConfigTranscript sets client-output-buffer-limit well and badly, and reads it back.
func obufConfigTranscript(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	var out []string
	for _, v := range []string{"wrong number", "invalid_class 10mb 10mb 60", "master 10mb 10mb 60",
		"normal 10mbs 10mb 60", "replica 10mb 10mbs 60", "pubsub 10mb 10mb 60s", "pubsub 10mb 10mb -1",
		"normal 1 2 3 pubsub", "normal 1mb 2mb 60 replica 3mb 4mb 70 pubsub 5mb 6mb 80", "PUBSUB 1k 2kb +9",
		"slave 0 0 0", "", "normal 100 100 0  "} {
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
	if maxSeen == 0 || maxSeen >= 300000 {
		t.Errorf("omem peaked at %d before the cut at 300000", maxSeen)
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
