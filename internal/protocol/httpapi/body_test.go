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
	"syscall"
	"testing"
	"time"

	"anykv/internal/auth"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
)

// budgetServer serves the API over a memory store with request bodies counted in b.
func budgetServer(t *testing.T, b *membudget.Budget) string {
	t.Helper()
	return budgetServerOver(t, b, memstore.New(), 0)
}

// budgetServerOver is budgetServer over the engine e, with each connection's socket send buffer set to sndbuf
// bytes (SO_SNDBUF; the kernel doubles it and no longer tunes it) unless it is 0.
func budgetServerOver(t *testing.T, b *membudget.Budget, e engine.Engine, sndbuf int) string {
	t.Helper()
	s := kv.New(e, kv.Options{Limits: kv.Limits{MaxValue: 1 << 20}, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewUnstartedServer(New(s, Options{Budget: b, Metrics: metrics.New(s), Version: "test"}))
	if sndbuf > 0 {
		srv.Listener = sendBuffers{srv.Listener, sndbuf}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// sendBuffers sets the send buffer of each connection it accepts.
type sendBuffers struct {
	net.Listener
	size int
}

func (l sendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// bigServer is budgetServer under a 1 MiB budget with a 512 KiB value as key big of tables t and default (Active
// Cloud DB's /get reads default), the budget settled once the PUTs are answered; it returns the value too.
func bigServer(t *testing.T) (*membudget.Budget, string, []byte) {
	t.Helper()
	b := membudget.New(1<<20, nil)
	addr := budgetServer(t, b)
	val := bytes.Repeat([]byte("v"), 512<<10)
	putBig(t, addr, val, "t", "default")
	if u := settled(b); u != 0 {
		t.Fatalf("after the writes the budget holds %d bytes", u)
	}
	return b, addr, val
}

// putBig stores val as key big of each table through addr and returns the last PUT's ETag.
func putBig(t *testing.T, addr string, val []byte, tables ...string) string {
	t.Helper()
	var tag string
	for _, table := range tables {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/"+table+"/keys/big", bytes.NewReader(val))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT: %v %v", resp, err)
		}
		resp.Body.Close()
		tag = resp.Header.Get("ETag")
	}
	return tag
}

// settled waits for b to hold nothing and returns what it holds.
func settled(b *membudget.Budget) int64 {
	for i := 0; i < 200 && b.Used() != 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return b.Used()
}

// TestBodyBytesGoBackToTheBudget: every request gives back what its body took, also one whose client left
// while its handler waited for room. The account was closed by a callback on the request's context, which
// net/http cancels when the client leaves: the handler's reservation then landed on a closed account and those
// bytes stayed taken for good (a review), until the budget refused every client.
func TestBodyBytesGoBackToTheBudget(t *testing.T) {
	b := membudget.New(2<<20, nil)
	addr := budgetServer(t, b)
	form := "key=k&val=" + strings.Repeat("v", 200<<10)
	req := fmt.Sprintf("POST /put HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: %d\r\n\r\n%s", len(form), form)
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, strings.Replace(req, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1))
		io.ReadAll(c)
		c.Close()
	}
	if u := settled(b); u != 0 {
		t.Fatalf("the budget holds %d bytes after every request ended", u)
	}

	// Another client holds most of the budget and lets go half a second after it is evicted; meanwhile the form
	// request's reservation waits, and its client leaves.
	release := make(chan struct{})
	other := b.Open("resp other", func() { close(release) })
	if err := other.Reserve(1536 << 10); err != nil {
		t.Fatal(err)
	}
	go func() { <-release; time.Sleep(500 * time.Millisecond); other.Close() }()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, req)
	time.Sleep(100 * time.Millisecond)
	c.Close()
	time.Sleep(time.Second)
	if u := settled(b); u != 0 {
		t.Fatalf("the budget holds %d bytes after every request ended and the other client left", u)
	}
}

// TestGrowingBodyFitsTheBudgetOnce: a 900 KiB body, read into a buffer that doubles from 64 KiB, is stored under
// a 1 MiB budget. Each growth reserved the new buffer before giving back the old one: 512 KiB + 900 KiB at the
// last, and the PUT was refused (503) though the body fits.
func TestGrowingBodyFitsTheBudgetOnce(t *testing.T) {
	b := membudget.New(1<<20, nil)
	addr := budgetServer(t, b)
	val := strings.Repeat("v", 900<<10)
	req, err := http.NewRequest("PUT", "http://"+addr+"/v1/tables/default/keys/k", strings.NewReader(val))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "localhost:8080"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT of 900 KiB under a 1 MiB budget: %d %s", resp.StatusCode, body)
	}
	if u := settled(b); u != 0 {
		t.Fatalf("the budget holds %d bytes after the request ended", u)
	}
}

// downEngine fails every read as a datastore that refuses connections does.
type downEngine struct{ engine.Engine }

func (downEngine) Get(context.Context, string, []byte, int64) (engine.Item, error) {
	return engine.Item{}, fmt.Errorf("redis: %w", &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 6379}, Err: syscall.ECONNREFUSED})
}

// TestUnhealthyEngineShowsNoAddress: /healthz, which answers without the password, says the engine is
// unavailable and no more; with the password, the reason, without the datastore's address (it had both, to
// anyone: a review).
func TestUnhealthyEngineShowsNoAddress(t *testing.T) {
	s := kv.New(downEngine{memstore.New()}, kv.Options{SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	h := New(s, Options{Auth: auth.New("s3cret"), Version: "t"})
	for _, pw := range []string{"", "s3cret"} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = "localhost:8080"
		if pw != "" {
			req.Header.Set("Authorization", "Bearer "+pw)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != 503 || strings.Contains(body, "10.1.2.3") || (pw == "") != !strings.Contains(body, "refused") {
			t.Errorf("/healthz with password %q: %d %s", pw, rec.Code, body)
		}
	}
}

// TestRefusedReplyAbortsTheResponse: when --maxmemory-clients refuses a value a reply would carry, the request is
// answered 503 (the value's read is counted, before the reply begins) or, a reply once begun, cut off and the
// connection closed; never ended as if whole: a streamed page read as a complete 200 with the value missing, on a
// connection that went on (a review).
func TestRefusedReplyAbortsTheResponse(t *testing.T) {
	b := membudget.New(64<<20, nil)
	addr := budgetServer(t, b)
	req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/default/keys/big", strings.NewReader(strings.Repeat("v", 900<<10)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	b.SetLimit(512 << 10) // the 900 KB value does not fit
	for _, path := range []string{"/v1/tables/default/keys/big", "/v1/tables/default/keys?values=true"} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
		r, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err == nil {
			_, err = io.ReadAll(r.Body)
			r.Body.Close()
		}
		if err == nil && r.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s: status %d read whole, though the budget refused the value", path, r.StatusCode)
		}
		nc.Close()
	}
}
