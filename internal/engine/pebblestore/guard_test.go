package pebblestore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// pebbleHas reports whether Pebble itself already exposes value at table/key (bypassing the guard).
func pebbleHas(s *Store, table, key, value string) bool {
	v, closer, err := s.db.Get(appendKey(nil, table, []byte(key)))
	if errors.Is(err, pebble.ErrNotFound) {
		return value == ""
	}
	if err != nil {
		return false
	}
	defer closer.Close()
	it, _ := decodeValue(v)
	return value != "" && string(it.Value) == value
}

// TestGuardHidesWritesUntilDurable holds the WAL fsync of a group and checks that, although Pebble already
// exposes the group's writes, no Get, Scan or Tables returns them until the fsync is released; and that reads
// of keys outside the group are not held up.
func TestGuardHidesWritesUntilDurable(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := open(t, gfs, SyncAlways)
	mustApply(t, s, set("t", "k", "old"), set("t", "del", "x"), set("other", "o", "1"))

	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	applied := applyAsync(s, set("t", "k", "new"), engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("del")},
		set("fresh", "f", "1"))
	// The premise: Pebble publishes the batch before its WAL sync returns.
	waitFor(t, func() bool { return gfs.blocked() > 0 && pebbleHas(s, "t", "k", "new") && pebbleHas(s, "t", "del", "") })

	// Reads outside the group answer at once.
	if it, err := s.Get(ctx, "other", []byte("o"), now); err != nil || string(it.Value) != "1" {
		t.Fatalf("unrelated Get = %q, %v", it.Value, err)
	}
	if got := dump(t, s, "other"); len(got) != 1 {
		t.Fatalf("unrelated Scan = %v", got)
	}

	type read struct {
		what string
		val  string
		at   time.Time
	}
	reads := make(chan read, 4)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		it, err := s.Get(ctx, "t", []byte("k"), now)
		reads <- read{"get k", fmt.Sprintf("%s %v", it.Value, err), time.Now()}
	}()
	go func() {
		defer wg.Done()
		_, err := s.Get(ctx, "t", []byte("del"), now)
		reads <- read{"get del", fmt.Sprint(err), time.Now()}
	}()
	go func() {
		defer wg.Done()
		got := dump(t, s, "t")
		reads <- read{"scan t", fmt.Sprintf("%d %s", len(got), got["k"].Value), time.Now()}
	}()
	go func() {
		defer wg.Done()
		names, err := s.Tables(ctx)
		reads <- read{"tables", fmt.Sprint(names, err), time.Now()}
	}()
	select {
	case r := <-reads:
		t.Fatalf("%s returned %q while the write's fsync was held", r.what, r.val)
	case <-time.After(200 * time.Millisecond):
	}
	released := time.Now()
	gfs.release()
	wg.Wait()
	close(reads)
	want := map[string]string{"get k": "new <nil>", "get del": "not found", "scan t": "1 new", "tables": "[fresh other t] <nil>"}
	for r := range reads {
		if r.at.Before(released) {
			t.Errorf("%s returned before the fsync was released", r.what)
		}
		if r.val != want[r.what] {
			t.Errorf("%s = %q, want %q", r.what, r.val, want[r.what])
		}
	}
	if o := <-applied; o.err != nil {
		t.Fatal(o.err)
	}
	if s.Stats()["guard_waits"] < 4 {
		t.Errorf("guard_waits = %d, want at least 4", s.Stats()["guard_waits"])
	}
}

// TestGuardConcurrent hammers one key with writers and readers while every fsync is slow, and checks that each
// value a reader returns was already written durably: the crash clone taken right after the read holds that
// value or a newer one.
func TestGuardConcurrent(t *testing.T) {
	mem := vfs.NewCrashableMem()
	gfs := newGateFS(mem)
	gfs.delay = 200 * time.Microsecond
	s := open(t, gfs, SyncAlways)
	mustApply(t, s, set("t", "k", "0"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{
					{Op: engine.OpIncr, Table: "t", Key: []byte("k"), Incr: engine.IncrArgs{Delta: 1}}}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 30; i++ {
		it, err := s.Get(ctx, "t", []byte("k"), now)
		if err != nil {
			t.Fatal(err)
		}
		seen, _ := engine.ParseInt(it.Value)
		clone := mem.CrashClone(vfs.CrashCloneCfg{}) // only synced data
		c, err := Open(Options{Dir: "/db", FS: clone, Logger: quiet, CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, "t", []byte("k"), now)
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		durable, _ := engine.ParseInt(got.Value)
		if durable < seen {
			t.Fatalf("a reader saw k=%d but only k=%d was durable", seen, durable)
		}
	}
}
