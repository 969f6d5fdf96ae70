package httpapi

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
)

// budgetServer serves the API over a memory store with request bodies counted in b.
func budgetServer(t *testing.T, b *membudget.Budget) string {
	t.Helper()
	s := kv.New(memstore.New(), kv.Options{Limits: kv.Limits{MaxValue: 1 << 20}, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(New(s, Options{Budget: b, Metrics: metrics.New(s), Version: "test"}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
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
