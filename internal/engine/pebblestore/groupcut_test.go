package pebblestore

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestGroupCutAtResolvedBytes queues APPENDs of one byte to a 3 KiB value while the writer waits in a held sync:
// each request is a few bytes but resolves to 3 KiB, so with a 4 KiB bound on what a group builds they must be
// committed two to a group, in order, none lost, where a group bounded by its requests' bytes alone takes all.
func TestGroupCutAtResolvedBytes(t *testing.T) {
	defer func(old int) { maxGroupResolved = old }(maxGroupResolved)
	maxGroupResolved = 4 << 10
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	base := strings.Repeat("v", 3<<10)
	mustApply(t, s, set("t", "big", base))
	gfs.hold()
	defer gfs.release()
	first := applyAsync(s, set("t", "first", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })

	const n = 7
	var outs []chan applyOut
	for i := range n {
		app := engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("big"), Value: []byte{byte('a' + i)}}
		outs = append(outs, applyAsync(s, app))
		queued(t, s, i+1)
	}
	gfs.release()
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	for i, ch := range outs {
		o := <-ch
		if o.err != nil {
			t.Fatalf("append %d: %v", i, o.err)
		}
		if got, want := len(o.res[0].New.Value), len(base)+i+1; got != want {
			t.Fatalf("append %d made a value of %d bytes, want %d", i, got, want)
		}
	}
	got, err := s.Get(ctx, "t", []byte("big"), now)
	if err != nil || string(got.Value) != base+"abcdefg" {
		t.Fatalf("after the appends: %d bytes ending %q, %v", len(got.Value), got.Value[len(base):], err)
	}
	if m := s.Stats()["group_size_max"]; m != 2 {
		t.Fatalf("largest group: %d requests, want 2 (3 KiB each under a 4 KiB bound)", m)
	}
}
