package kv

import (
	"context"
	"errors"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

func wset(table, key string) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key), Value: []byte("v")}
}

func wdel(table, key string) engine.Mutation {
	return engine.Mutation{Op: engine.OpDelete, Table: table, Key: []byte(key), AnyKind: true}
}

// TestWatchSeesEveryWrite: a key created and deleted again marks its Watch although it ends absent as it began;
// writes of other keys, other tables, or a delete of an absent key do not; a flush does; a released Watch is
// forgotten.
func TestWatchSeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	s := New(memstore.New(), Options{SweepInterval: -1})
	defer s.Close()
	apply := func(muts ...engine.Mutation) {
		t.Helper()
		if _, err := s.Apply(ctx, muts); err != nil {
			t.Fatal(err)
		}
	}
	w := s.NewWatch()
	w.Add("t", []byte("k"))
	apply(wset("t", "other"), wset("u", "k"), wdel("t", "k"))
	if w.Dirty() {
		t.Fatal("dirty after writes of other keys and a delete of the absent key")
	}
	apply(wset("t", "k"))
	apply(wdel("t", "k"))
	if !w.Dirty() {
		t.Fatal("a create and delete did not mark the watch")
	}
	if _, err := s.ApplyWatched(ctx, w, []engine.Mutation{wset("t", "x")}); !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("ApplyWatched of a dirty watch: %v, want ErrAborted", err)
	}
	w.Release()
	if n := s.watches.active.Load(); n != 0 {
		t.Fatalf("%d keys still registered after Release", n)
	}

	w2 := s.NewWatch()
	w2.Add("t", []byte("k"))
	apply(engine.Mutation{Op: engine.OpFlush, Table: "t"})
	if !w2.Dirty() {
		t.Fatal("a flush of the table did not mark the watch")
	}
	w2.Release()
}

// gatedEngine blocks its first Apply until released, telling the test when it is inside.
type gatedEngine struct {
	engine.Engine
	inside, release chan struct{}
}

func (g *gatedEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if g.inside != nil {
		close(g.inside)
		g.inside = nil
		<-g.release
	}
	return g.Engine.Apply(ctx, b)
}

// TestWatchGateCoversTheEngineCall: while somebody watches, a writer holds the gate shared for its whole engine
// call, so ApplyWatched (which takes it exclusively) cannot check the watch between the write and its mark.
func TestWatchGateCoversTheEngineCall(t *testing.T) {
	ctx := context.Background()
	g := &gatedEngine{Engine: memstore.New(), inside: make(chan struct{}), release: make(chan struct{})}
	inside := g.inside
	s := New(g, Options{SweepInterval: -1})
	defer s.Close()
	w := s.NewWatch()
	w.Add("t", []byte("k"))
	done := make(chan error)
	go func() {
		_, err := s.Apply(ctx, []engine.Mutation{wset("t", "k")})
		done <- err
	}()
	<-inside
	if s.watches.gate.TryLock() {
		t.Fatal("ApplyWatched could run while a write of a watched key was inside the engine")
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyWatched(ctx, w, []engine.Mutation{wset("t", "x")}); !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("ApplyWatched after a write of the watched key: %v, want ErrAborted", err)
	}
	w.Release()
}
