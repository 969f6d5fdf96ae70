package pebblestore

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestPipelinedCommitsStayHiddenUntilDurable: while the first group's fsync is held, the writer goes on to
// commit the next groups (their writes are in Pebble), but no Apply returns and no read returns their writes
// until the fsync is released; a read-only batch behind them is answered after them, with what they wrote.
func TestPipelinedCommitsStayHiddenUntilDurable(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := open(t, gfs, SyncAlways)
	mustApply(t, s, set("t", "a", "old"))
	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	first := applyAsync(s, set("t", "a", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })
	second := applyAsync(s, set("t", "b", "2"))
	// The writer did not wait for the held fsync: the second group is in Pebble already.
	waitFor(t, func() bool { return pebbleHas(s, "t", "b", "2") })
	third := applyAsync(s, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("b")})

	got := make(chan string, 1)
	go func() {
		it, err := s.Get(ctx, "t", []byte("b"), now)
		got <- string(it.Value) + " " + errString(err)
	}()
	waitFor(t, func() bool { return s.Stats()["guard_waits"] >= 1 }) // the read found b in flight and waits
	for name, ch := range map[string]chan applyOut{"first": first, "second": second, "third": third} {
		select {
		case o := <-ch:
			t.Fatalf("%s Apply returned %v while the first fsync was held", name, o)
		default:
		}
	}
	select {
	case v := <-got:
		t.Fatalf("Get returned %q while the fsync was held", v)
	default:
	}
	gfs.release()
	for _, ch := range []chan applyOut{first, second} {
		if o := <-ch; o.err != nil {
			t.Fatal(o.err)
		}
	}
	if o := <-third; o.err != nil || string(o.res[0].Old.Value) != "2" {
		t.Fatalf("read-only batch behind the groups: %+v", o)
	}
	if v := <-got; v != "2 <nil>" {
		t.Fatalf("Get after the release: %q", v)
	}
	if n := len(*s.inflight.Load()); n != 0 {
		t.Fatalf("%d groups still in flight", n)
	}
}

// On one core the writer waits for each group's fsync (bound 1); on more it pipelines; a set bound wins.
func TestInFlightBoundFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if n := inFlightBound(0); n != 1 {
		t.Fatalf("GOMAXPROCS=1: bound %d, want 1", n)
	}
	if n := inFlightBound(3); n != 3 {
		t.Fatalf("GOMAXPROCS=1, option 3: bound %d, want 3", n)
	}
	runtime.GOMAXPROCS(2)
	if n := inFlightBound(0); n != maxInFlight {
		t.Fatalf("GOMAXPROCS=2: bound %d, want %d", n, maxInFlight)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// An Apply that gave up while its request was queued is never read by the writer, so its caller may reuse the
// batch at once, as a connection reuses its mutations for the next pipeline (under -race, a read of the
// reused batch is reported; before, the writer measured every queued batch's size as it took it).
func TestGivenUpApplyIsNotRead(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	gfs.hold()
	defer gfs.release()
	first := applyAsync(s, set("t", "a", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })

	cctx, cancel := context.WithCancel(ctx)
	muts := []engine.Mutation{set("t", "b", "2")}
	done := make(chan error, 1)
	go func() {
		_, err := s.Apply(cctx, &engine.Batch{Now: now, Muts: muts})
		done <- err
	}()
	waitFor(t, func() bool { return len(s.queue) == 1 }) // queued: the writer waits for the held group
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled Apply returned %v", err)
	}
	gfs.release() // the writer goes on and takes the queue, while the caller reuses its batch
	muts[0].Key, muts[0].Value = []byte("reused"), []byte("x")
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	mustApply(t, s, set("t", "c", "3")) // the writer has gone past the given-up request
	for _, k := range []string{"b", "reused"} {
		if it, err := s.Get(ctx, "t", []byte(k), now); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("t/%s = %q, %v after its Apply gave up", k, it.Value, err)
		}
	}
}
