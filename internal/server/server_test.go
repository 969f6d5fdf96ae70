package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/auth"
)

// lineHandler answers each line with "ok <line>"; "panic" panics, "slow" tells entered it arrived and waits
// for release before answering, "stuck" waits for release without answering, and "auth" reports the client
// authenticated.
type lineHandler struct {
	entered chan struct{}
	release chan struct{}
}

func newLineHandler() *lineHandler {
	return &lineHandler{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *lineHandler) ServeConn(ctx context.Context, c net.Conn) {
	r := bufio.NewReader(c)
	for ctx.Err() == nil {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch strings.TrimSpace(line) {
		case "panic":
			panic("boom")
		case "slow":
			h.entered <- struct{}{}
			<-h.release
		case "auth":
			Authenticated(ctx)
		case "stuck": // as a wrong password waiting in the pacer: the handler does not notice its connection close
			<-h.release
		}
		c.Write([]byte("ok " + line))
	}
}

func (*lineHandler) Reject(c net.Conn) { c.Write([]byte("full\n")) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func dial(t *testing.T, addr net.Addr) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) string {
	t.Helper()
	c.Write([]byte(line + "\n"))
	got, _ := r.ReadString('\n')
	return strings.TrimSpace(got)
}

func TestLimitRejectAndPanicIsolation(t *testing.T) {
	s := New(quiet())
	addr, counts, err := s.Listen("line", "127.0.0.1:0", newLineHandler(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	c1, r1 := dial(t, addr)
	c2, r2 := dial(t, addr)
	if got := roundTrip(t, c1, r1, "a"); got != "ok a" {
		t.Fatalf("first connection: %q", got)
	}
	roundTrip(t, c2, r2, "b")
	_, r3 := dial(t, addr)
	if got, _ := r3.ReadString('\n'); got != "full\n" {
		t.Fatalf("third connection over the limit of 2 got %q", got)
	}
	if counts.Rejected.Load() != 1 || counts.Current.Load() != 2 {
		t.Fatalf("counts: rejected %d current %d", counts.Rejected.Load(), counts.Current.Load())
	}
	// A panicking handler closes only its own connection; the server keeps serving.
	c2.Write([]byte("panic\n"))
	if _, err := r2.ReadString('\n'); err == nil {
		t.Fatal("the panicking connection stayed open")
	}
	if got := roundTrip(t, c1, r1, "still"); got != "ok still" {
		t.Fatalf("other connection after a panic: %q", got)
	}
	c4, r4 := dial(t, addr)
	if got := roundTrip(t, c4, r4, "new"); got != "ok new" {
		t.Fatalf("new connection after a panic: %q", got)
	}
}

func TestShutdownFinishesInFlightRequest(t *testing.T) {
	s := New(quiet())
	h := newLineHandler()
	addr, _, err := s.Listen("line", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, addr)
	c.Write([]byte("slow\n"))
	<-h.entered // the handler is inside the slow request
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	for { // the shutdown has begun once the listener refuses new connections
		probe, err := net.Dial("tcp", addr.String())
		if err != nil {
			break
		}
		probe.Close()
		runtime.Gosched()
	}
	close(h.release)
	if got, _ := r.ReadString('\n'); got != "ok slow\n" {
		t.Fatalf("in-flight request during shutdown got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestAddressInUse(t *testing.T) {
	s := New(quiet())
	defer s.Shutdown(context.Background())
	addr, _, err := s.Listen("line", "127.0.0.1:0", newLineHandler(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Listen("line", addr.String(), newLineHandler(), 0); err == nil || !strings.Contains(err.Error(), "cannot listen on") {
		t.Fatalf("second listen on %s: %v", addr, err)
	}
}

// TestTotalLimitSpansListeners: the limit on all listeners' connections together refuses a connection on any
// listener once the others hold the room, even below that listener's own limit, and admits again when one
// leaves.
func TestTotalLimitSpansListeners(t *testing.T) {
	s := New(quiet())
	s.SetTotalLimit(3)
	a, _, err := s.Listen("a", "127.0.0.1:0", newLineHandler(), 10)
	if err != nil {
		t.Fatal(err)
	}
	b, countsB, err := s.Listen("b", "127.0.0.1:0", newLineHandler(), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	c1, r1 := dial(t, a)
	c2, r2 := dial(t, a)
	c3, r3 := dial(t, b)
	for i, c := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{c1, r1}, {c2, r2}, {c3, r3}} {
		if got := roundTrip(t, c.c, c.r, "x"); got != "ok x" {
			t.Fatalf("connection %d: %q", i+1, got)
		}
	}
	_, r4 := dial(t, b)
	if got, _ := r4.ReadString('\n'); got != "full\n" {
		t.Fatalf("fourth connection, over the total of 3, got %q", got)
	}
	if countsB.Rejected.Load() != 1 {
		t.Fatalf("listener b rejected %d", countsB.Rejected.Load())
	}
	c1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.total.Load() > 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c5, r5 := dial(t, b)
	if got := roundTrip(t, c5, r5, "y"); got != "ok y" {
		t.Fatalf("a connection after one left: %q", got)
	}
}

// TestTotalLimitFollowsTheOpenFileLimit: the room left for clients is the open-file limit less the engine's
// files, and never below minConnections.
func TestTotalLimitFollowsTheOpenFileLimit(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Skip("no RLIMIT_NOFILE here")
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
	ran := 0
	for _, c := range []struct{ files, want uint64 }{{engineFiles + 500, 500}, {engineFiles, minConnections}} {
		if c.files > saved.Max {
			continue
		}
		ran++
		rl := syscall.Rlimit{Cur: c.files, Max: saved.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Fatal(err)
		}
		if got := TotalLimit(); got != int(c.want) {
			t.Errorf("open-file limit %d: TotalLimit = %d, want %d", c.files, got, c.want)
		}
	}
	if ran == 0 {
		t.Skipf("the hard open-file limit (%d) is below what the cases set", saved.Max)
	}
}

// TestShutdownDoesNotWaitForeverForAHandler: a handler busy with work that no longer reads or writes its
// connection (here, one blocked on release) does not hold Shutdown past its context and closeGrace.
func TestShutdownDoesNotWaitForeverForAHandler(t *testing.T) {
	defer func(old time.Duration) { closeGrace = old }(closeGrace)
	closeGrace = 200 * time.Millisecond
	s := New(quiet())
	h := newLineHandler()
	defer close(h.release)
	addr, _, err := s.Listen("line", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := dial(t, addr)
	c.Write([]byte("slow\n"))
	<-h.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Shutdown with a handler still running answered nil")
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Shutdown took %v", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waiting for a busy handler after 10 s")
	}
}

// TestUnauthenticatedConnectionsYieldTheirSlots: while a password is required, connections that never
// authenticate kept every other client out at the limit (an audit filled --maxclients without the password). A
// connection arriving at a full limit now closes the oldest unauthenticated one and takes its place; an
// authenticated connection keeps its slot, and with every slot authenticated the limit refuses as before.
func TestUnauthenticatedConnectionsYieldTheirSlots(t *testing.T) {
	s := New(quiet())
	s.SetAuth(auth.New("secret"))
	addr, counts, err := s.Listen("line", "127.0.0.1:0", newLineHandler(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	authed, ra := dial(t, addr)
	if got := roundTrip(t, authed, ra, "auth"); got != "ok auth" {
		t.Fatalf("authenticating: %q", got)
	}
	idle1, r1 := dial(t, addr)
	roundTrip(t, idle1, r1, "hello") // served, never authenticates
	idle2, r2 := dial(t, addr)
	roundTrip(t, idle2, r2, "hello")
	for i := range 2 {
		c, r := dial(t, addr) // at the limit: the oldest unauthenticated connection makes room
		if got := roundTrip(t, c, r, "auth"); got != "ok auth" {
			t.Fatalf("connection %d at the full limit: %q, want it served", i+4, got)
		}
	}
	for i, r := range []*bufio.Reader{r1, r2} {
		if _, err := r.ReadString('\n'); err == nil {
			t.Errorf("unauthenticated connection %d stayed open", i+1)
		}
	}
	if got := roundTrip(t, authed, ra, "still"); got != "ok still" {
		t.Fatalf("the authenticated connection: %q", got)
	}
	if counts.Evicted.Load() != 2 {
		t.Fatalf("evicted %d, want 2", counts.Evicted.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for counts.Current.Load() > 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_, r := dial(t, addr) // every slot authenticated: refused
	if got, _ := r.ReadString('\n'); got != "full\n" {
		t.Fatalf("a connection over a limit of authenticated ones got %q", got)
	}
}

// TestEvictedHandlersAreBounded: an evicted connection's handler may run on for a while (a wrong password waits
// in the pacer), and evictions made room for new connections without limit meanwhile: an attack of 5,000
// connections sending a wrong password grew the server to 4,354 goroutines under --maxclients 20 (a review).
// Evictions stop while the connections still running reach twice the limit; past that a newcomer is refused.
func TestEvictedHandlersAreBounded(t *testing.T) {
	s := New(quiet())
	s.SetAuth(auth.New("secret"))
	h := newLineHandler()
	addr, counts, err := s.Listen("line", "127.0.0.1:0", h, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	defer close(h.release)
	for i := 0; i < 4; i++ { // two fill the limit, two more evict them; all four handlers stay stuck
		c, _ := dial(t, addr)
		c.Write([]byte("stuck\n"))
		deadline := time.Now().Add(5 * time.Second)
		for counts.Current.Load() < int64(i+1) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	_, r := dial(t, addr)
	if got, _ := r.ReadString('\n'); got != "full\n" {
		t.Fatalf("a connection with twice the limit's handlers running got %q, want it refused", got)
	}
	if counts.Evicted.Load() != 2 || counts.Current.Load() != 4 {
		t.Fatalf("evicted %d, running %d; want 2 and 4", counts.Evicted.Load(), counts.Current.Load())
	}
}
