package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
)

const now = int64(1_700_000_000_000)

var ctx = context.Background()

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens a store on fs (a fresh in-memory one if nil) and closes it when the test ends. Under SyncAlways its
// commits are pipelined (maxInFlight groups in flight) whatever GOMAXPROCS the tests run with (inFlightBound).
func open(t testing.TB, fs vfs.FS, mode SyncMode) *Store {
	return openWith(t, Options{Dir: "/db", FS: fs, Sync: mode, CacheBytes: 8 << 20, Logger: quiet, maxInFlight: maxInFlight})
}

// openSerial opens a store whose writer waits for each group's fsync before it takes more requests (one group in
// flight, as before pipelined commits): with the fsync held, requests queue up and form one group.
func openSerial(t testing.TB, fs vfs.FS) *Store {
	return openWith(t, Options{Dir: "/db", FS: fs, Sync: SyncAlways, CacheBytes: 8 << 20, Logger: quiet, maxInFlight: 1})
}

func openWith(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.FS == nil {
		opts.FS = vfs.NewCrashableMem()
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncInterval, SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			enginetest.Run(t, func(t *testing.T) engine.Engine { return open(t, nil, mode) }, engine.AllAbilities)
		})
	}
}

func TestConformanceOnDisk(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		s, err := Open(Options{Dir: t.TempDir(), CacheBytes: 8 << 20, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, engine.AllAbilities)
}

func mustApply(t testing.TB, e engine.Engine, muts ...engine.Mutation) []engine.Result {
	t.Helper()
	res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("Apply: mutation %d: %v", i, r.Err)
		}
	}
	return res
}

func set(table, key, val string) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key), Value: []byte(val)}
}

// dump returns every live item of table as key → item.
func dump(t testing.TB, s *Store, table string) map[string]engine.Item {
	t.Helper()
	m := map[string]engine.Item{}
	err := s.Scan(ctx, table, engine.Range{}, now, func(k []byte, it engine.Item) bool {
		it.Value = bytes.Clone(it.Value)
		m[string(k)] = it
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return m
}

func TestReopenKeepsEverything(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := open(t, fs, SyncAlways)
	mustApply(t, s,
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("a"), Value: []byte("1"), Flags: 0xdeadbeef, Expires: now + 3_600_000},
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("b"), Value: []byte{}, Flags: 7},
		set("t", "c", "gone"), set("u", "x", "flushed"), set("w", "y", "kept"))
	mustApply(t, s, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("c")},
		engine.Mutation{Op: engine.OpFlush, Table: "u"})
	before := dump(t, s, "t")
	maxVersion := s.Stats()["version"]
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, fs, SyncAlways)
	after := dump(t, s, "t")
	if fmt.Sprint(after) != fmt.Sprint(before) || len(after) != 2 {
		t.Fatalf("after reopen t = %v, want %v", after, before)
	}
	if a := after["a"]; a.Flags != 0xdeadbeef || a.Expires != now+3_600_000 || string(a.Value) != "1" {
		t.Fatalf("item a = %+v", a)
	}
	if b, err := s.Get(ctx, "t", []byte("b"), now); err != nil || b.Value == nil || len(b.Value) != 0 || b.Flags != 7 {
		t.Fatalf("empty value item b = %+v, %v", b, err)
	}
	if _, err := s.Get(ctx, "u", []byte("x"), now); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("flushed table item: %v", err)
	}
	if names, _ := s.Tables(ctx); fmt.Sprint(names) != "[t w]" {
		t.Fatalf("Tables = %q", names)
	}
	if got := s.Stats()["version"]; got != maxVersion {
		t.Fatalf("version after reopen = %d, want %d", got, maxVersion)
	}
	res := mustApply(t, s, set("t", "new", "v"))
	if v := res[0].New.Version; v <= uint64(maxVersion) {
		t.Fatalf("version after reopen %d, not above %d", v, maxVersion)
	}
}

func TestVersionsGrowAcrossReopens(t *testing.T) {
	fs := vfs.NewCrashableMem()
	last := uint64(0)
	for round := 0; round < 5; round++ {
		s, err := Open(Options{Dir: "/db", FS: fs, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			res := mustApply(t, s, set("t", fmt.Sprint(i), "v"), set("t", "same", fmt.Sprint(round)))
			for _, r := range res {
				if r.New.Version <= last {
					t.Fatalf("round %d: version %d after %d", round, r.New.Version, last)
				}
				last = r.New.Version
			}
		}
		if round%2 == 0 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			// A crash instead of a close: only what was synced survives.
			crashed := fs.CrashClone(vfs.CrashCloneCfg{})
			_ = s.Close()
			fs = crashed
		}
	}
}

func TestBinaryKeysAndTableIsolation(t *testing.T) {
	s := open(t, nil, SyncAlways)
	tables := []string{"", "a", "a\x00b", "a\x00", "ab", "\xff", "\xff\xff", "\x00"}
	keys := [][]byte{{}, {0}, {0, 0}, {0xff}, {0xff, 0xff}, []byte("k\x00"), []byte("k"), []byte("k\xff")}
	for _, tbl := range tables {
		for _, k := range keys {
			mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: tbl, Key: k, Value: []byte(tbl + "|" + string(k))})
		}
	}
	for _, tbl := range tables {
		var got [][]byte
		err := s.Scan(ctx, tbl, engine.Range{}, now, func(k []byte, it engine.Item) bool {
			if string(it.Value) != tbl+"|"+string(k) {
				t.Errorf("table %q key %q holds %q", tbl, k, it.Value)
			}
			got = append(got, bytes.Clone(k))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%q", [][]byte{{}, {0}, {0, 0}, []byte("k"), []byte("k\x00"), []byte("k\xff"), {0xff}, {0xff, 0xff}})
		if fmt.Sprintf("%q", got) != want {
			t.Fatalf("table %q scan = %q, want %q", tbl, got, want)
		}
		for _, k := range keys {
			it, err := s.Get(ctx, tbl, k, now)
			if err != nil || string(it.Value) != tbl+"|"+string(k) {
				t.Fatalf("Get %q/%q = %q, %v", tbl, k, it.Value, err)
			}
		}
	}
	// Ranges with binary bounds stay inside the table.
	var got []string
	_ = s.Scan(ctx, "a", engine.Range{Start: []byte("k"), End: []byte{0xff}}, now, func(k []byte, _ engine.Item) bool {
		got = append(got, string(k))
		return true
	})
	if fmt.Sprintf("%q", got) != `["k" "k\x00" "k\xff"]` {
		t.Fatalf("range scan = %q", got)
	}
	if names, err := s.Tables(ctx); err != nil || fmt.Sprintf("%q", names) != fmt.Sprintf("%q", sortedCopy(tables)) {
		t.Fatalf("Tables = %q, %v", names, err)
	}
	// Flushing "a" leaves "a\x00b", "a\x00" and "ab" alone.
	mustApply(t, s, engine.Mutation{Op: engine.OpFlush, Table: "a"})
	if n := len(dump(t, s, "a")); n != 0 {
		t.Fatalf("%d items left in flushed table", n)
	}
	for _, tbl := range []string{"a\x00b", "a\x00", "ab", ""} {
		if n := len(dump(t, s, tbl)); n != len(keys) {
			t.Fatalf("table %q has %d items after flushing \"a\", want %d", tbl, n, len(keys))
		}
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// queued waits until the writer's queue holds n requests (the writer is busy with a held sync).
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	waitFor(t, func() bool { return len(s.queue) == n })
}

// TestGroupBatchesSeeEachOther forms one group of several batches (the writer is stuck in a held sync while
// they queue) and checks that each batch sees the writes of the earlier ones, flushes included.
func TestGroupBatchesSeeEachOther(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	mustApply(t, s, set("t", "old", "x"), set("u", "keep", "y"))
	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	first := applyAsync(s, set("t", "first", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })

	incr := engine.Mutation{Op: engine.OpIncr, Table: "t", Key: []byte("n"), Incr: engine.IncrArgs{Delta: 1, Create: true}}
	batches := [][]engine.Mutation{
		{incr},
		{incr, set("t", "x", "1")},
		{{Op: engine.OpFlush, Table: "t"}},
		{incr, {Op: engine.OpGet, Table: "t", Key: []byte("x")}},
		{{Op: engine.OpAppend, Table: "u", Key: []byte("keep"), Value: []byte("z")}},
		{{Op: engine.OpSet, Table: "t", Key: []byte("g"), Value: []byte("v"), Cond: engine.CondAbsent, Guard: true}},
		{{Op: engine.OpSet, Table: "t", Key: []byte("g"), Value: []byte("w"), Cond: engine.CondAbsent, Guard: true}},
	}
	var outs []chan applyOut
	for i, b := range batches {
		outs = append(outs, applyAsync(s, b...))
		queued(t, s, i+1)
	}
	gfs.release()
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	var res [][]engine.Result
	for i, ch := range outs {
		o := <-ch
		if i == len(outs)-1 {
			if !errors.Is(o.err, engine.ErrAborted) {
				t.Fatalf("second SET NX in the group: %v, want ErrAborted", o.err)
			}
			continue
		}
		if o.err != nil {
			t.Fatalf("batch %d: %v", i, o.err)
		}
		res = append(res, o.res)
	}
	if v := string(res[1][0].New.Value); v != "2" {
		t.Fatalf("second incr saw %q, want 2", v)
	}
	if v := string(res[3][0].New.Value); v != "1" || res[3][1].Err == nil {
		t.Fatalf("after flush: incr = %q, get x err = %v; want 1 and not found", v, res[3][1].Err)
	}
	if got := dump(t, s, "t"); len(got) != 2 || string(got["n"].Value) != "1" || string(got["g"].Value) != "v" {
		t.Fatalf("table t = %v", got)
	}
	if got, _ := s.Get(ctx, "u", []byte("keep"), now); string(got.Value) != "yz" {
		t.Fatalf("u/keep = %q", got.Value)
	}
	if st := s.Stats(); st["group_size_max"] < int64(len(batches)) {
		t.Fatalf("batches did not share a group: %v", st)
	}
}

type applyOut struct {
	res []engine.Result
	err error
}

func applyAsync(s *Store, muts ...engine.Mutation) chan applyOut {
	ch := make(chan applyOut, 1)
	go func() {
		res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: muts})
		ch <- applyOut{res, err}
	}()
	return ch
}

// TestSweepSparesRewrites: an item Sweep found expired but that was rewritten before the writer deleted it
// survives.
func TestSweepSparesRewrites(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("old"), Expires: now - 1},
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("dead"), Value: []byte("x"), Expires: now - 1})
	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	blocker := applyAsync(s, set("other", "k", "v"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })
	rewrite := applyAsync(s, set("t", "k", "new"))
	queued(t, s, 1)
	swept := make(chan int, 1)
	go func() {
		n, err := s.Sweep(ctx, now, 100)
		if err != nil {
			t.Error(err)
		}
		swept <- n
	}()
	queued(t, s, 2)
	gfs.release()
	for _, ch := range []chan applyOut{blocker, rewrite} {
		if o := <-ch; o.err != nil {
			t.Fatal(o.err)
		}
	}
	if n := <-swept; n != 1 {
		t.Fatalf("swept %d, want 1 (only the item not rewritten)", n)
	}
	if it, err := s.Get(ctx, "t", []byte("k"), now); err != nil || string(it.Value) != "new" {
		t.Fatalf("rewritten item = %q, %v", it.Value, err)
	}
	if _, err := s.Get(ctx, "t", []byte("dead"), now-10); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("swept item still stored: %v", err)
	}
}

// TestApplyCancelledWhileQueued: a batch whose ctx ends before the writer takes it is not applied.
func TestApplyCancelledWhileQueued(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	blocker := applyAsync(s, set("t", "a", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Apply(cctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "b", "2")}})
		errc <- err
	}()
	queued(t, s, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Apply: %v", err)
	}
	gfs.release()
	if o := <-blocker; o.err != nil {
		t.Fatal(o.err)
	}
	mustApply(t, s, set("t", "c", "3")) // the writer has passed the cancelled request
	if _, err := s.Get(ctx, "t", []byte("b"), now); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("cancelled batch was applied: %v", err)
	}
}

// TestCloseDrainsQueue: Applies queued when Close starts are committed, later calls get ErrClosed.
func TestCloseDrainsQueue(t *testing.T) {
	gfs := newGateFS(vfs.NewCrashableMem())
	s, err := Open(Options{Dir: "/db", FS: gfs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	gfs.hold()
	defer gfs.release() // also when the test fails early, so Close can drain
	var outs []chan applyOut
	for i := 0; i < 10; i++ {
		outs = append(outs, applyAsync(s, set("t", fmt.Sprint(i), "v")))
	}
	waitFor(t, func() bool { return gfs.blocked() > 0 && s.active.Load() == 10 })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	waitFor(t, func() bool { return s.closing.Load() })
	gfs.release()
	for _, ch := range outs {
		if o := <-ch; o.err != nil {
			t.Fatalf("queued Apply failed at Close: %v", o.err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "t", []byte("0"), now); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "x", "v")}}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	s2 := open(t, gfs.FS.(*vfs.MemFS).CrashClone(vfs.CrashCloneCfg{}), SyncAlways)
	if n := len(dump(t, s2, "t")); n != 10 {
		t.Fatalf("%d of 10 drained writes survived", n)
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	if _, err := Open(Options{}); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("empty Dir: %v", err)
	}
	if _, err := Open(Options{Dir: "/db", FS: vfs.NewMem(), Sync: 9}); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("bad sync mode: %v", err)
	}
}

func TestStats(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := open(t, fs, SyncAlways)
	for i := 0; i < 5; i++ {
		mustApply(t, s, set("t", fmt.Sprint(i), "v"))
	}
	st := s.Stats()
	for name, want := range map[string]int64{"version": 5, "apply_batches": 5, "commit_groups": 5, "fsyncs": 5,
		"group_size_mean": 1, "keys_estimate": 5} {
		if st[name] != want {
			t.Errorf("stats[%s] = %d, want %d", name, st[name], want)
		}
	}
	if st["wal_bytes_written"] <= 0 {
		t.Errorf("wal_bytes_written = %d", st["wal_bytes_written"])
	}
	mustApply(t, s, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("0")},
		engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("1")})
	if n := s.Stats()["keys_estimate"]; n != 3 {
		t.Errorf("keys_estimate after 2 deletes = %d, want 3", n)
	}
	if err := s.db.Flush(); err != nil { // the memtable becomes an sstable
		t.Fatal(err)
	}
	if n := s.Stats()["keys_estimate"]; n != 3 {
		t.Errorf("keys_estimate after a memtable flush = %d, want 3", n)
	}
	mustApply(t, s, set("u", "x", "v"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, fs, SyncAlways)
	if n := s.Stats()["keys_estimate"]; n != 4 {
		t.Errorf("keys_estimate after reopen = %d, want 4", n)
	}
	mustApply(t, s, engine.Mutation{Op: engine.OpFlush}, set("v", "y", "v"))
	if err := s.db.Compact(ctx, dataStart, dataEnd, true); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats()["keys_estimate"]; n != 1 {
		t.Errorf("keys_estimate after flushing everything, one set and a compaction = %d, want 1", n)
	}
}

// TestStatsDuringFlushes: Stats read the sstables under the store's stats lock, and Pebble calls the FlushEnd
// handler holding its own lock, which SSTables takes too; when the handler took the stats lock, a flush ending
// during a Stats call deadlocked both for good (a CI run hung 15 minutes), and with them every later flush, write
// and INFO.
func TestStatsDuringFlushes(t *testing.T) {
	// Not open: its cleanup's Close would hang on a deadlocked store instead of reporting it.
	s, err := Open(Options{Dir: "/db", FS: vfs.NewMem(), Sync: SyncNever, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					s.Stats()
				}
			}
		}()
	}
	done := make(chan error, 1)
	go func() {
		for i := range 300 {
			if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", fmt.Sprint(i), "v")}}); err != nil {
				done <- err
				return
			}
			if err := s.db.Flush(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("300 writes and flushes with Stats running alongside did not end within a minute: deadlocked")
	}
}

// TestGroupCommitSharesFsyncs: concurrent Appliers on a slow disk share WAL fsyncs.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	gfs.delay = time.Millisecond
	s := open(t, gfs, SyncAlways)
	before := gfs.syncs.Load()
	const appliers, each = 16, 20
	var wg sync.WaitGroup
	for a := 0; a < appliers; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", fmt.Sprint(a, "-", i), "v")}}); err != nil {
					t.Error(err)
					return
				}
			}
		}(a)
	}
	wg.Wait()
	syncs := gfs.syncs.Load() - before
	st := s.Stats()
	t.Logf("%d batches, %d WAL fsyncs, %d groups, mean group %d", appliers*each, syncs, st["commit_groups"], st["group_size_mean"])
	if syncs > appliers*each/4 {
		t.Fatalf("%d WAL fsyncs for %d batches: group commit is not sharing them", syncs, appliers*each)
	}
	if st["fsyncs"] != st["commit_groups"] || st["apply_batches"] != appliers*each {
		t.Fatalf("stats disagree: %v", st)
	}
}

func TestScanHonoursContext(t *testing.T) {
	s := open(t, nil, SyncAlways)
	muts := make([]engine.Mutation, 100)
	for i := range muts {
		muts[i] = set("t", fmt.Sprintf("%03d", i), "v")
	}
	mustApply(t, s, muts...)
	cctx, cancel := context.WithCancel(ctx)
	visited := 0
	err := s.Scan(cctx, "t", engine.Range{}, now, func([]byte, engine.Item) bool {
		visited++
		if visited == 10 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) || visited != 10 {
		t.Fatalf("Scan after cancel: err %v, visited %d, want context.Canceled after 10", err, visited)
	}
}

func TestOpenRefusesOtherFormat(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, SyncAlways)
	if err := s.db.Set(metaFormatKey, beUint64(formatVersion+1), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(Options{Dir: "/db", FS: fs, Logger: quiet}); err == nil {
		s2.Close()
		t.Fatal("Open accepted a store of another format")
	}
}

// TestSecondOpenSaysTheDirectoryIsLocked: a second Open of a directory in use says who holds it and what to do.
func TestSecondOpenSaysTheDirectoryIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "locked by another process (another anykv serving it") ||
		!strings.Contains(err.Error(), "choose another --dir") {
		t.Fatalf("second Open: %v", err)
	}
}
