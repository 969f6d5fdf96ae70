package redis

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestPushToAKilledBlockedClientKeepsTheElement: CLIENT KILL closes a blocked client's connection, and a push
// right after must stay in the list (Redis frees the client at once), not be popped for the killed client and
// lost (nor an XREADGROUP's entry go pending to it): the peek that passes over a departed client could not see a
// connection closed on the server's side, and the 200 ms tick noticed it only after the push (every round lost
// the element). As redis-server 7.0 (checked by hand).
func TestPushToAKilledBlockedClientKeepsTheElement(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	ctl := ts.raw(t)
	for round := 0; round < 5; round++ {
		for _, c := range []struct{ setup, block, push, count, want string }{
			{"", "BLPOP q 0", "RPUSH q job", "LLEN q", ":1\r\n"},
			{"", "BLMOVE q dst LEFT LEFT 0", "RPUSH q job", "LLEN q", ":1\r\n"},
			{"", "BZPOPMIN z 0", "ZADD z 1 job", "ZCARD z", ":1\r\n"},
			{"XGROUP CREATE s g $ MKSTREAM", "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "XADD s 1-1 f v", "XPENDING s g - + 10", "*0\r\n"},
		} {
			if c.setup != "" {
				ctl.send(c.setup + "\r\n")
				ctl.reply()
			}
			b := ts.raw(t)
			b.send("CLIENT ID\r\n")
			id := strings.TrimSpace(strings.TrimPrefix(b.reply(), ":"))
			b.send(c.block + "\r\n")
			waitParked(t, ts, 1)
			ctl.send("CLIENT KILL ID " + id + "\r\n")
			if r := ctl.reply(); r != ":1\r\n" {
				t.Fatalf("CLIENT KILL ID %s = %q", id, r)
			}
			ctl.send(c.push + "\r\n")
			ctl.reply()
			ctl.send(c.count + "\r\n")
			if r := ctl.reply(); r != c.want {
				t.Fatalf("round %d, %s killed, then %s: %s = %q, want %q (served to the killed client)", round, c.block, c.push, c.count, r, c.want)
			}
			ctl.send("DEL q z dst s\r\n")
			ctl.reply()
			waitUnregistered(t, ts, "the killed client is still registered")
		}
	}
}

// retryHold stops every woken blocked client before its retry (beforeRetry) until the test lets it go.
type retryHold struct {
	stopped chan struct{} // one receive per retry stopped, in the order the wakes reach them
	release chan struct{} // a send lets one stopped retry go
	freed   chan struct{} // closed by free: every retry goes through from then on
}

func holdRetries(t *testing.T) *retryHold {
	h := &retryHold{stopped: make(chan struct{}, 16), release: make(chan struct{}), freed: make(chan struct{})}
	beforeRetry = func() {
		select {
		case <-h.freed:
			return
		case h.stopped <- struct{}{}:
		}
		select {
		case <-h.release:
		case <-h.freed:
		}
	}
	t.Cleanup(func() { h.free(); beforeRetry = func() {} })
	return h
}

// next waits until a retry stops.
func (h *retryHold) next(t *testing.T) {
	t.Helper()
	select {
	case <-h.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("no woken client came to its retry")
	}
}

func (h *retryHold) free() {
	select {
	case <-h.freed:
	default:
		close(h.freed)
	}
}

// TestPushWhileAWokenClientRetriesReachesIt: A blocks on q1, B on q1 and q2. A push of one element to q1 serves
// A, then wakes B for q1; while B is on its way to its retry (which looks at q1 alone, the key that woke it), a
// push to q2 lands. B finds q1 empty and must be served q2's element, as Redis serves it (B is first in line for
// q2 once the push to q1 is done); B was unregistered between its wake and its retry, so the push to q2 woke
// nobody and B waited with q2 full.
func TestPushWhileAWokenClientRetriesReachesIt(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	hold := holdRetries(t)
	ctl, p1 := ts.raw(t), ts.raw(t)
	a, b := ts.raw(t), ts.raw(t)
	a.send("BLPOP q1 0\r\n")
	waitParked(t, ts, 1)
	b.send("BLPOP q1 q2 0\r\n")
	waitParked(t, ts, 2)
	p1.send("RPUSH q1 x\r\n") // waits for A's and B's tries
	hold.next(t)              // A
	hold.release <- struct{}{}
	if r := a.reply(); r != "*2\r\n$2\r\nq1\r\n$1\r\nx\r\n" {
		t.Fatalf("A = %q", r)
	}
	hold.next(t) // B, woken for q1
	ctl.send("RPUSH q2 y\r\n")
	time.Sleep(20 * time.Millisecond) // the push lands before B's retry
	hold.free()
	for _, p := range []*rawConn{p1, ctl} {
		if r := p.reply(); r != ":1\r\n" {
			t.Fatalf("RPUSH = %q", r)
		}
	}
	if r := b.replyWithin(3 * time.Second); r != "*2\r\n$2\r\nq2\r\n$1\r\ny\r\n" {
		t.Fatalf("B = %q, want q2's y", r)
	}
}

// TestPushWhileAWakeIsOnItsWayReachesIt: as TestPushWhileAWokenClientRetriesReachesIt, with q2 filled by a
// blocked BLMOVE (D, from src) while the wake for q1 still waits in B's channel (B held just after it parked):
// the BLMOVE's wake found the channel full and was dropped, and B's retry looked at q1 alone and waited with q2
// full. (A BLMOVE's wake does not wait for a client busy with another wake, which might wait for it.)
func TestPushWhileAWakeIsOnItsWayReachesIt(t *testing.T) {
	old := wakeWait
	wakeWait = 10 * time.Second
	t.Cleanup(func() { wakeWait = old })
	ts := startServer(t, Options{}, 0)
	ctl, p1 := ts.raw(t), ts.raw(t)
	a, b, d := ts.raw(t), ts.raw(t), ts.raw(t)
	a.send("BLPOP q1 0\r\n")
	waitBlocked(t, ts, 1)
	d.send("BLMOVE src q2 LEFT LEFT 0\r\n")
	waitBlocked(t, ts, 2)
	held, let := make(chan struct{}), make(chan struct{})
	hook := func() { close(held); <-let }
	testHookCounted.Store(&hook) // B, parked, stops before it waits
	t.Cleanup(func() { testHookCounted.Store(nil) })
	b.send("BLPOP q1 q2 0\r\n")
	<-held
	testHookCounted.Store(nil)
	p1.send("RPUSH q1 x\r\n") // serves A, then waits for B's try
	if r := a.reply(); r != "*2\r\n$2\r\nq1\r\n$1\r\nx\r\n" {
		t.Fatalf("A = %q", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !wakePending(ts) { // the wake for q1 is in B's channel
		if time.Now().After(deadline) {
			t.Fatal("B was not woken for q1")
		}
		time.Sleep(time.Millisecond)
	}
	ctl.send("RPUSH src y\r\n") // D moves y to q2
	if r := ctl.reply(); r != ":1\r\n" {
		t.Fatalf("RPUSH src y = %q", r)
	}
	if r := d.reply(); r != "$1\r\ny\r\n" {
		t.Fatalf("D = %q", r)
	}
	close(let)
	if r := p1.reply(); r != ":1\r\n" {
		t.Fatalf("RPUSH q1 x = %q", r)
	}
	if r := b.replyWithin(3 * time.Second); r != "*2\r\n$2\r\nq2\r\n$1\r\ny\r\n" {
		t.Fatalf("B = %q, want q2's y", r)
	}
}

// wakePending reports whether a blocked connection has a wake waiting in its channel.
func wakePending(ts *testServer) bool {
	w := &ts.h.waiters
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, bs := range w.m {
		for b := range bs {
			if len(b.ch) > 0 {
				return true
			}
		}
	}
	return false
}

// TestUnblockWhileAWokenClientRetries: CLIENT UNBLOCK reaches a client woken by a push before its retry. Either
// the unblock came first (it answers 1, the client its timeout reply, and the element stays) or the push did (the
// client is served and the unblock answers 0), as in Redis, where the two happen one after the other; anykv
// answered 1 and served the client too, so whoever unblocked it took it for a client that got nothing.
func TestUnblockWhileAWokenClientRetries(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	hold := holdRetries(t)
	ctl, p := ts.raw(t), ts.raw(t)
	for _, block := range []string{"BLPOP q 0", "BLMOVE q dst LEFT LEFT 0"} {
		b := ts.raw(t)
		b.send("CLIENT ID\r\n")
		id := strings.TrimSpace(strings.TrimPrefix(b.reply(), ":"))
		b.send(block + "\r\n")
		waitBlocked(t, ts, 1)
		p.send("RPUSH q x\r\n")
		hold.next(t)
		ctl.send("CLIENT UNBLOCK " + id + "\r\n")
		hold.release <- struct{}{}
		unblocked, got := ctl.reply(), b.reply()
		p.reply()
		ctl.send("LLEN q\r\n")
		left := ctl.reply()
		if !(unblocked == ":1\r\n" && got == "*-1\r\n" && left == ":1\r\n") && !(unblocked == ":0\r\n" && got != "*-1\r\n" && left == ":0\r\n") {
			t.Fatalf("%s, woken, then CLIENT UNBLOCK = %q; the client got %q, the list holds %s", block, unblocked, got, left)
		}
		ctl.send("DEL q dst\r\n")
		ctl.reply()
	}
}

// TestPushToABlockedClientThatSentMoreAndLeftKeepsTheElement: a client blocked in BLPOP sends another command
// and closes its connection; a push right after must stay in the list, as Redis frees the client when it reads
// the close. The peek that passes over a departed client saw the unread command, not the close behind it, and
// the element was popped for nobody (5 of 5 rounds).
func TestPushToABlockedClientThatSentMoreAndLeftKeepsTheElement(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	ctl := ts.raw(t)
	for round := 0; round < 5; round++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("BLPOP q 0\r\n"))
		waitParked(t, ts, 1)
		c.Write([]byte("PING\r\n"))
		c.Close()
		time.Sleep(10 * time.Millisecond) // the bytes and the FIN reach the server; its tick comes much later
		ctl.send("RPUSH q job\r\n")
		ctl.reply()
		ctl.send("LLEN q\r\n")
		if r := ctl.reply(); r != ":1\r\n" {
			t.Fatalf("round %d: LLEN q = %q after a push to a client that sent PING and left, want :1", round, r)
		}
		ctl.send("DEL q\r\n")
		ctl.reply()
		waitUnregistered(t, ts, "the departed client is still registered")
	}
}

// TestPushWhileAWokenClientRetriesServesItInItsTurn: A blocks on q1, B on q1 and q2, C on q2. A push to q1 serves
// A and wakes B for q1 (in vain: A took the element); while B is on its way to that retry, a push to q2 lands.
// B is first in line for q2 and is served its element, C waits on, as in Redis, where the two pushes happen one
// after the other (either way round, B gets q2's element). The push to q2 woke C at once, passing B over as
// busy, and C took the element.
func TestPushWhileAWokenClientRetriesServesItInItsTurn(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	hold := holdRetries(t)
	ctl, p1, p2 := ts.raw(t), ts.raw(t), ts.raw(t)
	a, b, c := ts.raw(t), ts.raw(t), ts.raw(t)
	a.send("BLPOP q1 0\r\n")
	waitParked(t, ts, 1)
	b.send("BLPOP q1 q2 0\r\n")
	waitParked(t, ts, 2)
	c.send("BLPOP q2 0\r\n")
	waitParked(t, ts, 3)
	p1.send("RPUSH q1 x\r\n")
	hold.next(t) // A
	hold.release <- struct{}{}
	if r := a.reply(); r != "*2\r\n$2\r\nq1\r\n$1\r\nx\r\n" {
		t.Fatalf("A = %q", r)
	}
	hold.next(t) // B, woken for q1
	p2.send("RPUSH q2 y\r\n")
	select {
	case <-hold.stopped:
		t.Fatal("the push to q2 woke C, after B in line, while B was busy")
	case <-time.After(200 * time.Millisecond):
	}
	hold.free()
	for _, p := range []*rawConn{p1, p2} {
		if r := p.reply(); r != ":1\r\n" {
			t.Fatalf("RPUSH = %q", r)
		}
	}
	if r := b.reply(); r != "*2\r\n$2\r\nq2\r\n$1\r\ny\r\n" {
		t.Fatalf("B = %q, want q2's y", r)
	}
	ctl.send("RPUSH q2 z\r\n")
	ctl.reply()
	if r := c.reply(); r != "*2\r\n$2\r\nq2\r\n$1\r\nz\r\n" {
		t.Fatalf("C = %q, want z", r)
	}
}
