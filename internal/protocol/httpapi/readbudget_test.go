package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/membudget"
)

// TestBigReadsWaitForRoomInTheBudget: while other clients' replies fill the budget, a GET of a big value (an
// item, a page with values, Active Cloud DB's /get) waits for them, evicting no one, then answers with the
// value; the room it took goes back once the request ends. Before, the value was read uncounted and its reply,
// counted only as it was written, evicted the client holding the most (30 clients' GET of a 60 MiB value held
// 1.8 GB, none of it counted before the write).
func TestBigReadsWaitForRoomInTheBudget(t *testing.T) {
	b, addr, val := bigServer(t)
	for _, get := range []struct{ path, want string }{
		{"/v1/tables/t/keys/big", string(val)},
		{"/v1/tables/t/keys?values=true", `"value":"` + string(val[:100])},
		{"/get?key=big", `"big":"` + string(val[:100])},
	} {
		others := b.Open("others", func() { t.Errorf("%s evicted a client", get.path) }) // replies being written
		if err := others.Reserve(768 << 10); err != nil {
			t.Fatal(err)
		}
		const hold = 300 * time.Millisecond
		var heldWhileReading atomic.Int64
		go func() {
			time.Sleep(hold)
			heldWhileReading.Store(b.Used())
			others.Close()
		}()
		start := time.Now()
		getContaining(t, addr, get.path, get.want)
		if took := time.Since(start); took < hold {
			t.Fatalf("GET %s of 512 KiB ran in %v with 256 KiB of the budget free", get.path, took)
		}
		if h := heldWhileReading.Load(); h != 768<<10 {
			t.Fatalf("GET %s: while it waited the budget held %d bytes, want only the others' 768 KiB", get.path, h)
		}
		if u := settled(b); u != 0 {
			t.Fatalf("GET %s: after the reply the budget still holds %d bytes", get.path, u)
		}
		if n := b.Evictions(); n != 0 {
			t.Fatalf("GET %s: %d clients evicted", get.path, n)
		}
	}
}

// getContaining GETs path from addr and fails t unless it is answered 200 with a body containing want.
func getContaining(t *testing.T, addr, path, want string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("GET %s: %d, %d bytes, %v", path, resp.StatusCode, len(body), err)
	}
}

// TestBigWriteCountsWhatItsReadDidNot: a big reply whose values' reads reserved it already (prepaid) is written
// without a second count; one they did not (read uncounted) is counted as it is written, and a refusal aborts the
// response rather than dropping the bytes.
func TestBigWriteCountsWhatItsReadDidNot(t *testing.T) {
	b := membudget.New(64<<10, nil)
	acct := b.Open("reader", nil)
	defer acct.Close()
	reply := make([]byte, 128<<10)
	for _, prepaid := range []int{0, len(reply)} {
		rec := httptest.NewRecorder()
		rw := &respWriter{ResponseWriter: rec, routed: true, prepaid: prepaid, hold: func() *membudget.Account { return acct }}
		n, err := rw.Write(reply)
		if prepaid == 0 && (err == nil || !rw.aborted || rec.Body.Len() != 0) {
			t.Errorf("uncounted: wrote %d (%d recorded), %v, aborted %v; want refused by the 64 KiB budget", n, rec.Body.Len(), err, rw.aborted)
		}
		if prepaid > 0 && (err != nil || rw.aborted || rec.Body.Len() != len(reply) || b.Used() != 0) {
			t.Errorf("prepaid: wrote %d, %v, aborted %v, budget %d; want written, counted by its read alone", rec.Body.Len(), err, rw.aborted, b.Used())
		}
	}
}

// TestEvictedPrepaidReplyIsNotWritten: a reply whose values' reads reserved it (prepaid) is not written once
// its request was evicted meanwhile (the request held the most when another needed room, between its reads and
// its write): eviction only cuts a write short that is under way, so the write began after it went on for as
// long as its client did not read, holding the room the evicting client waited for. A reply counted as it is
// written is refused then (its reservation sees the eviction); a prepaid one must be too.
func TestEvictedPrepaidReplyIsNotWritten(t *testing.T) {
	b := membudget.New(1<<20, nil)
	acct := b.Open("reader", nil)
	defer acct.Close()
	reply := make([]byte, 768<<10)
	if err := acct.Reserve(len(reply)); err != nil { // the read of the value, as viewForReply reserves it
		t.Fatal(err)
	}
	other := b.Open("other", nil)
	defer other.Close()
	done := make(chan error, 1)
	go func() { done <- other.Reserve(512 << 10) }() // evicts the reader, the biggest holder, and waits for it
	for !acct.Evicted() {
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	rw := &respWriter{ResponseWriter: rec, routed: true, prepaid: len(reply), hold: func() *membudget.Account { return acct }}
	if _, err := rw.Write(reply); err == nil || !rw.aborted || rec.Body.Len() != 0 {
		t.Errorf("evicted: wrote %d bytes, %v, aborted %v; want the reply refused", rec.Body.Len(), err, rw.aborted)
	}
	acct.Close()
	if err := <-done; err != nil {
		t.Errorf("the evicting client: %v", err)
	}
}

// TestRequestBeingRunIsNotIdle: a request whose handler runs long (a PUT held in a slow engine, past the budget's
// idleEvict, holding its body's bytes) is being served, not idle: another client's GET waiting for room in
// maxmemory-clients does not evict it, and both are answered once the write is through. Before, it was evicted
// once the GET had waited idleEvict (10 s unless the budget's SetIdleEvict shortens it): the write was applied,
// and its reply (here ?return=old, the old value) was refused and the connection closed.
func TestRequestBeingRunIsNotIdle(t *testing.T) {
	const idle = 50 * time.Millisecond
	b := membudget.New(64<<20, nil)
	b.SetIdleEvict(idle)
	slow := &heldWrites{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	addr := budgetServerOver(t, b, slow, 0)
	old, other := bytes.Repeat([]byte("o"), 100<<10), bytes.Repeat([]byte("r"), 200<<10)
	putBig(t, addr, old, "slow")
	putBig(t, addr, other, "other")
	if u := settled(b); u != 0 {
		t.Fatalf("after the writes the budget holds %d bytes", u)
	}

	slow.held.Store(true)
	client := &http.Client{Timeout: 10 * time.Second}
	put := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/slow/keys/big?return=old", bytes.NewReader(make([]byte, 900<<10)))
		put <- send(client, req)
	}()
	<-slow.entered // the PUT is in the engine, its body's bytes held
	// The PUT's reply (the old value, 100 KiB) fits beside them; the GET of other (200 KiB) does not, and waits.
	b.SetLimit(b.Used() + 150<<10)
	get := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/tables/other/keys/big", nil)
		get <- send(client, req)
	}()
	time.Sleep(20 * idle)
	if b.Evictions() != 0 {
		t.Errorf("a client evicted while the GET waited %v (idleEvict %v)", 20*idle, idle)
	}
	close(slow.release)
	for _, r := range []struct {
		what string
		got  reply
		want []byte
	}{{"the slow PUT", <-put, old}, {"the waiting GET", <-get, other}} {
		if r.got.err != nil || r.got.status != http.StatusOK || !bytes.Equal(r.got.body, r.want) {
			t.Errorf("%s: %d, %d bytes, %v; want 200 and %d bytes", r.what, r.got.status, len(r.got.body), r.got.err, len(r.want))
		}
	}
	if b.Evictions() != 0 {
		t.Errorf("%d clients evicted", b.Evictions())
	}
}

// heldWrites, once held is set, holds every Apply until release is closed, telling entered as one arrives: writes
// slow in the engine.
type heldWrites struct {
	engine.Engine
	held             atomic.Bool
	entered, release chan struct{}
}

func (h *heldWrites) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if h.held.Load() {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Engine.Apply(ctx, b)
}

// reply is what send got: the status and the whole body, or the error that cut either short.
type reply struct {
	status int
	body   []byte
	err    error
}

func send(client *http.Client, req *http.Request) reply {
	resp, err := client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, body, err}
}

// TestStalledPageReaderIsEvicted: a client that stops reading a page of values streamed in small writes (values
// of control bytes, escaped sixfold, go out 32 KiB at a time) is idle once its write has not moved for the idle
// limit, and a GET waiting for the room its page's values hold evicts it and is answered. Before, only writes of
// 64 KiB or more could be cut short: such a page's request stayed busy (Serving) in a write that blocked for as
// long as its client lived, and the GET waited out its 30 s and failed. A client reading such a page slowly but
// steadily, for longer than the idle limit, is being served and is not evicted: each write marks it active as it
// begins (membudget's WriteReply), where before its reads of the values did last.
func TestStalledPageReaderIsEvicted(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate int // bytes/s the page's client reads, 0 for none
	}{{"stalled", 0}, {"steady", 2 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			const idle = time.Second
			b := membudget.New(64<<20, nil)
			b.SetIdleEvict(idle)
			addr := budgetServerOver(t, b, memstore.New(), 128<<10)
			val := bytes.Repeat([]byte{1}, 256<<10)
			for i := range 4 {
				k := fmt.Sprint("p", i)
				req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/page/keys/"+k, bytes.NewReader(val))
				if r := send(http.DefaultClient, req); r.err != nil || r.status != http.StatusCreated {
					t.Fatalf("PUT %s: %d %v", k, r.status, r.err)
				}
			}
			other := bytes.Repeat([]byte("r"), 512<<10)
			putBig(t, addr, other, "other")
			if u := settled(b); u != 0 {
				t.Fatalf("after the writes the budget holds %d bytes", u)
			}
			b.SetLimit(1<<20 + 256<<10) // the page's four values fit; the GET's 512 KiB beside them do not

			// The page: 1 MiB of values (a page's most), some 6 MiB of JSON, much more than the sockets buffer (the
			// server's send buffer set to 256 KiB): read at 2 MiB/s, its writes go on for some 3 s, none waiting
			// more than a tenth of a second.
			c := rawHTTP(t, addr, "GET /v1/tables/page/keys?values=true HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
			c.(*net.TCPConn).SetReadBuffer(32 << 10)
			holdsAtLeast(t, b, 1<<20, "the page's values")
			page := make(chan int64, 1)
			if tc.rate > 0 {
				go func() {
					c.SetReadDeadline(time.Now().Add(20 * time.Second))
					n, buf := int64(0), make([]byte, 16<<10)
					for {
						m, err := c.Read(buf)
						n += int64(m)
						if err != nil { // (io.EOF once the page is out: Connection: close)
							break
						}
						time.Sleep(time.Duration(m) * time.Second / time.Duration(tc.rate))
					}
					page <- n
				}()
			}
			req, _ := http.NewRequest("GET", "http://"+addr+"/v1/tables/other/keys/big", nil)
			if r := send(&http.Client{Timeout: 10 * time.Second}, req); r.err != nil || r.status != http.StatusOK || !bytes.Equal(r.body, other) {
				t.Errorf("the waiting GET: %d, %d bytes, %v; want 200 and its 512 KiB", r.status, len(r.body), r.err)
			}
			if tc.rate == 0 {
				if e := b.Evictions(); e != 1 {
					t.Errorf("%d clients evicted, want the stalled reader", e)
				}
				return
			}
			if n := <-page; n < 6<<20 {
				t.Errorf("the steady reader got %d bytes of its page, want over 6 MiB", n)
			}
			if e := b.Evictions(); e != 0 {
				t.Errorf("%d clients evicted, want none", e)
			}
		})
	}
}

// TestSlowBodyIsNotIdle: a body sent slowly but steadily, for longer than the idle limit, is not idle: a GET
// waiting for room in maxmemory-clients does not evict the PUT sending it, and both are answered. Before, the body
// marked its request active only as its buffer grew (at each doubling), so the second half of a 1 MiB body sent
// over more than the limit looked idle, and the waiting GET closed it mid-body.
func TestSlowBodyIsNotIdle(t *testing.T) {
	const idle = 500 * time.Millisecond
	b := membudget.New(64<<20, nil)
	b.SetIdleEvict(idle)
	addr := budgetServer(t, b)
	other := bytes.Repeat([]byte("r"), 512<<10)
	putBig(t, addr, other, "other")
	if u := settled(b); u != 0 {
		t.Fatalf("after the write the budget holds %d bytes", u)
	}
	b.SetLimit(1<<20 + 256<<10) // the body's 1 MiB fits; the GET's 512 KiB beside it do not

	const size = 1 << 20
	c := rawHTTP(t, addr, fmt.Sprintf("PUT /v1/tables/t/keys/slow HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", size))
	chunk := bytes.Repeat([]byte("s"), 32<<10)
	for sent := 0; sent < size/2; sent += len(chunk) { // the first half at once: the buffer holds 1 MiB from there
		c.Write(chunk)
	}
	holdsAtLeast(t, b, size, "the body")
	get := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/tables/other/keys/big", nil)
		get <- send(&http.Client{Timeout: 10 * time.Second}, req)
	}()
	// The second half over some 1.6 s, three times the idle limit: 16 KiB every 50 ms, a tenth of the limit, so a
	// sender or server held up by a loaded machine for a few times that still shows progress within it.
	for sent, piece := size/2, chunk[:16<<10]; sent < size; sent += len(piece) {
		time.Sleep(50 * time.Millisecond)
		if _, err := c.Write(piece); err != nil {
			t.Fatalf("the slow PUT's body, %d bytes in: %v", sent, err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 201") {
		t.Errorf("the slow PUT: %q, %v; want 201", status, err)
	}
	if r := <-get; r.err != nil || r.status != http.StatusOK || !bytes.Equal(r.body, other) {
		t.Errorf("the waiting GET: %d, %d bytes, %v; want 200 and its 512 KiB", r.status, len(r.body), r.err)
	}
	if e := b.Evictions(); e != 0 {
		t.Errorf("%d clients evicted", e)
	}
}

// rawHTTP opens a connection to addr, closed when the test ends, and sends head (a request's head, and its
// body's start if any).
func rawHTTP(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// holdsAtLeast waits up to 5 s for b to hold n bytes, what holds them, and fails the test if it does not.
func holdsAtLeast(t *testing.T, b *membudget.Budget, n int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); b.Used() < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if u := b.Used(); u < n {
		t.Fatalf("%s hold %d bytes, want %d", what, u, n)
	}
}

// TestEvictedRequestStillAnswers: a PUT evicted while its handler runs (another client's request buffer needed
// the room: Reserve evicts the biggest holder, running or not) is still applied, and its small reply (201 and the
// version) goes out, bounded by the eviction's write deadline, as before small writes went through the budget's
// path: the client learns the outcome of a write that was applied instead of a closed connection.
func TestEvictedRequestStillAnswers(t *testing.T) {
	b := membudget.New(64<<20, nil)
	slow := &heldWrites{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	addr := budgetServerOver(t, b, slow, 0)
	slow.held.Store(true)
	put := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/t/keys/k", bytes.NewReader(make([]byte, 900<<10)))
		put <- send(&http.Client{Timeout: 10 * time.Second}, req)
	}()
	<-slow.entered // the PUT is in the engine, its body's 900 KiB held
	b.SetLimit(b.Used() + 100<<10)
	other := b.Open("other", nil)
	defer other.Close()
	done := make(chan error, 1)
	go func() { done <- other.Reserve(200 << 10) }() // evicts the PUT, the biggest holder
	for b.Evictions() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(slow.release)
	if r := <-put; r.err != nil || r.status != http.StatusCreated {
		t.Errorf("the evicted PUT, applied: %d %q, %v; want 201", r.status, r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Errorf("the evicting client: %v", err)
	}
	if it, err := slow.Engine.Get(t.Context(), "t", []byte("k"), 0); err != nil || len(it.Value) != 900<<10 {
		t.Errorf("the PUT's item: %d bytes, %v", len(it.Value), err)
	}
}
