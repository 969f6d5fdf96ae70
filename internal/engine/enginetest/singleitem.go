package enginetest

import (
	"errors"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// testSingleItem: an engine whose batches reach one item (engine.SingleItem) refuses every batch that reads or
// writes several items, or flushes, with ErrNotSupported and a message naming the engine, and applies none of
// it; batches of one item, several mutations included, still work.
func testSingleItem(t *testing.T, e engine.Engine) {
	apply(t, e, set("default", "a", "1"))
	refused := map[string][]engine.Mutation{
		"MSET":       {set("default", "a", "2"), set("default", "b", "2")},
		"two tables": {set("default", "a", "2"), set("t2", "a", "2")},
		"RENAME": {{Op: engine.OpRename, Table: "default", Key: []byte("a"),
			Target: engine.Target{Table: "default", Key: []byte("b")}}},
		"COPY": {{Op: engine.OpCopy, Table: "default", Key: []byte("a"),
			Target: engine.Target{Table: "default", Key: []byte("b")}}},
		"HSET":     {hset("h", "f", "v")},
		"FLUSH":    {{Op: engine.OpFlush, Table: "default"}},
		"FLUSHALL": {{Op: engine.OpFlush}},
		"WATCH a, SET b": {{Op: engine.OpCheck, Table: "default", Key: []byte("a"), Cond: engine.CondPresent, Guard: true},
			set("default", "b", "2")},
		"GET a, GET b": {{Op: engine.OpGet, Table: "default", Key: []byte("a")},
			{Op: engine.OpGet, Table: "default", Key: []byte("b")}},
	}
	for name, muts := range refused {
		_, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts})
		if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "engine") {
			t.Errorf("%s: Apply = %v, want ErrNotSupported naming the engine", name, err)
		}
	}
	wantValue(t, e, "default", "a", "1")
	wantMissing(t, e, "default", "b")
	wantMissing(t, e, "t2", "a")
	wantMissing(t, e, "t", "h")
	// One item, several mutations, a guard: applied.
	r := apply(t, e,
		engine.Mutation{Op: engine.OpCheck, Table: "default", Key: []byte("a"), Cond: engine.CondPresent, Guard: true},
		incr("a", 1), engine.Mutation{Op: engine.OpAppend, Table: "default", Key: []byte("a"), Value: []byte("0")})
	if string(r[2].New.Value) != "20" {
		t.Fatalf("one-item batch = %+v", r)
	}
	wantValue(t, e, "default", "a", "20")
}

// singleItem is a memory engine that claims engine.SingleItem, for CheckDecorator.
type singleItem struct{ *memstore.Store }

func (singleItem) SingleItemBatches() bool { return true }
