package pebblestore

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// TestYielderCountsL0: the L0 table count the parks of flushes and compactions go by (yield.go), kept from
// Pebble's events, is Pebble's own after flushes and compactions, and after a reopen; were it behind, flushes
// would go on parking while compactions fall behind, until Pebble stopped writes. It runs on one P, where
// flushes and compactions park, so that the parks run too (under -race in CI).
func TestYielderCountsL0(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Logger: quiet, Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 100)
	rng := rand.New(rand.NewPCG(1, 2))
	flushes := 0
	for round := 0; round < 6; round++ {
		muts := make([]engine.Mutation, 0, 1000)
		for range 40 { // 4 MiB of random keys: about one memtable a round
			muts = muts[:0]
			for range 1000 {
				k := binary.BigEndian.AppendUint64([]byte("key:"), rng.Uint64()%200000)
				muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: val})
			}
			if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		flushes++
	}
	settled := func() int64 { // Pebble's L0 table count once no compaction has run for two polls
		quiet := 0
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if s.db.Metrics().Compact.NumInProgress > 0 {
				quiet = 0
			} else if quiet++; quiet == 2 {
				break
			}
		}
		return s.db.Metrics().Levels[0].TablesCount
	}
	want := settled()
	if got := s.yield.l0.Load(); got != want {
		t.Errorf("after %d flushes the yielder counts %d L0 tables, Pebble has %d", flushes, got, want)
	}
	if m := s.db.Metrics(); m.Compact.Count == 0 {
		t.Errorf("no compaction ran: the test did not exercise CompactionEnd")
	}
	if s.yield.parks.Load() == 0 {
		t.Errorf("no flush or compaction parked on one P")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir, Logger: quiet, Sync: SyncNever}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.yield.l0.Load(), settled(); got != want {
		t.Errorf("after a reopen the yielder counts %d L0 tables, Pebble has %d", got, want)
	}
}

// TestYielderKnowsStalls: the store's write-stall handlers still run (they log) and the yielder sees the stall
// begin and end.
func TestYielderKnowsStalls(t *testing.T) {
	var y yielder
	began, ended := 0, 0
	el := &pebble.EventListener{
		WriteStallBegin: func(pebble.WriteStallBeginInfo) { began++ },
		WriteStallEnd:   func() { ended++ },
	}
	y.listen(el)
	el.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	if !y.stalled.Load() || began != 1 {
		t.Fatalf("after WriteStallBegin: stalled %v, the store's handler ran %d times", y.stalled.Load(), began)
	}
	el.WriteStallEnd()
	if y.stalled.Load() || ended != 1 {
		t.Fatalf("after WriteStallEnd: stalled %v, the store's handler ran %d times", y.stalled.Load(), ended)
	}
}

// A flush or compaction parks every parkEvery of writing on one P, but not once Close waits for it: nobody is
// served any more, and each park would lengthen the shutdown.
func TestYielderDoesNotParkWhileClosing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, closing := range []bool{false, true} {
		y := &yielder{}
		y.closing.Store(closing)
		parked := time.Now().Add(-2 * parkEvery) // a millisecond and more of writing since the last park
		y.yield(&parked)
		if got, want := y.parks.Load(), map[bool]int64{false: 1, true: 0}[closing]; got != want {
			t.Fatalf("closing %v: %d parks, want %d", closing, got, want)
		}
	}
}
