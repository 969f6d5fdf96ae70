package redis

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// pauseWaits makes ts report each command that starts to wait for a pause.
func pauseWaits(ts *testServer) <-chan string {
	ch := make(chan string, 16)
	f := func(name string) { ch <- name }
	ts.h.pause.waiting.Store(&f)
	return ch
}

// TestClientPauseWrite: under CLIENT PAUSE WRITE a write waits (its client gets no error) while reads from
// other clients go on and do not see it; CLIENT UNPAUSE lets it run.
func TestClientPauseWrite(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waits := pauseWaits(ts)
	p, w, r := ts.raw(t), ts.raw(t), ts.raw(t)
	p.expect("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	w.send(respCmd("GET", "k") + respCmd("SET", "k", "v"))
	if got := w.reply(); got != "$-1\r\n" {
		t.Fatalf("GET before the paused SET: %q", got)
	}
	if name := <-waits; name != "set" {
		t.Fatalf("%s waits, want set", name)
	}
	r.expect("$-1\r\n", "GET", "k")
	r.send(respCmd("CLIENT", "LIST"))
	if got := r.reply(); !strings.Contains(got, "flags=b db=0") || !strings.Contains(got, "cmd=set ") {
		t.Errorf("CLIENT LIST does not show the waiting client blocked on set:\n%s", got)
	}
	r.expect("+OK\r\n", "CLIENT", "UNPAUSE")
	if got := w.reply(); got != "+OK\r\n" {
		t.Fatalf("the paused SET: %q", got)
	}
	r.expect("$1\r\nv\r\n", "GET", "k")
}

// TestClientPauseAll: ALL holds every command, the pausing client's own and CLIENT UNPAUSE included, as Redis
// 7 does; a monitoring connection is not paused and may lift it; a pause also ends by its timeout.
func TestClientPauseAll(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waits := pauseWaits(ts)
	p, o, mon := ts.raw(t), ts.raw(t), ts.raw(t)
	mon.send(respCmd("MONITOR"))
	mon.reply()
	p.expect("+OK\r\n", "CLIENT", "PAUSE", "100000")
	p.send(respCmd("PING"))
	o.send(respCmd("CLIENT", "UNPAUSE"))
	got := map[string]bool{<-waits: true, <-waits: true}
	if !got["ping"] || !got["client"] {
		t.Fatalf("waiting: %v, want ping and client", got)
	}
	mon.expect("+OK\r\n", "CLIENT", "UNPAUSE")
	if r := p.reply(); r != "+PONG\r\n" {
		t.Fatalf("the paused PING: %q", r)
	}
	if r := o.reply(); r != "+OK\r\n" {
		t.Fatalf("the paused CLIENT UNPAUSE: %q", r)
	}

	p.send(respCmd("CLIENT", "PAUSE", "1", "ALL") + respCmd("PING"))
	if r := p.reply() + p.reply(); r != "+OK\r\n+PONG\r\n" { // the read deadline bounds the wait
		t.Fatalf("a pause that times out: %q", r)
	}
}

// TestUnpauseRepliesBeforeTheResumedCommands: a monitor that lifts a pause gets its +OK before the lines of the
// commands the pause held, as in Redis, where they resume after the event loop's pass. Before the fix a held
// command's line came first in 3 of 40 runs of this test under -race (TestClientPauseAll failed so in CI once).
func TestUnpauseRepliesBeforeTheResumedCommands(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waits := make(chan string, 64)
	f := func(name string) { waits <- name }
	ts.h.pause.waiting.Store(&f)
	mon, p := ts.raw(t), ts.raw(t)
	mon.send(respCmd("MONITOR"))
	mon.reply()
	const held = 32
	cs := make([]*rawConn, held)
	for i := range cs {
		cs[i] = ts.raw(t)
	}
	for round := range 30 {
		p.expect("+OK\r\n", "CLIENT", "PAUSE", "100000")
		for _, c := range cs {
			c.send(respCmd("PING"))
		}
		for range held {
			<-waits
		}
		mon.send(respCmd("CLIENT", "UNPAUSE"))
		if r := mon.reply(); r != "+OK\r\n" {
			t.Fatalf("round %d: the monitor's CLIENT UNPAUSE answered %q after a resumed command's line", round, r)
		}
		for i, c := range cs {
			if r := c.reply(); r != "+PONG\r\n" {
				t.Fatalf("round %d: held PING %d: %q", round, i, r)
			}
		}
		for range held {
			if r := mon.reply(); !strings.Contains(r, `"PING"`) {
				t.Fatalf("round %d: monitor line %q, want a PING", round, r)
			}
		}
	}
}

// TestUnpauseDoesNotWaitForItsReader: CLIENT UNPAUSE from a client that has not read its replies yet (a slow
// reader, a full socket: net.Pipe has no kernel buffer) must still lift the pause at once, as in Redis. (Found
// by a review: the first version of the reply-first fix wrote every unpausing client's reply out first.)
func TestUnpauseDoesNotWaitForItsReader(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waits := pauseWaits(ts)
	p, w := ts.raw(t), ts.raw(t)
	p.expect("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	w.send(respCmd("SET", "k", "v"))
	<-waits
	srv, cli := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer cli.Close()
	go ts.h.ServeConn(ctx, srv)
	if _, err := cli.Write([]byte(respCmd("CLIENT", "UNPAUSE"))); err != nil { // its +OK is not read yet
		t.Fatal(err)
	}
	w.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, err := w.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("the paused SET after CLIENT UNPAUSE: %q %v (the pause waits for the unpausing client to read)", line, err)
	}
}

// TestClientPauseErrors: Redis 7's replies to bad arguments.
func TestClientPauseErrors(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.raw(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "PAUSE", "abc"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "-1"}, "-ERR timeout is negative\r\n"},
		{[]string{"CLIENT", "PAUSE", "10", "FOO"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"},
		{[]string{"CLIENT", "UNPAUSE"}, "+OK\r\n"},
	} {
		c.send(respCmd(tc.args...))
		if got := c.reply(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// expect sends one command and fails the test unless its reply is want.
func (rc *rawConn) expect(want string, args ...string) {
	rc.t.Helper()
	rc.send(respCmd(args...))
	if got := rc.reply(); got != want {
		rc.t.Fatalf("%v: %q, want %q", args, got, want)
	}
}
