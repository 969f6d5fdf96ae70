package pebblestore

import (
	"strings"
	"testing"
	"time"

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

// TestGroupCutOnSecondResolutionAdmitsOnce: a group resolved again (an item it found alive expired meanwhile) may
// be cut shorter the second time, carrying requests the first resolution admitted: the free-space estimate must
// still count each request once (as TestGroupResolvedAgainIsAdmittedOnce requires of a group resolved again).
func TestGroupCutOnSecondResolutionAdmitsOnce(t *testing.T) {
	defer func(old int) { maxGroupResolved = old }(maxGroupResolved)
	maxGroupResolved = 4 << 10
	gfs := newGateFS(vfs.Default)
	// No poll during the test: a measure starts the pending count over.
	s := openWith(t, Options{Dir: t.TempDir(), FS: gfs, Sync: SyncAlways, CacheBytes: 8 << 20, Logger: quiet, maxInFlight: 1,
		spacePoll: time.Hour})
	if !s.space.measured.Load() {
		t.Skip("the file system's free space cannot be measured here")
	}
	const expires = now + 100
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("old"), Expires: expires})
	gfs.hold()
	defer gfs.release()
	first := applyAsync(s, set("t", "first", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })
	before := s.space.pending.Load()

	calls := 0
	clock := func() int64 { // k is alive at the first resolution, expired from then on
		calls++
		if calls == 1 {
			return expires - 1
		}
		return expires + 1
	}
	big := strings.Repeat("v", 3<<10)
	// First resolution: the SET NX fails (k alive), b writes 3 KiB, c a byte: no cut. Second: the SET NX writes
	// 3 KiB too, so the group passes 4 KiB at b and c, admitted by the first resolution, is carried.
	batches := []*engine.Batch{
		{Now: now, Clock: clock, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte(big), Cond: engine.CondAbsent}}},
		{Now: now, Muts: []engine.Mutation{set("t", "b", big)}},
		{Now: now, Muts: []engine.Mutation{set("t", "c", "1")}},
	}
	want := int64(0)
	var outs []chan applyOut
	for i, b := range batches {
		want += int64((&request{batch: b}).size())
		ch := make(chan applyOut, 1)
		go func() {
			res, err := s.Apply(ctx, b)
			ch <- applyOut{res, err}
		}()
		outs = append(outs, ch)
		queued(t, s, i+1)
	}
	gfs.release()
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	for i, ch := range outs {
		if o := <-ch; o.err != nil || o.res[0].Err != nil {
			t.Fatalf("batch %d: %+v, %v", i, o.res, o.err)
		}
	}
	if s.Stats()["groups_rejudged"] != 1 {
		t.Fatal("the group was not resolved again")
	}
	if m := s.Stats()["group_size_max"]; m != 2 {
		t.Fatalf("largest group: %d requests, want 2 (cut at the second resolution)", m)
	}
	if grew := s.space.pending.Load() - before; grew != want {
		t.Fatalf("pending free-space use grew %d for requests of %d bytes in all", grew, want)
	}
}
