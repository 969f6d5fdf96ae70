package pebblestore

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestSweepRestsWithoutExpiries: once a whole pass met no item with an expiry, sweeps examine nothing until an
// item with one is written; one written behind the cursor of a pass that then ends quiet is still found.
func TestSweepRestsWithoutExpiries(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNever} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			s := open(t, vfs.NewMem(), mode)
			for i := range 100 {
				mustApply(t, s, set("t", fmt.Sprintf("k%03d", i), "v"))
			}
			examined := func() int64 { return s.Stats()["sweep_examined"] }
			sweep := func(at int64) int {
				t.Helper()
				n, err := s.Sweep(ctx, at, 30)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			for range 4 { // 30 + 30 + 30 + 10: one whole pass
				sweep(now)
			}
			if got := examined(); got != 100 {
				t.Fatalf("a whole pass examined %d items, want 100", got)
			}
			sweep(now)
			mustApply(t, s, set("t", "k100", "no expiry"))
			sweep(now)
			if got := examined(); got != 100 {
				t.Fatalf("sweeps after a pass that met no expiry examined %d more items, want none", got-100)
			}

			// An expiry written and overwritten: the count moved, so a pass starts, and it meets no expiry; an item
			// with one is written behind its cursor before it ends.
			mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k050"), Value: []byte("x"), Expires: now + 1000})
			mustApply(t, s, set("t", "k050", "v"))
			sweep(now)
			if got := examined(); got != 130 {
				t.Fatalf("examined %d after the expiry was written, want 130 (a new pass began)", got)
			}
			mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k005"), Value: []byte("x"), Expires: now + 1000})
			for range 3 {
				sweep(now)
			}
			removed := 0
			for range 4 {
				removed += sweep(now + 2000)
			}
			if removed != 1 {
				t.Fatalf("swept %d items after k005 expired, want 1 (written behind the cursor of a quiet pass)", removed)
			}
			if _, err := s.Get(ctx, "t", []byte("k005"), now); err == nil {
				t.Fatal("k005 is still stored after its sweep")
			}
		})
	}
}
