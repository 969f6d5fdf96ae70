package pebblestore

import (
	"errors"
	"strings"
	"testing"

	"anykv/internal/engine"
)

// refusing is a ValueGate that refuses every value, recording the sizes asked.
type refusing struct{ asked []int }

var errRefused = errors.New("no room")

func (r *refusing) Admit(n int) error { r.asked = append(r.asked, n); return errRefused }

// TestGetAsksTheGateBeforeTheCopy: Get asks the read's ValueGate before it copies out a value of GateFrom bytes
// or more, with the value's size, and returns the gate's refusal in place of the value (the copy is made only
// once admitted); values under GateFrom are not asked about, and without a gate Get copies as before. (Whether a
// refused Get allocates is not measured here: the process's allocation counters also count the store's
// background work, and under -race Pebble reads a flushed block into the Go heap.)
func TestGetAsksTheGateBeforeTheCopy(t *testing.T) {
	s := open(t, nil, SyncAlways)
	big := strings.Repeat("v", 1<<20)
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "big", big), set("t", "small", "v")}}); err != nil {
		t.Fatal(err)
	}
	g := &refusing{}
	gctx := engine.WithValueGate(ctx, g)
	if it, err := s.Get(gctx, "t", []byte("big"), now); !errors.Is(err, errRefused) || it.Value != nil {
		t.Fatalf("Get of a refused value: %d bytes, %v", len(it.Value), err)
	}
	if len(g.asked) != 1 || g.asked[0] != len(big) {
		t.Fatalf("the gate was asked %v, want once, the value's size", g.asked)
	}
	if it, err := s.Get(gctx, "t", []byte("small"), now); err != nil || string(it.Value) != "v" || len(g.asked) != 1 {
		t.Fatalf("Get of a small value: %q, %v; gate asked %v", it.Value, err, g.asked)
	}
	if it, err := s.Get(ctx, "t", []byte("big"), now); err != nil || len(it.Value) != len(big) {
		t.Fatalf("Get without a gate: %d bytes, %v", len(it.Value), err)
	}
}
