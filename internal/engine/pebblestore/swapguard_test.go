package pebblestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestGuardHidesSwappedItemsUntilDurable: SWAPDB (engine.OpSwap) copies each item into the other table with the
// version it had, which is below the group's first version. A point read of a swapped-in item must still wait for
// the swap's fsync: until then a power loss would take the item back to the table it came from, and a reader
// would have answered a state that was never durable. (The guard skipped any item found with a version older
// than the group's as "an older, durable item", and answered the swapped item at once.)
func TestGuardHidesSwappedItemsUntilDurable(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := open(t, gfs, SyncAlways)
	mustApply(t, s, set("t", "a", "va"), set("u", "b", "vb"))

	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	applied := applyAsync(s, engine.Mutation{Op: engine.OpSwap, Table: "t", Target: engine.Target{Table: "u"}})
	// The premise: Pebble publishes the swap before its WAL sync returns.
	waitFor(t, func() bool { return gfs.blocked() > 0 && pebbleHas(s, "u", "a", "va") && pebbleHas(s, "t", "b", "vb") })

	reads := make(chan string, 2)
	go func() {
		it, err := s.Get(ctx, "u", []byte("a"), now)
		reads <- fmt.Sprintf("get u/a: %s %v", it.Value, err)
	}()
	go func() { // a batch of reads, resolved on a snapshot (readbatch.go)
		res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpGet, Table: "t", Key: []byte("b")}}})
		if err == nil {
			err = res[0].Err
			reads <- fmt.Sprintf("read batch t/b: %s %v", res[0].New.Value, err)
			return
		}
		reads <- fmt.Sprintf("read batch t/b: %v", err)
	}()
	select {
	case r := <-reads:
		t.Fatalf("%s, answered while the swap's fsync was held", r)
	case <-time.After(200 * time.Millisecond):
	}
	gfs.release()
	if o := <-applied; o.err != nil {
		t.Fatal(o.err)
	}
	for range 2 {
		if r := <-reads; r != "get u/a: va <nil>" && r != "read batch t/b: vb <nil>" {
			t.Errorf("after the swap: %s", r)
		}
	}
}
