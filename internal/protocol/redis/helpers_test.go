package redis

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// testServer is an in-process Redis listener over a memory engine with a clock the test moves.
type testServer struct {
	addr  string
	h     *Handler
	store *kv.Store
	clock atomic.Int64 // unix ms
}

func (ts *testServer) advance(d time.Duration) { ts.clock.Add(d.Milliseconds()) }

func startServer(t *testing.T, opts Options, maxConns int) *testServer {
	return startServerOver(t, memstore.New(), kv.Options{}, opts, maxConns)
}

// startServerOver is startServer over the engine e, with ko's other settings (Consistency, ...).
func startServerOver(t *testing.T, e engine.Engine, ko kv.Options, opts Options, maxConns int) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	ko.Clock, ko.Limits = func() time.Time { return time.UnixMilli(ts.clock.Load()) }, kv.Limits{MaxKey: 1024, MaxValue: 1 << 20}
	ts.store = kv.New(e, ko)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.Logger = log
	if opts.Settings == nil {
		opts.Settings = map[string]string{"engine": "memory", "maxclients": "100"}
	}
	h := New(ts.store, opts)
	ts.h = h
	srv := server.New(log)
	addr, counts, err := srv.Listen("resp", "127.0.0.1:0", h, maxConns)
	if err != nil {
		t.Fatal(err)
	}
	h.SetConnCounts(counts)
	ts.addr = addr.String()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		ts.store.Close()
	})
	return ts
}

func (ts *testServer) client(t *testing.T, o *goredis.Options) *goredis.Client {
	t.Helper()
	if o == nil {
		o = &goredis.Options{}
	}
	o.Addr = ts.addr
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn speaks RESP by hand, for exact reply bytes.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	prog *progressReader // nil for rawConns made around another reader
}

// progressReader reads from c; while on, each read may wait for wait (reply's 5 s), so that reply allows a long
// reply (a million SRANDMEMBER picks under -race on a loaded machine) as long as it keeps coming.
type progressReader struct {
	c    net.Conn
	on   bool
	wait time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	if p.on {
		p.c.SetReadDeadline(time.Now().Add(p.wait))
	}
	return p.c.Read(b)
}

func (ts *testServer) raw(t *testing.T) *rawConn { return dialRaw(t, ts.addr) }

// dialRaw connects a rawConn to addr.
func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &progressReader{c: c}
	return &rawConn{t: t, c: c, r: bufio.NewReader(p), prog: p}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(s)); err != nil {
		rc.t.Fatal(err)
	}
}

// reply reads one complete RESP value and returns its bytes. It fails once the server has sent nothing for 5 s.
func (rc *rawConn) reply() string {
	rc.t.Helper()
	return rc.replyWithin(5 * time.Second)
}

// replyWithin is reply for a server that may send nothing for up to d.
func (rc *rawConn) replyWithin(d time.Duration) string {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(d))
	if rc.prog != nil {
		rc.prog.on, rc.prog.wait = true, d
		defer func() { rc.prog.on = false }()
	}
	var b strings.Builder
	if err := readValue(rc.r, &b); err != nil {
		rc.t.Fatalf("reading reply: %v (so far %d bytes: %.200q)", err, b.Len(), b.String())
	}
	return b.String()
}

// closed reports whether the server closed the connection (after any pending bytes).
func (rc *rawConn) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rc.r.ReadByte()
	return err == io.EOF
}

func readValue(r *bufio.Reader, b *strings.Builder) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	n := 0
	if len(line) > 1 {
		for _, c := range line[1 : len(line)-2] {
			if c >= '0' && c <= '9' {
				n = n*10 + int(c-'0')
			}
		}
		if strings.HasPrefix(line[1:], "-") {
			n = -1
		}
	}
	switch line[0] {
	case '$', '=':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '~', '>':
		for i := 0; i < n; i++ {
			if err := readValue(r, b); err != nil {
				return err
			}
		}
	case '%':
		for i := 0; i < 2*n; i++ {
			if err := readValue(r, b); err != nil {
				return err
			}
		}
	}
	return nil
}
