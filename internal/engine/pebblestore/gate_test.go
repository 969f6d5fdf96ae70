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
	if err := s.db.Flush(); err != nil { // settled: a background flush of the batch would allocate beside the Gets
		t.Fatal(err)
	}
	g := &refusing{}
	gctx := engine.WithValueGate(ctx, g)
	// The heap's allocations are the process's, so the check is of ten Gets' average, which a copy each would put
	// at the value's size or more.
	const gets = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range gets {
		if _, err := s.Get(gctx, "t", []byte("big"), now); !errors.Is(err, errRefused) {
			t.Fatalf("Get of a refused value: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if len(g.asked) != gets || g.asked[0] != len(big) {
		t.Fatalf("the gate was asked %v, want %d times the value's size", g.asked, gets)
	}
	if grew := (after.TotalAlloc - before.TotalAlloc) / gets; grew > uint64(len(big))/4 {
		t.Fatalf("a refused Get allocated %d bytes on average for a value of %d", grew, len(big))
	}
	if it, err := s.Get(gctx, "t", []byte("small"), now); err != nil || string(it.Value) != "v" || len(g.asked) != gets {
		t.Fatalf("Get of a small value: %q, %v; gate asked %v", it.Value, err, g.asked)
	}
	if it, err := s.Get(ctx, "t", []byte("big"), now); err != nil || len(it.Value) != len(big) {
		t.Fatalf("Get without a gate: %d bytes, %v", len(it.Value), err)
	}
}
