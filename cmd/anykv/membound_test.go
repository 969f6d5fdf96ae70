package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// The hostile-client memory tests (issue 10): many connections each send the start of a huge request and
// stop. The server must stay within --maxmemory-clients plus its ordinary footprint, keep answering other
// clients, and give the memory back to the OS once those connections are gone.

const (
	mib        = 1 << 20
	testBudget = 256 * mib
	hogs       = 20
	hogSends   = 32 * mib // of a declared 64 MiB
	// rssHeadroom is what RSS may exceed the budget by. Buffers in use stay within the budget, but Go's
	// collector (GOGC=100) lets the heap grow to about twice what is live before it collects, so the
	// buffers of refused clients and those outgrown may add as much garbage again: a healthy server stays
	// under base + 2 × budget + 320 MiB (measured: base + 480–625 MiB, once base + 758 MiB in a loaded CI run
	// where the collector fell behind; without the budget, 1.3 GiB).
	rssHeadroom  = testBudget + 320*mib
	rssRecovered = 150 * mib // above the RSS before the load, once the hogs are gone
)

// rss reads a process's resident set size from /proc/<pid>/status.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := readRSS(pid)
	if err != nil {
		t.Skipf("cannot read the server's RSS: %v", err)
	}
	return n
}

func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// hog opens a connection, sends header and then hogSends bytes of data in 1 MiB writes, and keeps the
// connection open; it stops early when the server closes it. What the server answered is in replies.
type hog struct {
	c       net.Conn
	replies bytes.Buffer
	mu      sync.Mutex
}

// startHogs starts the hogs. sent is closed once every hog has sent its bytes or lost its connection;
// closeAll closes their connections.
func startHogs(t *testing.T, addr, header string) (hs []*hog, sent <-chan struct{}, closeAll func()) {
	t.Helper()
	var wg, writing sync.WaitGroup
	hs = make([]*hog, hogs)
	chunk := bytes.Repeat([]byte("x"), mib)
	for i := range hs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		h := &hog{c: c}
		hs[i] = h
		t.Cleanup(func() { c.Close() })
		wg.Add(2)
		writing.Add(1)
		go func() { // collect whatever the server says (the error before it closes the connection)
			defer wg.Done()
			var buf [4096]byte
			for {
				n, err := c.Read(buf[:])
				h.mu.Lock()
				h.replies.Write(buf[:n])
				h.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			defer writing.Done()
			if _, err := io.WriteString(c, header); err != nil {
				return
			}
			for sent := 0; sent < hogSends; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { writing.Wait(); close(done) }()
	closeAll = func() {
		for _, h := range hs {
			h.c.Close()
		}
		wg.Wait()
	}
	return hs, done, closeAll
}

// refused counts the hogs whose connection the server closed with a reply containing text.
func refused(hs []*hog, text string) int {
	n := 0
	for _, h := range hs {
		h.mu.Lock()
		if strings.Contains(h.replies.String(), text) {
			n++
		}
		h.mu.Unlock()
	}
	return n
}

// serveWhile checks that the other client gets answers (each within roundTrip's bound) until done.
func serveWhile(t *testing.T, done <-chan struct{}, other net.Conn, req, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		roundTrip(t, other, req, want)
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the hogs did not finish sending within 60 s")
		}
	}
}

// watchRSS samples the server's RSS until stop is closed and returns the highest seen.
func watchRSS(t *testing.T, pid int, stop <-chan struct{}) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if r, _ := readRSS(pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() int64 { <-done; return peak.Load() }
}

// waitRSSBelow polls until the server's RSS is under bound, failing after 30 s. The pages go back through Go's
// background scavenger, which is paced by CPU time: on a machine busy with the rest of the test suite it takes
// several seconds, and a shuffled run saw RSS still above 1.4 GiB after 30 s (requests still reading the value as
// the clients left made garbage after they closed). So past 15 s it asks the server for MEMORY PURGE (a
// collection that returns the freed pages at once): what is still over the bound after it is held, not garbage.
func waitRSSBelow(t *testing.T, s *servertest.Server, bound int64) {
	t.Helper()
	start := time.Now()
	purged := false
	for {
		r := rss(t, s.PID())
		if r < bound {
			t.Logf("RSS back to %d MiB (bound %d MiB) after %v", r/mib, bound/mib, time.Since(start).Round(time.Millisecond))
			return
		}
		if !purged && time.Since(start) > 15*time.Second {
			purged = true
			c, err := net.Dial("tcp", s.RESP)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c, "MEMORY PURGE\r\n", "+OK\r\n")
			c.Close()
			t.Logf("RSS %d MiB after 15 s (bound %d MiB): asked for MEMORY PURGE", r/mib, bound/mib)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("RSS still %d MiB 30 s after the connections closed, want under %d MiB", r/mib, bound/mib)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// roundTrip sends req on c and reads until the reply ends with want, within 2 s (a bound a healthy server
// meets with wide room even while other connections flood it).
func roundTrip(t *testing.T, c net.Conn, req, want string) {
	t.Helper()
	start := time.Now()
	c.SetDeadline(start.Add(2 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var got []byte
	for !bytes.HasSuffix(got, []byte(want)) {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatalf("%q: got %q, then %v after %v", req, got, err, time.Since(start))
		}
		got = append(got, b)
	}
}

// TestRESPBigBulksStayWithinBudget: 20 connections each send 16 MiB of a declared 64 MiB bulk. The request
// buffers of all connections together stay within --maxmemory-clients (the clients holding the most are
// closed with an error), another client is served meanwhile, and the memory goes back to the OS after.
func TestRESPBigBulksStayWithinBudget(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: budgetArgs(testBudget)})
	other, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	roundTrip(t, other, "SET small v\r\n", "+OK\r\n")
	hogsStayWithinBudget(t, s, s.RESP, other, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$67108864\r\n", "GET small\r\n", "$1\r\nv\r\n",
		"maxmemory-clients")
}

// hogsStayWithinBudget starts the hogs on addr, each sending hogHeader and then its data, and checks that
// other is served meanwhile (req answered want), that RSS stays within the budget with some of the hogs refused
// (their reply holds refusal), and that the memory goes back to the OS once they leave.
func hogsStayWithinBudget(t *testing.T, s *servertest.Server, addr string, other net.Conn, hogHeader, req, want, refusal string) {
	t.Helper()
	base := rss(t, s.PID())
	stop := make(chan struct{})
	peak := watchRSS(t, s.PID(), stop)
	hs, sent, closeAll := startHogs(t, addr, hogHeader)
	serveWhile(t, sent, other, req, want)
	close(stop)
	p := peak()
	n := refused(hs, refusal)
	t.Logf("RSS peak %d MiB from %d MiB; %d of %d clients refused", p/mib, base/mib, n, hogs)
	if p > base+testBudget+rssHeadroom {
		t.Fatalf("RSS reached %d MiB from %d MiB with a %d MiB budget", p/mib, base/mib, testBudget/mib)
	}
	if n == 0 { // 20 × 32 MiB do not fit 256 MiB: some clients must have been told so
		t.Fatal("no client was refused")
	}
	closeAll()
	waitRSSBelow(t, s, base+rssRecovered)
	roundTrip(t, other, req, want)
}

// budgetArgs sets --maxmemory-clients; ANYKV_TEST_NO_BUDGET=1 leaves it out, to run these tests against a
// binary without the bound and see them fail.
func budgetArgs(n int) []string {
	if os.Getenv("ANYKV_TEST_NO_BUDGET") != "" {
		return nil
	}
	return []string{"--maxmemory-clients", strconv.Itoa(n)}
}

// TestRESPQueryBufferLimit: a command that outgrows --client-query-buffer-limit gets an error and its
// connection is closed; a client sending commands under the limit meanwhile is unaffected.
func TestRESPQueryBufferLimit(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: []string{"--client-query-buffer-limit", strconv.Itoa(mib)}})
	big, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	other, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() { // the server stops reading at the limit: the rest of this write fails
		io.WriteString(big, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$2097152\r\n"+strings.Repeat("x", 2*mib)+"\r\n")
	}()
	val := strings.Repeat("v", 900<<10)
	roundTrip(t, other, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$5\r\nsmall\r\n$%d\r\n%s\r\n", len(val), val), "+OK\r\n")
	big.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(big)
	if want := "-ERR Protocol error: client query buffer limit reached (client-query-buffer-limit)\r\n"; string(got) != want {
		t.Fatalf("got %q (%v), want %q and the connection closed", got, err, want)
	}
	roundTrip(t, other, "STRLEN small\r\nEXISTS big\r\n", fmt.Sprintf(":%d\r\n:0\r\n", len(val)))
}

// TestMemcacheBigSetsStayWithinBudget: 20 memcached connections each send 32 MiB of a 64 MiB item (within
// -I). Their read buffers stay within --maxmemory-clients (the largest are refused with memcached's out of
// memory error), another client is served meanwhile, and the memory goes back to the OS after.
func TestMemcacheBigSetsStayWithinBudget(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true,
		Args: append(budgetArgs(testBudget), "--memcache-item-max", strconv.Itoa(64*mib))})
	other, err := net.Dial("tcp", s.Memcache)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	roundTrip(t, other, "set small 0 0 1\r\nv\r\n", "STORED\r\n")
	hogsStayWithinBudget(t, s, s.Memcache, other, "set big 0 0 67108864\r\n", "get small\r\n", "VALUE small 0 1\r\nv\r\nEND\r\n",
		"SERVER_ERROR out of memory reading request")
}

// TestMemcacheOversizedSetIsSwallowed: a set beyond the item size limit is refused at once and its data
// discarded as it arrives (as memcached swallows it), never buffered: 20 such connections sending 32 MiB
// each leave RSS where it was.
func TestMemcacheOversizedSetIsSwallowed(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true}) // -I 1 MiB
	other, err := net.Dial("tcp", s.Memcache)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	roundTrip(t, other, "set small 0 0 1\r\nv\r\n", "STORED\r\n")
	base := rss(t, s.PID())
	stop := make(chan struct{})
	peak := watchRSS(t, s.PID(), stop)
	hs, sent, closeAll := startHogs(t, s.Memcache, "set big 0 0 67108864\r\n")
	serveWhile(t, sent, other, "get small\r\n", "VALUE small 0 1\r\nv\r\nEND\r\n")
	close(stop)
	p := peak()
	t.Logf("RSS peak %d MiB from %d MiB", p/mib, base/mib)
	if p > base+64*mib {
		t.Fatalf("RSS reached %d MiB from %d MiB: the refused data was buffered", p/mib, base/mib)
	}
	if n := refused(hs, "SERVER_ERROR object too large for cache"); n != hogs {
		t.Fatalf("%d of %d clients were told their item is too large", n, hogs)
	}
	closeAll()
}

// TestHTTPBigBodiesStayWithinBudget: 20 HTTP connections each send 32 MiB of a declared 64 MiB body. Bodies
// count against --maxmemory-clients with RESP's and memcached's buffers: the largest are refused with 503,
// another client is served meanwhile, and the memory goes back to the OS after. Nothing counted them before:
// 20 such clients took 3.5 GB.
func TestHTTPBigBodiesStayWithinBudget(t *testing.T) {
	s := servertest.Start(t, servertest.Options{HTTP: true, Args: budgetArgs(testBudget)})
	other, err := net.Dial("tcp", s.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	host := "Host: " + s.HTTP + "\r\n"
	roundTrip(t, other, "PUT /v1/tables/default/keys/small HTTP/1.1\r\n"+host+"Content-Length: 1\r\n\r\nv", "}\n")
	get := "GET /v1/tables/default/keys/small HTTP/1.1\r\n" + host + "\r\n"
	roundTrip(t, other, get, "\r\n\r\nv")
	hogsStayWithinBudget(t, s, s.HTTP, other, "PUT /v1/tables/default/keys/big HTTP/1.1\r\n"+host+"Content-Length: 67108864\r\n\r\n",
		get, "\r\n\r\nv", "maxmemory-clients reached")
}
