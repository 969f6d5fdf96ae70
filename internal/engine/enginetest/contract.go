package enginetest

import (
	"errors"
	"testing"

	"anykv/internal/engine"
)

// testOwnership checks the ownership rules of the contract: Get's Value belongs to the caller, Apply keeps no
// reference to the batch's slices, and results' values stay unchanged after later writes.
func testOwnership(t *testing.T, e engine.Engine) {
	key, val := []byte("own"), []byte("original")
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: key, Value: val}}}); err != nil {
		t.Fatal(err)
	}
	copy(val, "XXXXXXXX") // the caller reuses its buffers once Apply returned
	copy(key, "XXX")
	it := wantValue(t, e, "t", "own", "original")
	it.Value[0] = 'Z' // the caller owns what Get returned
	wantValue(t, e, "t", "own", "original")

	res := apply(t, e, engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("own"), Value: []byte("+1")})
	if !res[0].NewFound || string(res[0].New.Value) != "original+1" {
		t.Fatalf("append result = %+v", res[0])
	}
	kept := res[0].New.Value
	apply(t, e, set("t", "own", "rewritten"), engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("own"), Value: []byte("!")})
	if string(kept) != "original+1" {
		t.Fatalf("a result's value changed after later writes: %q", kept)
	}

	// Read results must not alias the batch: a GET after a SET of the same key in one batch answers the SET's
	// value, and the caller reuses the SET's buffer once Apply returned (a pipelined RESP connection reads its
	// next commands into it before it writes the replies). A write's own New may alias it (the contract says so).
	buf := []byte("pipelined")
	res = apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("own2"), Value: buf},
		engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("own2")})
	copy(buf, "XXXXXXXXX")
	if !res[1].OldFound || string(res[1].Old.Value) != "pipelined" {
		t.Fatalf("GET after SET in one batch, once the SET's buffer was reused: %q (found %v)", res[1].Old.Value, res[1].OldFound)
	}
}

// testClosed: after Close every call fails with ErrClosed, and a second Close returns nil.
func testClosed(t *testing.T, e engine.Engine) {
	apply(t, e, set("t", "k", "v"))
	wantValue(t, e, "t", "k", "v") // read once, so a caching decorator holds it
	wantValue(t, e, "t", "k", "v")
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := e.Get(ctx, "t", []byte("k"), now); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "k", "w")}}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if sc, ok := e.(engine.Scanner); ok {
		err := sc.Scan(ctx, "t", engine.Range{}, now, func([]byte, engine.Item) bool { return true })
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Scan after Close: %v, want ErrClosed", err)
		}
	}
	if tl, ok := e.(engine.TableLister); ok {
		if _, err := tl.Tables(ctx); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Tables after Close: %v, want ErrClosed", err)
		}
	}
	if sw, ok := e.(engine.Sweeper); ok {
		if _, err := sw.Sweep(ctx, now, 10); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Sweep after Close: %v, want ErrClosed", err)
		}
	}
	// The suite's cleanup closes the engine again: that second Close must return nil.
}

// testStats: figures are named lower_snake_case and reading them works while writes go on.
func testStats(t *testing.T, e engine.Engine) {
	apply(t, e, set("t", "k", "v"))
	for name := range e.(engine.Statser).Stats() {
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				t.Errorf("stat name %q is not lower_snake_case", name)
				break
			}
		}
	}
}
