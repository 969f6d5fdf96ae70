package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
)

// TestParseConsistency: both names round-trip, case-insensitively; an unknown name is refused naming the known ones.
func TestParseConsistency(t *testing.T) {
	for _, c := range []engine.Consistency{engine.Linearizable, engine.Serializable} {
		got, err := engine.ParseConsistency(strings.ToUpper(c.String()))
		if err != nil || got != c {
			t.Errorf("ParseConsistency(%q) = %v, %v", c, got, err)
		}
	}
	_, err := engine.ParseConsistency("quorum")
	if err == nil || !strings.Contains(err.Error(), "linearizable, serializable") {
		t.Errorf("ParseConsistency(quorum) = %v", err)
	}
}

// TestConsistencyInContext: a context without a level reads as Linearizable and says so; one with a level gives it.
func TestConsistencyInContext(t *testing.T) {
	if c, ok := engine.ConsistencyOf(context.Background()); ok || c != engine.Linearizable {
		t.Errorf("empty context: %v, %v", c, ok)
	}
	ctx := engine.WithConsistency(context.Background(), engine.Serializable)
	if c, ok := engine.ConsistencyOf(ctx); !ok || c != engine.Serializable {
		t.Errorf("serializable context: %v, %v", c, ok)
	}
}

// TestCheckConsistency: a linearizable engine serves both levels (stronger is fine); an engine serving only
// serializable reads refuses linearizable ones with ErrNotSupported naming the engine, the level and its levels;
// a decorator (the read cache) reports the levels of the engine it wraps.
func TestCheckConsistency(t *testing.T) {
	for _, c := range []engine.Consistency{engine.Linearizable, engine.Serializable} {
		if err := engine.CheckConsistency(memstore.New(), "memory", c); err != nil {
			t.Errorf("memory, %v: %v", c, err)
		}
	}
	_, stale := enginetest.NewLevels(memstore.New(), engine.Serializable)
	for name, e := range map[string]engine.Engine{"stale": stale, "cached": cache.New(stale, 1<<20)} {
		if err := engine.CheckConsistency(e, name, engine.Serializable); err != nil {
			t.Errorf("%s, serializable: %v", name, err)
		}
		err := engine.CheckConsistency(e, name, engine.Linearizable)
		want := "not supported by this engine: linearizable reads on engine " + name + " (it serves serializable)"
		if !errors.Is(err, engine.ErrNotSupported) || err.Error() != want {
			t.Errorf("%s, linearizable: %v, want %q", name, err, want)
		}
	}
}
