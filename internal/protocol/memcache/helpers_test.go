package memcache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// fakeClock is a settable clock for kv.Options.Clock.
type fakeClock struct{ ms atomic.Int64 }

// clockStart is 2026-01-01T00:00:00Z, the fake clock's first reading.
const clockStart = 1767225600000

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(clockStart)
	return c
}

func (c *fakeClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// testServer is an in-process anykv serving memcached on a loopback port.
type testServer struct {
	store   *kv.Store
	h       *Handler
	clock   *fakeClock
	addr    string
	flushes *fakeTimers
}

type serverOpt func(*Options, *kv.Options)

// startServer runs a handler over memstore behind server.Server on 127.0.0.1:0 and shuts both down when the
// test ends, checking that shutdown is clean.
func startServer(t testing.TB, opts ...serverOpt) *testServer {
	t.Helper()
	return startServerOver(t, memstore.New(), opts...)
}

// startServerOver is startServer over the engine e.
func startServerOver(t testing.TB, e engine.Engine, opts ...serverOpt) *testServer {
	t.Helper()
	clock := newFakeClock()
	ko := kv.Options{Clock: clock.Now, SweepInterval: -1}
	mo := Options{}
	for _, o := range opts {
		o(&mo, &ko)
	}
	store := kv.New(e, ko)
	h := New(store, mo)
	timers := &fakeTimers{}
	h.afterFunc = timers.afterFunc
	srv := server.New(slog.New(slog.DiscardHandler))
	addr, counts, err := srv.Listen("memcache", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.SetConnCounts(counts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	return &testServer{store: store, h: h, clock: clock, addr: addr.String(), flushes: timers}
}

// realClock makes the store use the real time (for clients that compare against it).
func realClock(_ *Options, ko *kv.Options) { ko.Clock = nil }

// fakeTimers records delayed flush_all timers so tests fire them by hand.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) stopper {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{d: d, f: f}
	ft.timers = append(ft.timers, t)
	return t
}

// fire runs every timer that is not stopped and returns their delays.
func (ft *fakeTimers) fire() []time.Duration {
	ft.mu.Lock()
	ts := ft.timers
	ft.timers = nil
	ft.mu.Unlock()
	var ds []time.Duration
	for _, t := range ts {
		if !t.stopped {
			t.stopped = true
			ds = append(ds, t.d)
			t.f()
		}
	}
	return ds
}

// client is a raw connection that sends bytes and reads replies up to a sentinel.
type client struct {
	t   testing.TB
	c   net.Conn
	seq int
	buf []byte
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// roundTrip sends data, then a sentinel (an mg miss with a unique opaque), and returns every byte that came
// before the sentinel's reply.
func (cl *client) roundTrip(data []byte) []byte {
	cl.t.Helper()
	cl.seq++
	sentinel := fmt.Sprintf("EN O%d\r\n", 1000000+cl.seq)
	req := append(append([]byte{}, data...), fmt.Sprintf("mg __sync__ O%d\r\n", 1000000+cl.seq)...)
	if _, err := cl.c.Write(req); err != nil {
		cl.t.Fatal(err)
	}
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	tmp := make([]byte, 64<<10)
	for !bytes.HasSuffix(cl.buf, []byte(sentinel)) {
		n, err := cl.c.Read(tmp)
		cl.buf = append(cl.buf, tmp[:n]...)
		if err != nil {
			cl.t.Fatalf("reading replies: %v (got %q)", err, cl.buf)
		}
	}
	out := cl.buf[:len(cl.buf)-len(sentinel)]
	cl.buf = nil
	return out
}

// sendRaw sends data and reads until the server closes the connection or is idle for idle.
func (cl *client) sendRaw(data []byte, idle time.Duration) (out []byte, closed bool) {
	cl.t.Helper()
	if _, err := cl.c.Write(data); err != nil {
		cl.t.Fatal(err)
	}
	tmp := make([]byte, 64<<10)
	out = append(out, cl.buf...)
	cl.buf = nil
	for {
		cl.c.SetReadDeadline(time.Now().Add(idle))
		n, err := cl.c.Read(tmp)
		out = append(out, tmp[:n]...)
		if err == io.EOF {
			return out, true
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return out, false
		}
		if err != nil {
			return out, true // reset by peer counts as closed
		}
	}
}

// unescape turns a transcript's input into bytes: lines are joined and each ends with "\r\n", except a line
// ending in a lone backslash; escapes \r \n \t \0 \\ \xHH; \*N{s} repeats s N times.
func unescape(input string) ([]byte, error) {
	var out []byte
	for _, line := range strings.Split(input, "\n") {
		crlf := true
		for i := 0; i < len(line); i++ {
			ch := line[i]
			if ch != '\\' {
				out = append(out, ch)
				continue
			}
			if i+1 == len(line) {
				crlf = false
				break
			}
			i++
			switch line[i] {
			case 'r':
				out = append(out, '\r')
			case 'n':
				out = append(out, '\n')
			case 't':
				out = append(out, '\t')
			case '0':
				out = append(out, 0)
			case '\\':
				out = append(out, '\\')
			case 'x':
				if i+3 > len(line) {
					return nil, fmt.Errorf("short \\x in %q", line)
				}
				v, err := strconv.ParseUint(line[i+1:i+3], 16, 8)
				if err != nil {
					return nil, err
				}
				out = append(out, byte(v))
				i += 2
			case '*':
				end := strings.IndexByte(line[i:], '}')
				open := strings.IndexByte(line[i:], '{')
				if open < 0 || end < open {
					return nil, fmt.Errorf("bad \\* in %q", line)
				}
				n, err := strconv.Atoi(line[i+1 : i+open])
				if err != nil {
					return nil, err
				}
				out = append(out, bytes.Repeat([]byte(line[i+open+1:i+end]), n)...)
				i += end
			default:
				return nil, fmt.Errorf("unknown escape \\%c in %q", line[i], line)
			}
		}
		if crlf {
			out = append(out, '\r', '\n')
		}
	}
	return out, nil
}

// render shows reply bytes one reply line per text line: "\r\n" ends a line, other control bytes and
// backslashes are escaped, and output that does not end in "\r\n" ends with a lone backslash. Long runs of
// one byte are shortened to \*N{c}, the same notation unescape reads.
func render(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		ch := b[i]
		run := 1
		for i+run < len(b) && b[i+run] == ch {
			run++
		}
		if run >= 16 && ch >= 0x20 && ch < 0x7f && ch != '\\' {
			fmt.Fprintf(&sb, "\\*%d{%c}", run, ch)
			i += run - 1
			continue
		}
		switch {
		case ch == '\r' && i+1 < len(b) && b[i+1] == '\n':
			sb.WriteByte('\n')
			i++
		case ch == '\r':
			sb.WriteString(`\r`)
		case ch == '\n':
			sb.WriteString(`\n`)
		case ch == '\\':
			sb.WriteString(`\\`)
		case ch < 0x20 || ch >= 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, ch)
		default:
			sb.WriteByte(ch)
		}
	}
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\r\n")) {
		sb.WriteString("\\\n")
	}
	return sb.String()
}

// scriptConn is an in-memory net.Conn whose reads return the given chunks one by one, then EOF; writes are
// collected. It lets a test split the input exactly where it wants.
type scriptConn struct {
	chunks [][]byte
	out    bytes.Buffer
}

func (s *scriptConn) Read(p []byte) (int, error) {
	for len(s.chunks) > 0 && len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.chunks[0])
	s.chunks[0] = s.chunks[0][n:]
	return n, nil
}

func (s *scriptConn) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s *scriptConn) Close() error                { return nil }
func (s *scriptConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11211}
}
func (s *scriptConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (s *scriptConn) SetDeadline(time.Time) error      { return nil }
func (s *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (s *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// serveScript runs a fresh handler (memstore, fake clock) over a scriptConn fed with chunks and returns what
// it wrote.
func serveScript(chunks ...[]byte) []byte {
	clock := newFakeClock()
	store := kv.New(memstore.New(), kv.Options{Clock: clock.Now, SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{Version: "test", MaxItemSize: 4096})
	h.afterFunc = (&fakeTimers{}).afterFunc
	sc := &scriptConn{}
	for _, ch := range chunks {
		sc.chunks = append(sc.chunks, append([]byte(nil), ch...))
	}
	h.ServeConn(context.Background(), sc)
	return sc.out.Bytes()
}
