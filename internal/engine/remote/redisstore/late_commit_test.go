package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

// lateBackend models a commit whose answer never came back in time but which the datastore applies later (the
// script sat in a socket buffer or a slow network while the client's 5 s timeout fired): the first commit after
// hold is set is reported as ErrUnknownOutcome without being applied, and applied by release.
type lateBackend struct {
	remote.Backend
	mu      sync.Mutex
	hold    bool
	pending func() error
}

func (l *lateBackend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	l.mu.Lock()
	if l.hold {
		l.hold = false
		cw := *w
		l.pending = func() error { return l.Backend.Commit(context.Background(), checks, &cw, tok) }
		l.mu.Unlock()
		return errors.Join(remote.ErrUnknownOutcome, errors.New("i/o timeout: the script was sent"))
	}
	l.mu.Unlock()
	return l.Backend.Commit(ctx, checks, w, tok)
}

func (l *lateBackend) release(t *testing.T) {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.mu.Unlock()
	if err := p(); err != nil {
		t.Fatal(err)
	}
}

// TestExclusiveCacheAfterLateCommit: with --exclusive the read cache sits in front of the remote engine. A
// SET whose commit outcome is unknown may still land in the datastore after the client got its error. A GET in
// between fills the cache with the old value, and the cache then keeps answering that old value for good, while
// the datastore (and any read that goes to the engine, such as MULTI/GET/EXEC) already shows the new one: a read
// of the new value followed by a read of the old.
func TestExclusiveCacheAfterLateCommit(t *testing.T) {
	url := "redis://" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://") + "/0?prefix=late:"
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	lb := &lateBackend{Backend: s.b}
	eng := remote.New(lb)
	c := cache.New(eng, 1<<20) // what anykv serve --exclusive builds over the remote engine
	set := func(v string) error {
		_, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"),
			Value: []byte(v), Set: engine.SetArgs{Blind: true}}}})
		return err
	}
	get := func(e engine.Engine) string {
		it, err := e.Get(ctx, "t", []byte("k"), 1)
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Value)
	}
	if err := set("old"); err != nil {
		t.Fatal(err)
	}
	get(c)

	lb.mu.Lock()
	lb.hold = true
	lb.mu.Unlock()
	if err := set("new"); !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("held SET: err %v, want ErrUnknownOutcome", err)
	}
	if v := get(c); v != "old" { // the commit has not landed yet: old is a fine answer, and the cache keeps it
		t.Fatalf("before the late commit: %q", v)
	}
	lb.release(t) // the datastore now applies the SET

	if v := get(eng); v != "new" {
		t.Fatalf("datastore after the late commit: %q, want new", v)
	}
	// A batch read goes to the engine: "new". A plain GET after it must not go back to "old".
	res, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpGet, Table: "t", Key: []byte("k")}}})
	if err != nil || string(res[0].Old.Value) != "new" {
		t.Fatalf("batch GET: %v %q", err, res[0].Old.Value)
	}
	if v := get(c); v != "new" {
		t.Fatalf("cached GET after the datastore (and a batch GET) showed \"new\": %q, stale for as long as the entry lives", v)
	}
}
