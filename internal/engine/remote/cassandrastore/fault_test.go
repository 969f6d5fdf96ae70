package cassandrastore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

// cutProxy forwards TCP connections to a server. A client chunk holding marker is passed on (counted in sent),
// and the client's connection is dropped at the first byte of the server's answer, which is never passed on:
// the server ran the request, but the client cannot know.
type cutProxy struct {
	marker []byte
	sent   atomic.Int32
}

func startCutProxy(t *testing.T, target string, marker []byte) (*cutProxy, string) {
	p := &cutProxy{marker: marker}
	return p, remotetest.Proxy(t, target, p.serve)
}

func (p *cutProxy) serve(c, s net.Conn) {
	var cut atomic.Bool
	go func() { // server to client
		defer c.Close()
		defer s.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if err != nil || cut.Load() {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for { // client to server
		n, err := c.Read(buf)
		if err != nil {
			s.Close()
			return
		}
		if bytes.Contains(buf[:n], p.marker) {
			p.sent.Add(1)
			cut.Store(true)
		}
		if _, err := s.Write(buf[:n]); err != nil {
			return
		}
	}
}

// testCommitOutcomeUnknown loses the answer to a commit: Apply must report ErrUnknownOutcome, send the commit
// once (no retry), and the commit must in fact have been applied.
func testCommitOutcomeUnknown(t *testing.T, url string) {
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	value := []byte("only-in-the-commit-3f9c1e")
	p, addr := startCutProxy(t, u.Host, value)
	u.Host = addr
	e, err := Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const now = int64(1_700_000_000_000)
	m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: value}
	_, err = e.Apply(context.Background(), &engine.Batch{Now: now, Muts: []engine.Mutation{m}})
	if !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("Apply with the answer lost = %v, want ErrUnknownOutcome", err)
	}
	t.Log(err)
	if n := p.sent.Load(); n != 1 {
		t.Fatalf("the commit was sent %d times, want once", n)
	}
	direct := open(t, url)
	defer direct.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		it, err := direct.Get(context.Background(), "default", []byte("k"), now)
		if err == nil && bytes.Equal(it.Value, value) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the commit whose answer was lost is not applied: %q, %v", it.Value, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testLargeBatches writes a 4 MiB value, and refuses a 16 MiB one before sending it: an error that is not
// ErrUnknownOutcome, and nothing applied; a 70000-byte key is written and read back.
func testLargeBatches(t *testing.T, url string) {
	e := open(t, url)
	defer e.Close()
	const now = int64(1_700_000_000_000)
	set := func(key string, size int) error {
		m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(key), Value: bytes.Repeat([]byte("x"), size)}
		_, err := e.Apply(context.Background(), &engine.Batch{Now: now, Muts: []engine.Mutation{m}})
		return err
	}
	if err := set("four", 4<<20); err != nil {
		t.Fatalf("4 MiB value: %v", err)
	}
	if it, err := e.Get(context.Background(), "default", []byte("four"), now); err != nil || len(it.Value) != 4<<20 {
		t.Fatalf("4 MiB value read back: %d bytes, %v", len(it.Value), err)
	}
	err := set("sixteen", 16<<20)
	if !errors.Is(err, engine.ErrBatchTooBig) || errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("16 MiB value: %v, want ErrBatchTooBig", err)
	}
	if _, err := e.Get(context.Background(), "default", []byte("sixteen"), now); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the refused value: %v, want not found", err)
	}
	// A clustering value has no 64 KiB limit (only partition keys do): a 70000-byte key round trips.
	long := bytes.Repeat([]byte("k"), 70000)
	m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: long, Value: []byte("v")}
	if _, err := e.Apply(context.Background(), &engine.Batch{Now: now, Muts: []engine.Mutation{m}}); err != nil {
		t.Fatalf("a 70000-byte key: %v", err)
	}
	if it, err := e.Get(context.Background(), "default", long, now); err != nil || string(it.Value) != "v" {
		t.Fatalf("a 70000-byte key read back: %q, %v", it.Value, err)
	}
}

// testStaleReadConflicts reads through the backend, lets another engine write the namespace, then commits on the
// stale read: a commit with writes and the validation of a read-only batch both refuse with ErrConflict, and
// the refused put is not applied.
func testStaleReadConflicts(t *testing.T, url string) {
	a, other := open(t, url), open(t, url)
	defer a.Close()
	defer other.Close()
	ctx := context.Background()
	const now = int64(1_700_000_000_000)
	slot := remote.Slot{Table: "default", Key: []byte("k")}
	_, versions, _, token, err := a.b.Read(ctx, []remote.Slot{slot}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("other")}
	if _, err := other.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{m}}); err != nil {
		t.Fatal(err)
	}
	w := &remote.Writes{Put: []remote.Put{{Slot: slot, Item: engine.Item{Value: []byte("stale"), Version: versions[0]}}}}
	if err := a.b.Commit(ctx, nil, w, token); !errors.Is(err, remote.ErrConflict) {
		t.Fatalf("commit on a stale read = %v, want ErrConflict", err)
	}
	if err := a.b.Commit(ctx, []remote.Check{{Slot: slot}}, &remote.Writes{}, token); !errors.Is(err, remote.ErrConflict) {
		t.Fatalf("validating a stale read-only batch = %v, want ErrConflict", err)
	}
	if it, err := a.Get(ctx, "default", []byte("k"), now); err != nil || string(it.Value) != "other" {
		t.Fatalf("after the refused commit: %q, %v; want the other engine's write", it.Value, err)
	}
}

// testSlotsDoNotCollide reads, in one batch, two slots whose table and key run together alike ("a\x00"+"b" and
// "a"+"\x00b"): each must get its own item.
func testSlotsDoNotCollide(t *testing.T, url string) {
	e := open(t, url)
	defer e.Close()
	const now = int64(1_700_000_000_000)
	ctx := context.Background()
	m := engine.Mutation{Op: engine.OpSet, Table: "a", Key: []byte("\x00b"), Value: []byte("1")}
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{m}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{
		{Op: engine.OpGet, Table: "a\x00", Key: []byte("b")},
		{Op: engine.OpGet, Table: "a", Key: []byte("\x00b")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, engine.ErrNotFound) || res[1].Err != nil || string(res[1].New.Value) != "1" {
		t.Fatalf("results %+v, want a\\x00/b absent and a/\\x00b = 1", res)
	}
}

// testFlushAroundAdjacentPuts flushes tables in the batch that puts keys with nothing between them ("k", "k\x00")
// in tables with nothing between them ("a", "a\x00"): the range deletes around them are empty ranges, which
// Cassandra must take, and exactly the batch's own puts survive. (It cannot tell the gaps from one range over
// the puts: Cassandra 5.0.4 keeps a put inside a range deleted by the same BATCH.)
func testFlushAroundAdjacentPuts(t *testing.T, url string) {
	e := open(t, url)
	defer e.Close()
	const now = int64(1_700_000_000_000)
	ctx := context.Background()
	set := func(table, key string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key), Value: []byte(table + "/" + key)}
	}
	apply := func(ms ...engine.Mutation) {
		t.Helper()
		if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: ms}); err != nil {
			t.Fatal(err)
		}
	}
	apply(set("a", "old"), set("a", "k\x00\x00"), set("a\x00", "old"), set("b", "old"))
	apply(engine.Mutation{Op: engine.OpFlush, Table: "a"}, set("a", ""), set("a", "k"), set("a", "k\x00"))
	apply(engine.Mutation{Op: engine.OpFlush}, set("a", "k"), set("a", "k\x00"), set("a\x00", "k"))
	var got []string
	for _, table := range []string{"a", "a\x00", "b"} {
		err := e.Scan(ctx, table, engine.Range{}, now, func(k []byte, it engine.Item) bool {
			got = append(got, string(it.Value))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a/k", "a/k\x00", "a\x00/k"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the flushes: %q, want %q", got, want)
	}
}
