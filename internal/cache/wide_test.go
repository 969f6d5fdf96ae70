package cache_test

import (
	"testing"

	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// cachetest.set writes "v1" at each key its arguments name, keys its mutation need not name (with AnyKey).
func init() {
	engine.RegisterFunc("cachetest.set", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		for _, k := range args {
			tx.Put(tx.Table(), k, engine.Item{Value: []byte("v1")})
		}
		return engine.Result{}, nil
	})
}

// A call that may write any key (a Lua script) changes keys the cache cannot know before it runs: once the
// engine shows its write, no read may answer the older cached value, and afterwards the keys it wrote are read
// anew while the entries it did not touch stay cached.
func TestWideCallNeverAnswersAnOldValue(t *testing.T) {
	inner := blockingApply{memstore.New(), make(chan struct{}), make(chan struct{})}
	for _, k := range []string{"job", "other"} {
		inner.Store.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v0")}}})
	}
	c := cache.New(inner, 1<<20)
	for _, k := range []string{"job", "other"} {
		if it, _ := c.Get(ctx, "t", []byte(k), 0); string(it.Value) != "v0" { // now cached
			t.Fatalf("warm-up read of %s: %q", k, it.Value)
		}
	}
	done := make(chan []engine.Result)
	go func() {
		res, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpCall, Table: "t", Key: []byte("named"),
			Call: engine.CallArgs{Name: "cachetest.set", Args: [][]byte{[]byte("job")}, AnyKey: true}}}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-inner.applied
	for i := 0; i < 3; i++ {
		if it, _ := c.Get(ctx, "t", []byte("job"), 0); string(it.Value) != "v1" {
			t.Fatalf("read %d while the call is in flight = %q; the engine already shows v1", i, it.Value)
		}
	}
	close(inner.release)
	if res := <-done; len(res) != 1 || len(res[0].Wrote) != 1 || string(res[0].Wrote[0]) != "job" {
		t.Fatalf("results %+v: want Wrote [job]", res)
	}
	hits := c.(engine.Statser).Stats()["cache_hits"]
	if it, _ := c.Get(ctx, "t", []byte("job"), 0); string(it.Value) != "v1" {
		t.Fatalf("after the call: %q", it.Value)
	}
	if it, _ := c.Get(ctx, "t", []byte("other"), 0); string(it.Value) != "v0" {
		t.Fatalf("untouched key after the call: %q", it.Value)
	}
	if got := c.(engine.Statser).Stats()["cache_hits"] - hits; got != 1 {
		t.Fatalf("%d hits for the written and the untouched key, want 1 (the untouched key stays cached)", got)
	}
}
