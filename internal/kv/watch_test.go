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
// writes of other keys, other tables, or a delete of an absent key do not; a flush does if it deleted the key; a
// released Watch is forgotten.
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

	// A flush marks the watches of the keys it deleted, as Redis's touchAllWatchedKeysInDb: not of absent or
	// expired keys, nor of other tables' (but FLUSHALL's).
	for _, table := range []string{"t", ""} {
		apply(wset("t", "live"), engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("stale"), Value: []byte("v"),
			Expires: s.Now() - 1}, wset("u", "other"))
		watches := map[string]*Watch{}
		for _, tk := range [][2]string{{"t", "live"}, {"t", "stale"}, {"t", "absent"}, {"u", "other"}} {
			w := s.NewWatch()
			w.Add(tk[0], []byte(tk[1]))
			watches[tk[0]+"/"+tk[1]] = w
		}
		apply(engine.Mutation{Op: engine.OpFlush, Table: table})
		for name, want := range map[string]bool{"t/live": true, "t/stale": false, "t/absent": false, "u/other": table == ""} {
			if watches[name].Dirty() != want {
				t.Errorf("flush of %q: watch of %s dirty %v, want %v", table, name, watches[name].Dirty(), want)
			}
			watches[name].Release()
		}
	}
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
