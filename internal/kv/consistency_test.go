package kv_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// readAll runs one Get, Scan and Count and returns the levels the engine was asked for, failing on any error.
func readAll(t *testing.T, s *kv.Store, rec *enginetest.Levels, c *engine.Consistency) []string {
	t.Helper()
	rctx := ctx
	if c != nil {
		rctx = engine.WithConsistency(ctx, *c)
	}
	if _, err := s.Get(rctx, "t", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scan(rctx, "t", kv.Query{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(rctx, "t", kv.Query{}); err != nil {
		t.Fatal(err)
	}
	return rec.Asked()
}

// TestReadLevelReachesTheEngine: Get, Scan and Count carry the request's level to the engine, or the store's
// default when the request asks for none; a linearizable default adds nothing to the context.
func TestReadLevelReachesTheEngine(t *testing.T) {
	ser, lin := engine.Serializable, engine.Linearizable
	for _, tc := range []struct {
		def   engine.Consistency
		asked *engine.Consistency
		want  string
	}{
		{lin, nil, "none"}, {ser, nil, "serializable"}, {lin, &ser, "serializable"}, {ser, &lin, "linearizable"},
	} {
		rec, e := enginetest.NewLevels(memstore.New())
		s := kv.New(e, kv.Options{Consistency: tc.def, SweepInterval: -1})
		s.Apply(ctx, []engine.Mutation{set("a", "1")})
		got := readAll(t, s, rec, tc.asked)
		if want := []string{"get " + tc.want, "scan " + tc.want, "scan " + tc.want}; !slices.Equal(got, want) {
			t.Errorf("default %v, asked %v: engine saw %v, want %v", tc.def, tc.asked, got, want)
		}
		if s.Consistency() != tc.def {
			t.Errorf("Consistency() = %v, want %v", s.Consistency(), tc.def)
		}
		s.Close()
	}
}

// TestUnservableLevelIsRefused: a level the engine cannot serve is refused by every read with ErrNotSupported
// naming the engine, before the engine is asked; the levels it serves still work.
func TestUnservableLevelIsRefused(t *testing.T) {
	rec, e := enginetest.NewLevels(memstore.New(), engine.Serializable)
	s := kv.New(e, kv.Options{Consistency: engine.Serializable, EngineName: "stale", SweepInterval: -1})
	defer s.Close()
	s.Apply(ctx, []engine.Mutation{set("a", "1")})
	lctx := engine.WithConsistency(ctx, engine.Linearizable)
	_, gerr := s.Get(lctx, "t", []byte("a"))
	_, serr := s.Scan(lctx, "t", kv.Query{})
	_, cerr := s.Count(lctx, "t", kv.Query{})
	for _, err := range []error{gerr, serr, cerr} {
		want := "not supported by this engine: linearizable reads on engine stale (it serves serializable)"
		if !errors.Is(err, engine.ErrNotSupported) || err.Error() != want {
			t.Errorf("linearizable read: %v, want %q", err, want)
		}
	}
	if got := rec.Asked(); len(got) != 0 {
		t.Errorf("the engine was asked %v", got)
	}
	if got := readAll(t, s, rec, nil); !slices.Equal(got, []string{"get serializable", "scan serializable", "scan serializable"}) {
		t.Errorf("default reads: %v", got)
	}
}

// TestStaleAnswersAreNotCached: with the query cache on, a serializable count or page is not kept (a later
// linearizable query reads the engine again), while a linearizable one is.
func TestStaleAnswersAreNotCached(t *testing.T) {
	rec, e := enginetest.NewLevels(memstore.New())
	s := kv.New(e, kv.Options{QueryCacheBytes: 1 << 20, SweepInterval: -1})
	defer s.Close()
	s.Apply(ctx, []engine.Mutation{set("a", "1")})
	sctx := engine.WithConsistency(ctx, engine.Serializable)
	for _, rctx := range []context.Context{sctx, ctx, ctx} {
		if _, err := s.Count(rctx, "t", kv.Query{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Scan(rctx, "t", kv.Query{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rec.Asked(), []string{"scan serializable", "scan serializable", "scan none", "scan none"}; !slices.Equal(got, want) {
		t.Errorf("engine saw %v, want %v", got, want)
	}
}
