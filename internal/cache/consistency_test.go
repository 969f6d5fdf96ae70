package cache_test

import (
	"context"
	"slices"
	"testing"

	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
)

// TestStaleReadsAreNotCached: a serializable read that misses goes to the engine at that level and is not kept
// (it may be stale, and a later linearizable read must not get it from memory); a linearizable miss is kept.
func TestStaleReadsAreNotCached(t *testing.T) {
	rec, inner := enginetest.NewLevels(memstore.New())
	c := cache.New(inner, 1<<20)
	defer c.Close()
	ctx := context.Background()
	ser := engine.WithConsistency(ctx, engine.Serializable)
	if _, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	for _, rctx := range []context.Context{ser, ctx, ctx} {
		if _, err := c.Get(rctx, "t", []byte("k2"), 0); err != engine.ErrNotFound {
			t.Fatalf("Get k2: %v", err)
		}
	}
	if got := rec.Asked(); !slices.Equal(got, []string{"get serializable", "get none"}) {
		t.Errorf("engine saw %v, want the serializable miss and one linearizable miss, then a hit", got)
	}
}
