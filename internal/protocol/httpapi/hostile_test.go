package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
	"anykv/internal/server"
)

// logRecorder keeps the levels and messages logged at warn and above.
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (l *logRecorder) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Level.String()+" "+r.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) records() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.recs...)
}

type liveServer struct {
	base    string
	addr    net.Addr
	metrics *metrics.Metrics
	counts  *server.Counts
	logs    *logRecorder
}

// startLive serves the API through package server on a real loopback listener.
func startLive(t *testing.T, o server.HTTPOptions) *liveServer {
	t.Helper()
	store := kv.New(memstore.New(), kv.Options{})
	logs := &logRecorder{}
	log := slog.New(logs)
	m := metrics.New(store)
	srv := server.New(log)
	addr, counts, err := srv.ListenHTTP("http", "127.0.0.1:0", New(store, Options{Metrics: m, Logger: log}), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	return &liveServer{base: "http://" + addr.String(), addr: addr, metrics: m, counts: counts, logs: logs}
}

// TestSlowBodiesDoNotStarveOthers: 50 clients each trickle a PUT body at one byte per 200 ms. A normal client's
// requests keep being answered promptly meanwhile, and every slow client is cut off by the body timeout (408)
// long before it would have finished.
func TestSlowBodiesDoNotStarveOthers(t *testing.T) {
	const slow = 50
	ls := startLive(t, server.HTTPOptions{MaxConns: 1000, HeaderTimeout: time.Second, BodyTimeout: time.Second})
	client := &http.Client{Timeout: 10 * time.Second}
	req, _ := http.NewRequest("PUT", ls.base+"/v1/tables/t/keys/k", strings.NewReader("v"))
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("put: %v %v", resp, err)
	}

	type outcome struct {
		status  string
		elapsed time.Duration
		sent    int
	}
	outcomes := make(chan outcome, slow)
	started := make(chan struct{}, slow)
	for i := range slow {
		go func() {
			c, err := net.Dial("tcp", ls.addr.String())
			if err != nil {
				outcomes <- outcome{status: err.Error()}
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			start := time.Now()
			fmt.Fprintf(c, "PUT /v1/tables/t/keys/slow%d HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n", i)
			started <- struct{}{}
			reply := make(chan string, 1)
			go func() {
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					line = "closed: " + err.Error()
				}
				reply <- line
			}()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for sent := 0; ; {
				select {
				case line := <-reply:
					outcomes <- outcome{status: strings.TrimSpace(line), elapsed: time.Since(start), sent: sent}
					return
				case <-tick.C:
					if _, err := c.Write([]byte("x")); err == nil {
						sent++
					}
				}
			}
		}()
	}
	for range slow {
		<-started
	}
	// While the slow clients hold their connections, a normal client is served.
	var worst time.Duration
	for i := 0; len(outcomes) < slow && i < 1000; i++ {
		start := time.Now()
		resp, err := client.Get(ls.base + "/v1/tables/t/keys/k")
		if err != nil {
			t.Fatalf("normal GET during the slow bodies: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("normal GET: %d", resp.StatusCode)
		}
		worst = max(worst, time.Since(start))
	}
	if worst > 2*time.Second {
		t.Errorf("a normal GET took %v while slow clients sent bodies", worst)
	}
	for range slow {
		o := <-outcomes
		// Cut off by the server: a 408, or the connection closed under it. Either way long before the 200 s the
		// body would take, and with at most about the timeouts' 2 s of it sent.
		if !strings.HasPrefix(o.status, "HTTP/1.1 408") && !strings.HasPrefix(o.status, "closed") {
			t.Errorf("slow client: %q after %v", o.status, o.elapsed)
		}
		if o.elapsed > 10*time.Second || o.sent >= 1000 {
			t.Errorf("slow client cut off only after %v (%d bytes)", o.elapsed, o.sent)
		}
	}
	t.Logf("worst normal GET %v", worst)
	for _, r := range ls.logs.records() {
		t.Errorf("logged: %s", r)
	}
}

// TestClaimedBodyLengthIsNotReserved: a PUT's head claiming a 60 MB body that never comes must not make the
// server set 60 MB aside (the audit: 20 such heads, 2 KB in all, held 1.3 GB until the body timeout).
func TestClaimedBodyLengthIsNotReserved(t *testing.T) {
	ls := startLive(t, server.HTTPOptions{MaxConns: 100, HeaderTimeout: 5 * time.Second, BodyTimeout: 5 * time.Second})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 4 {
		c, err := net.Dial("tcp", ls.addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT /v1/tables/t/keys/k%d HTTP/1.1\r\nHost: localhost\r\nContent-Length: 60000000\r\n\r\nx", i)
	}
	time.Sleep(300 * time.Millisecond) // the handlers are waiting for the rest of their bodies
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("4 heads claiming 60 MB bodies, 1 byte sent each, made the server allocate %d MB", grew>>20)
	}
}

// TestLimitAnswersJSON503: over --maxclients the API answers 503 in its JSON error shape, with Connection: close.
func TestLimitAnswersJSON503(t *testing.T) {
	ls := startLive(t, server.HTTPOptions{MaxConns: 1})
	held, err := net.Dial("tcp", ls.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fmt.Fprint(held, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if line, _ := bufio.NewReader(held).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("held connection: %q", line)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(ls.base + "/healthz")
	if err != nil {
		t.Fatalf("over the limit: %v", err)
	}
	defer resp.Body.Close()
	var body errorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || body.Error.Code != "unavailable" ||
		!strings.Contains(body.Error.Message, "max number of clients") || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("over the limit: %d close=%v %+v", resp.StatusCode, resp.Close, body)
	}
	if ls.counts.Rejected.Load() != 1 {
		t.Fatalf("rejected %d", ls.counts.Rejected.Load())
	}
}

// TestClientGoneIsNotAnError: a client that disconnects in the middle of its body is not a server failure: it is
// not logged at warn or error.
func TestClientGoneIsNotAnError(t *testing.T) {
	ls := startLive(t, server.HTTPOptions{})
	obs := ls.metrics.Command("http", "put")
	for i := range 3 {
		c, err := net.Dial("tcp", ls.addr.String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "PUT /v1/tables/t/keys/k HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nonly part")
		c.Close()
		deadline := time.Now().Add(10 * time.Second)
		for obs.Requests() < uint64(i+1) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling the handler's completion, not guessing its duration
		}
		if obs.Requests() < uint64(i+1) {
			t.Fatal("the handler did not finish")
		}
	}
	for _, r := range ls.logs.records() {
		t.Errorf("logged: %s", r)
	}
}
