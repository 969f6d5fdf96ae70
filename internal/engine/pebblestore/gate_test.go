package pebblestore

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"anykv/internal/engine"
)

// refusing is a ValueGate that refuses every value, recording the sizes asked.
type refusing struct{ asked []int }

var errRefused = errors.New("no room")

func (r *refusing) Admit(n int) error { r.asked = append(r.asked, n); return errRefused }

// TestGetAsksTheGateBeforeTheCopy: Get asks the read's ValueGate before it copies out a value of GateFrom bytes
// or more, and returns the gate's refusal with nothing copied (the heap grows by far less than the value); values
// under GateFrom are not asked about.
func TestGetAsksTheGateBeforeTheCopy(t *testing.T) {
	s := open(t, nil, SyncAlways)
	big := strings.Repeat("v", 8<<20)
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "big", big), set("t", "small", "v")}}); err != nil {
		t.Fatal(err)
	}
	g := &refusing{}
	gctx := engine.WithValueGate(ctx, g)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.Get(gctx, "t", []byte("big"), now)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errRefused) || len(g.asked) != 1 || g.asked[0] != len(big) {
		t.Fatalf("Get of a refused value: %v, gate asked %v", err, g.asked)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(big))/4 {
		t.Fatalf("a refused Get allocated %d bytes for a value of %d", grew, len(big))
	}
	if it, err := s.Get(gctx, "t", []byte("small"), now); err != nil || string(it.Value) != "v" || len(g.asked) != 1 {
		t.Fatalf("Get of a small value: %q, %v; gate asked %v", it.Value, err, g.asked)
	}
	if it, err := s.Get(ctx, "t", []byte("big"), now); err != nil || len(it.Value) != len(big) {
		t.Fatalf("Get without a gate: %d bytes, %v", len(it.Value), err)
	}
}
