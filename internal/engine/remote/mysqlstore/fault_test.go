package mysqlstore

import (
	"bytes"
	"context"
	"errors"
	"net"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

// cutProxy forwards TCP connections to a server. Once armed, it passes the next client query holding COMMIT on
// and then drops the client's connection at the first byte of the answer, while it lets the server finish every
// statement of the query on its own connection (done is closed then): the commit ran, but the client cannot know.
type cutProxy struct {
	armed atomic.Bool
	done  chan struct{}
}

func startCutProxy(t *testing.T, target string) (*cutProxy, string) {
	p := &cutProxy{done: make(chan struct{})}
	return p, remotetest.Proxy(t, target, p.serve)
}

func (p *cutProxy) serve(c, s net.Conn) {
	var cut atomic.Bool
	go func() { // server to client
		defer c.Close()
		defer s.Close()
		buf := make([]byte, 64<<10)
		var held []byte // the answer to the cut query, never passed on
		for {
			n, err := s.Read(buf)
			if err != nil {
				return
			}
			if !cut.Load() {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
				continue
			}
			c.Close()
			if held = append(held, buf[:n]...); lastResult(held) {
				close(p.done)
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if !cut.Load() { // after a cut the server's side stays open until it has answered everything
				s.Close()
			}
			return
		}
		if bytes.Contains(buf[:n], []byte("COMMIT")) && p.armed.CompareAndSwap(true, false) {
			cut.Store(true) // before the server can answer
		}
		if _, err := s.Write(buf[:n]); err != nil {
			c.Close()
			return
		}
	}
}

// lastResult reports whether b, the server's packets answering a multi-statement query, holds the answer to the
// last statement: an error, or an OK packet without SERVER_MORE_RESULTS_EXISTS. Result sets in between (column
// and row packets, which never start with 0x00 here, and their 0xfe terminators) are passed over.
func lastResult(b []byte) bool {
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		if len(b) < 4+n || n == 0 {
			return false
		}
		pkt := b[4 : 4+n]
		if pkt[0] == 0xff {
			return true
		}
		if pkt[0] != 0x00 || n < 7 {
			b = b[4+n:]
			continue
		}
		i := 1
		for range 2 { // affected rows and last insert id, length-encoded
			switch pkt[i] {
			case 0xfc:
				i += 3
			case 0xfd:
				i += 4
			case 0xfe:
				i += 9
			default:
				i++
			}
		}
		if i+2 <= n && (int(pkt[i])|int(pkt[i+1])<<8)&0x0008 == 0 {
			return true
		}
		b = b[4+n:]
	}
	return false
}

// testCommitOutcomeUnknown: a commit whose answer is lost is reported as ErrUnknownOutcome and not retried (a
// retry would increment twice); it was applied exactly once.
func testCommitOutcomeUnknown(t *testing.T, server string) {
	server = freshDB(t, server)
	u, err := neturl.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	proxy, addr := startCutProxy(t, u.Host)
	u.Host = addr
	viaProxy, direct := open(t, u.String()), open(t, server)
	defer viaProxy.Close()
	defer direct.Close()
	ctx := context.Background()
	incr := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("n"),
		Incr: engine.IncrArgs{Delta: 1, Create: true}}}}
	if _, err := viaProxy.Apply(ctx, incr); err != nil {
		t.Fatal(err)
	}
	proxy.armed.Store(true)
	_, err = viaProxy.Apply(ctx, incr)
	if !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("commit with its answer lost: %v, want ErrUnknownOutcome", err)
	}
	if proxy.armed.Load() {
		t.Fatal("no COMMIT went through the proxy")
	}
	select { // the server has run the whole query
	case <-proxy.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not finish the cut query")
	}
	it, err := direct.Get(ctx, "t", []byte("n"), 1)
	if err != nil || string(it.Value) != "2" {
		t.Fatalf("after a lost answer n = %q, %v; want 2 (applied once, not retried)", it.Value, err)
	}
	if _, err := viaProxy.Apply(ctx, incr); err != nil { // the broken connection was dropped from the pool
		t.Fatalf("next batch: %v", err)
	}
}

// testRefusedCommitAppliesNothing: a statement the server refuses (a key longer than the key column) stops the
// commit before COMMIT, and a batch over the server's packet limit is not sent: either way the error is returned
// (not as an unknown outcome), nothing of the batch is applied, and the store keeps working.
func testRefusedCommitAppliesNothing(t *testing.T, server string) {
	s := open(t, freshDB(t, server))
	defer s.Close()
	ctx := context.Background()
	set := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}
	}
	long := strings.Repeat("k", 3000)
	_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set("a"), set(long)}})
	if err == nil || errors.Is(err, remote.ErrUnknownOutcome) || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("too long a key: %v, want the server's refusal", err)
	}
	if _, err := s.Get(ctx, "t", []byte("a"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a = %v: part of a refused batch was applied", err)
	}
	big := set("b") // over the server's max_allowed_packet (16 MiB): refused before sending
	big.Value = make([]byte, 17<<20)
	_, err = s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set("a"), big}})
	if !errors.Is(err, engine.ErrBatchTooBig) {
		t.Fatalf("too large a batch: %v, want ErrBatchTooBig", err)
	}
	if _, err := s.Get(ctx, "t", []byte("a"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a = %v: part of a refused batch was applied", err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set("a")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "t", []byte("a"), 1); err != nil {
		t.Fatal(err)
	}
}

// afterCommit wraps the real backend and calls after with each commit's number and outcome.
type afterCommit struct {
	*backend
	commits int
	after   func(n int, err error)
}

func (a *afterCommit) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	err := a.backend.Commit(ctx, checks, w, tok)
	a.commits++
	a.after(a.commits, err)
	return err
}

// testLockWaitRetried: a commit that cannot lock its key in time (another transaction holds it FOR UPDATE; the
// server's lock wait timeout is 1 s) is a conflict: nothing applied, and Apply retries it once the lock is free.
func testLockWaitRetried(t *testing.T, server string) {
	url := freshDB(t, server)
	admin := sqlDB(t, url)
	ctx := context.Background()
	if _, err := admin.Exec("SET GLOBAL innodb_lock_wait_timeout = 1"); err != nil { // for sessions opened from now
		t.Fatal(err)
	}
	defer admin.Exec("SET GLOBAL innodb_lock_wait_timeout = 50")
	s := open(t, url)
	defer s.Close()
	incr := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("x"),
		Incr: engine.IncrArgs{Delta: 1, Create: true}}}}
	if _, err := s.Apply(ctx, incr); err != nil {
		t.Fatal(err)
	}
	holder, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.Exec("SELECT v FROM anykv_items WHERE tbl = 't' AND k = 'x' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	var first error
	a := &afterCommit{backend: s.b, after: func(n int, err error) {
		if n == 1 {
			first = err
			holder.Rollback() // free the key for the retry
		}
	}}
	res, err := remote.New(a).Apply(ctx, incr)
	if !errors.Is(first, remote.ErrConflict) || !strings.Contains(first.Error(), "Lock wait timeout") {
		t.Fatalf("first commit against a held lock: %v, want a lock wait timeout as ErrConflict", first)
	}
	if err != nil || a.commits != 2 || string(res[0].New.Value) != "2" {
		t.Fatalf("retry: %v after %d commits, result %+v; want 2 after 2 commits", err, a.commits, res)
	}
}
