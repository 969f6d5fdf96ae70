package redis

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientListLeavesOutClientsThatClosed: a client that closed its connection before another sends CLIENT LIST
// is not listed, though its connection's goroutine has not run since (held here before its read, as a busy
// machine holds it). Redis handles the close first; its obuf-limits test read such a line as its subscriber's
// and failed in CI. A client that is still connected and waiting is listed.
func TestClientListLeavesOutClientsThatClosed(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	hold := holdBeforeRead(t)

	a, b := ts.raw(t), ts.raw(t)
	b.send("*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n")
	id, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(b.reply(), ":")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	hold.target.Store(id)
	b.send("*1\r\n$4\r\nPING\r\n")
	b.reply()
	select {
	case <-hold.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("b's connection never came back to read")
	}
	list := func() string {
		a.send("*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n")
		return a.reply()
	}
	idField := "id=" + strconv.FormatInt(id, 10) + " "
	if got := list(); !strings.Contains(got, idField) {
		t.Fatalf("CLIENT LIST leaves out a client that is connected:\n%s", got)
	}
	b.c.(*net.TCPConn).Close()
	time.Sleep(50 * time.Millisecond) // the FIN on loopback
	if got := list(); strings.Contains(got, idField) {
		t.Fatalf("CLIENT LIST lists a client that closed its connection:\n%s", got)
	}
}

// TestClientListWaitsForClientsThatClosed: once CLIENT LIST leaves out a client that closed, the rest of the
// server has let it go too, as in Redis: here a tracking client's redirect target, whose connection's goroutine
// is held for 300 ms after its client closed. A write right after the CLIENT LIST reports the redirect broken;
// had CLIENT LIST answered at once, the target would still have been registered and the write told no one.
func TestClientListWaitsForClientsThatClosed(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	hold := holdBeforeRead(t)

	tr, x, w := ts.raw(t), ts.raw(t), ts.raw(t)
	tr.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	tr.reply()
	x.send("*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n")
	xid := strings.TrimSpace(strings.TrimPrefix(x.reply(), ":"))
	tr.send("CLIENT TRACKING ON REDIRECT " + xid + "\r\nGET d\r\n")
	if got := tr.reply() + tr.reply(); got != "+OK\r\n_\r\n" {
		t.Fatalf("tracking on, GET: %q", got)
	}
	id, _ := strconv.ParseInt(xid, 10, 64)
	hold.target.Store(id)
	x.send("PING\r\n")
	x.reply()
	<-hold.arrived
	x.c.(*net.TCPConn).Close()
	go func() { time.Sleep(300 * time.Millisecond); hold.free() }()
	w.send("CLIENT LIST\r\n")
	if got := w.reply(); strings.Contains(got, "id="+xid+" ") {
		t.Fatalf("CLIENT LIST lists a client that closed its connection:\n%s", got)
	}
	w.send("SET d 1\r\n")
	w.reply()
	tr.send("PING\r\n")
	if got := tr.reply(); !strings.Contains(got, "tracking-redir-broken") {
		t.Fatalf("the write after CLIENT LIST: %q, want the tracking-redir-broken push", got)
	}
}

// heldRead holds one connection's goroutine before its next read (testHookBeforeRead), as a busy machine may
// hold it: after target.Store(id), that connection's next read signals arrived and waits for release.
type heldRead struct {
	target  atomic.Int64
	arrived chan struct{}
	release chan struct{} // closed by the test or, at the latest, by its cleanup
	once    sync.Once
}

// holdBeforeRead installs a heldRead for the test; its cleanup removes the hook and releases a held goroutine.
func holdBeforeRead(t *testing.T) *heldRead {
	h := &heldRead{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	h.target.Store(-1)
	hook := func(id int64) {
		if id == h.target.Load() && h.target.CompareAndSwap(id, -1) {
			h.arrived <- struct{}{}
			<-h.release
		}
	}
	testHookBeforeRead.Store(&hook)
	t.Cleanup(func() { testHookBeforeRead.Store(nil); h.free() })
	return h
}

// free releases the held goroutine.
func (h *heldRead) free() { h.once.Do(func() { close(h.release) }) }
