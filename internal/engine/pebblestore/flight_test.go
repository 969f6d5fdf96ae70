package pebblestore

import (
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

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
