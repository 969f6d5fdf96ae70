package pebblestore

import (
	"errors"
	"testing"

	"anykv/internal/engine"
)

// TestPanicRefusesOneBatch: a function that panics inside the single writer (a defect reachable from a client's
// arguments, as an unchecked BITFIELD offset once was) fails its own batch with ErrInternal and applies nothing
// of it; the writer goes on, so the batches in the same group and after it are applied. Without the recover in
// engine.Resolve the panic ends the test binary.
func TestPanicRefusesOneBatch(t *testing.T) {
	engine.RegisterFunc("test.panics", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		tx.Put(tx.Table(), tx.Key(), engine.Item{Value: []byte("half")})
		var b []byte
		_ = b[len(args)-2] // index out of range
		return engine.Result{}, nil
	})
	s := open(t, nil, SyncAlways)
	set := func(k, v string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte(v)}
	}
	_, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("before", "1"),
		{Op: engine.OpCall, Table: "t", Key: []byte("victim"), Call: engine.CallArgs{Name: "test.panics"}}}})
	if !errors.Is(err, engine.ErrInternal) {
		t.Fatalf("a panicking function's batch: err = %v, want ErrInternal", err)
	}
	for _, k := range []string{"before", "victim"} {
		if _, err := s.Get(ctx, "t", []byte(k), now); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("%s after the refused batch: %v, want not found (nothing of the batch applied)", k, err)
		}
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("after", "2")}}); err != nil {
		t.Fatalf("the next batch: %v", err)
	}
	if it, err := s.Get(ctx, "t", []byte("after"), now); err != nil || string(it.Value) != "2" {
		t.Fatalf("after = %q, %v", it.Value, err)
	}
}
