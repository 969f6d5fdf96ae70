package pebblestore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/pebblestore/smallfs"
)

// openLimited opens a store on fs with a reserve and a poller period.
func openLimited(t *testing.T, fs *smallfs.FS, reserve int64, poll time.Duration) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "/db", FS: fs, CacheBytes: 8 << 20, Logger: quiet,
		MinFreeSpace: MinFree{Bytes: reserve}, spacePoll: poll})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkAcked requires every acknowledged key with its value.
func checkAcked(t *testing.T, s *Store, acked map[string]string) {
	t.Helper()
	for k, v := range acked {
		it, err := s.Get(ctx, "t", []byte(k), now)
		if err != nil || string(it.Value) != v {
			t.Fatalf("acknowledged %s: got %q, %v", k, it.Value, err)
		}
	}
}

// checkReopened requires every acknowledged key before and after closing s and opening fs again.
func checkReopened(t *testing.T, s *Store, fs *smallfs.FS, acked map[string]string) {
	t.Helper()
	checkAcked(t, s, acked)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, openLimited(t, fs, 8<<20, 10*time.Millisecond), acked)
}

// waitWritable waits until e accepts the write of key, and records it in acked.
func waitWritable(t *testing.T, e engine.Engine, key, val string, acked map[string]string) {
	t.Helper()
	waitFor(t, func() bool {
		_, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", key, val)}})
		return err == nil
	})
	acked[key] = val
}

func TestParseMinFree(t *testing.T) {
	for in, want := range map[string]MinFree{
		"0": {}, "4096": {Bytes: 4096}, "1GiB": {Bytes: 1 << 30}, "500MB": {Bytes: 500e6}, "64 MiB": {Bytes: 64 << 20},
		"2kb": {Bytes: 2000}, "10b": {Bytes: 10}, "5%": {Percent: 5}, "0.5%": {Percent: 0.5}, " 100% ": {Percent: 100},
	} {
		got, err := ParseMinFree(in)
		if err != nil || got != want {
			t.Errorf("ParseMinFree(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseMinFree(got.String()); err != nil || back.of(1<<40) != got.of(1<<40) {
			t.Errorf("%q does not read back: %q → %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "-1", "1XB", "101%", "-5%", "x%", "GiB", "99999999999TiB"} {
		if _, err := ParseMinFree(in); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("ParseMinFree(%q): %v, want ErrInvalid", in, err)
		}
	}
	if got := (MinFree{Percent: 5}).of(1000); got != 50 {
		t.Errorf("5%% of 1000 = %d", got)
	}
}

// TestReserveRefusesWritesAndRecovers: writes are refused with ErrNoSpace before free space falls below the
// reserve (the file system never reports ENOSPC), reads go on, and writes are accepted again once space is
// freed, without reopening; nothing acknowledged is lost, also across a reopen.
func TestReserveRefusesWritesAndRecovers(t *testing.T) {
	fs := smallfs.New(64 << 20)
	s := openLimited(t, fs, 8<<20, 10*time.Millisecond)
	acked := map[string]string{}
	// Incompressible values: sstables are Snappy-compressed, and a repeated byte would shrink to nothing once
	// the memtable is flushed.
	rnd := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(rnd)
	val := string(rnd)
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		k := fmt.Sprintf("k%04d", i)
		if _, refused = s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", k, val+k)}}); refused == nil {
			acked[k] = val + k
		}
	}
	if !errors.Is(refused, engine.ErrNoSpace) {
		t.Fatalf("after %d writes of 64 KiB on 64 MiB: %v, want ErrNoSpace", len(acked), refused)
	}
	if st := s.Stats(); st["disk_enospc_errors"] != 0 || st["disk_free_bytes"] < 4<<20 {
		t.Fatalf("the reserve did not keep the file system from filling: %v", st)
	}
	t.Logf("%d writes of 64 KiB acknowledged before the refusal: %v", len(acked), refused)
	fs.Take(60 << 20) // another program fills the disk: the store notices it is full
	waitFor(t, func() bool { return s.Stats()["disk_full"] == 1 })
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "small", "x")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a small write on a full disk: %v", err)
	}
	checkAcked(t, s, acked)

	fs.Release()
	fs.Grow(32 << 20) // the volume grows
	waitWritable(t, s, "again", "yes", acked)
	if st := s.Stats(); st["disk_full"] != 0 || st["disk_writes_refused"] == 0 {
		t.Fatalf("stats after recovery: %v", st)
	}
	checkReopened(t, s, fs, acked)
}

// TestAdmitCountsRequestBytes: with no poll to help, the writer refuses a batch whose bytes would take free
// space below the reserve before it reaches Pebble (no ENOSPC), and still admits a small one.
func TestAdmitCountsRequestBytes(t *testing.T) {
	fs := smallfs.New(64 << 20)
	s := openLimited(t, fs, 8<<20, time.Hour)
	big := strings.Repeat("x", 6<<20)
	var muts []engine.Mutation
	for i := 0; i < 10; i++ { // 60 MiB: more than the ~52 MiB above the reserve
		muts = append(muts, set("t", fmt.Sprintf("big%d", i), big))
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a 60 MiB batch with ~52 MiB above the reserve: %v, want ErrNoSpace", err)
	}
	mustApply(t, s, set("t", "small", "ok"))
	if st := s.Stats(); st["disk_enospc_errors"] != 0 || st["disk_full"] != 0 || st["disk_writes_refused"] != 1 {
		t.Fatalf("stats: %v", st)
	}
	if _, err := s.Get(ctx, "t", []byte("big0"), now); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the refused batch left big0: %v", err)
	}
}

// TestENOSPCRemovesBallastThenWaits: a write that meets ENOSPC although the reserve admitted it (another program
// filled the disk since the last measure) first gets the ballast's space and succeeds, turning writes off; on a
// second such race, with no ballast left, the WAL write waits for space instead of making Pebble fail, while
// reads go on, and completes once space returns. Nothing acknowledged is lost.
func TestENOSPCRemovesBallastThenWaits(t *testing.T) {
	fs := smallfs.New(64 << 20)
	s := openLimited(t, fs, 8<<20, time.Hour) // the poller never runs: the store cannot see the disk fill
	if _, err := fs.Stat("/db/" + BallastName); err != nil {
		t.Fatalf("no ballast after Open: %v", err)
	}
	mustApply(t, s, set("t", "before", "1"))
	acked := map[string]string{"before": "1"}
	fs.Fill()
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "raced", "2")}}); err != nil {
		t.Fatalf("the write that met ENOSPC should have used the ballast: %v", err)
	}
	acked["raced"] = "2"
	if _, err := fs.Stat("/db/" + BallastName); err == nil {
		t.Fatal("the ballast is still there")
	}
	if st := s.Stats(); st["disk_full"] != 1 || st["disk_enospc_errors"] == 0 {
		t.Fatalf("stats after ENOSPC: %v", st)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "refused", "3")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a write after ENOSPC: %v, want ErrNoSpace", err)
	}

	fs.Fill()                 // what the ballast freed is taken too
	s.space.full.Store(false) // a measure raced again: the next write reaches Pebble on a full disk
	before := s.Stats()["disk_enospc_errors"]
	out := applyAsync(s, set("t", "waited", "4"))
	waitFor(t, func() bool { return s.Stats()["disk_enospc_errors"] >= before+3 })
	select {
	case o := <-out:
		t.Fatalf("the write returned on a full disk: %v", o.err)
	default:
	}
	if it, err := s.Get(ctx, "t", []byte("before"), now); err != nil || string(it.Value) != "1" {
		t.Fatalf("a read while a write waits for space: %q, %v", it.Value, err)
	}
	fs.Release() // the other program's files are deleted
	if o := <-out; o.err != nil {
		t.Fatalf("the write that waited for space: %v", o.err)
	}
	acked["waited"] = "4"
	checkReopened(t, s, fs, acked)
}

// TestOpenOnFullDisk: a store opens on a disk with no free byte, read-only (a writable Open would wait for
// space to flush the memtable it recovers), serves reads and refuses writes with ErrNoSpace; Serving reopens it
// writable once space is freed, while readers keep reading without an error.
func TestOpenOnFullDisk(t *testing.T) {
	fs := smallfs.New(64 << 20)
	s := openLimited(t, fs, 8<<20, 10*time.Millisecond)
	acked := map[string]string{}
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("k%d", i)
		mustApply(t, s, set("t", k, k))
		acked[k] = k
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fs.Fill()
	v, err := OpenServing(Options{Dir: "/db", FS: fs, CacheBytes: 8 << 20, Logger: quiet,
		MinFreeSpace: MinFree{Bytes: 8 << 20}, spacePoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("OpenServing on a full disk: %v", err)
	}
	t.Cleanup(func() { _ = v.Close() })
	if st := v.Stats(); st["disk_full"] != 1 || !v.cur.Load().space.readOnly.Load() {
		t.Fatalf("opened on a full disk, read-only %v, stats: %v", v.cur.Load().space.readOnly.Load(), st)
	}
	for k, val := range acked {
		if it, err := v.Get(ctx, "t", []byte(k), now); err != nil || string(it.Value) != val {
			t.Fatalf("read on a full disk: %s: %q, %v", k, it.Value, err)
		}
	}
	if _, err := v.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "c", "3")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a write on a full disk: %v, want ErrNoSpace", err)
	}
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() { // reads through the swap never fail
		for i := 0; ; i++ {
			select {
			case <-stop:
				readErr <- nil
				return
			default:
			}
			k := fmt.Sprintf("k%d", i%100)
			if it, err := v.Get(ctx, "t", []byte(k), now); err != nil || string(it.Value) != k {
				readErr <- fmt.Errorf("read during the swap: %s: %q, %w", k, it.Value, err)
				return
			}
		}
	}()
	fs.Release()
	waitWritable(t, v, "c", "3", acked)
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if st := v.Stats(); st["disk_full"] != 0 {
		t.Fatalf("writable again, stats: %v", st)
	}
	waitFor(t, func() bool { _, err := fs.Stat("/db/" + BallastName); return err == nil })
	checkAcked(t, v.cur.Load(), acked)
}

// TestServingConformance: Serving forwards every ability of the store.
func TestServingConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		v, err := OpenServing(Options{Dir: "/db", FS: vfs.NewMem(), CacheBytes: 8 << 20, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}, engine.AllAbilities)
}

// TestLateBackgroundENOSPCKeepsWritesOn: a flush that met ENOSPC reports its failure a second later (outOfSpace
// paces it), when space may be back and the poller may have turned writes on again; that late report must not
// turn them off until the next poll. (CI saw disk_full still 1 after the store accepted writes again.)
func TestLateBackgroundENOSPCKeepsWritesOn(t *testing.T) {
	fs := smallfs.New(64 << 20)
	s := openLimited(t, fs, 8<<20, time.Hour) // no poll within the test
	s.space.backgroundError(fmt.Errorf("pebble: flush: write 000012.sst: %w", syscall.ENOSPC))
	if st := s.Stats(); st["disk_full"] != 0 {
		t.Fatalf("a late ENOSPC of a flush turned writes off with %d bytes free: %v", st["disk_free_bytes"], st)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "k", "v")}}); err != nil {
		t.Fatalf("a write after a late ENOSPC with room on disk: %v", err)
	}
	fs.Take(60 << 20) // now the disk is full: the same report turns writes off
	s.space.backgroundError(fmt.Errorf("pebble: flush: write 000013.sst: %w", syscall.ENOSPC))
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "k", "w")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a write after an ENOSPC on a full disk: %v, want ErrNoSpace", err)
	}
}

// gatedBallastFS holds every write of the ballast's temporary file until gate closes.
type gatedBallastFS struct {
	vfs.FS
	gate, writing chan struct{}
	once          sync.Once
}

func (f *gatedBallastFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	if err == nil && strings.HasSuffix(name, BallastName+".tmp") {
		return gatedFile{file, f}, nil
	}
	return file, err
}

type gatedFile struct {
	vfs.File
	fs *gatedBallastFS
}

func (g gatedFile) Write(p []byte) (int, error) {
	g.fs.once.Do(func() { close(g.fs.writing) })
	<-g.fs.gate
	return g.File.Write(p)
}

// Pebble reports a flush's ENOSPC from its BackgroundError callback, which may hold its own mutex: the report's
// measure of free space must not wait for a ballast being written (megabytes and an fsync), which held the
// space's mutex throughout and so every Pebble operation behind that callback.
func TestBackgroundErrorDoesNotWaitForTheBallast(t *testing.T) {
	fs := &gatedBallastFS{FS: smallfs.New(256 << 20), gate: make(chan struct{}), writing: make(chan struct{})}
	if err := fs.MkdirAll("/db", dirMode); err != nil {
		t.Fatal(err)
	}
	sp := newSpace(fs, "/db", MinFree{Bytes: 8 << 20}, quiet, time.Hour)
	sp.measure()
	restored := make(chan struct{})
	go func() { sp.restoreBallast(); close(restored) }()
	<-fs.writing
	reported := make(chan struct{})
	go func() { sp.backgroundError(fmt.Errorf("pebble: flush: %w", syscall.ENOSPC)); close(reported) }()
	select {
	case <-reported:
	case <-time.After(2 * time.Second):
		close(fs.gate)
		t.Fatal("a background ENOSPC report waited for the ballast's write")
	}
	close(fs.gate)
	<-restored
	if _, err := fs.Stat(sp.ballast); err != nil {
		t.Fatalf("the ballast was not written: %v", err)
	}
}

// TestOpenWithoutRoomToFlushRefusesWrites: a store whose disk has room for the reserve but not for flushing the
// WAL it recovers opens read-only, and a write made before the poller's first measure is refused with
// ErrNoSpace; it used to be admitted (the reserve was free), reach the read-only Pebble and fail the store.
func TestOpenWithoutRoomToFlushRefusesWrites(t *testing.T) {
	fs := smallfs.New(64 << 20)
	const reserve = 8 << 20
	s := openLimited(t, fs, reserve, time.Hour)
	for i := 0; i < 100; i++ {
		mustApply(t, s, set("t", fmt.Sprintf("k%d", i), strings.Repeat("v", 1000)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var wal int64
	names, _ := fs.List("/db")
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if fi, err := fs.Stat("/db/" + n); err == nil {
				wal += fi.Size()
			}
		}
	}
	if wal < 2 {
		t.Fatalf("no WAL to recover (%d bytes)", wal)
	}
	u, _ := fs.GetDiskUsage("/db")
	fs.Take(int64(u.AvailBytes) - reserve - wal/2) // the reserve is free, flushing the WAL is not
	v, err := OpenServing(Options{Dir: "/db", FS: fs, CacheBytes: 8 << 20, Logger: quiet,
		MinFreeSpace: MinFree{Bytes: reserve}, spacePoll: time.Hour})
	if err != nil {
		t.Fatalf("OpenServing: %v", err)
	}
	t.Cleanup(func() { _ = v.Close() })
	if !v.cur.Load().space.readOnly.Load() {
		t.Fatal("opened writable without room to flush the WAL")
	}
	for i := 0; i < 2; i++ {
		if _, err := v.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "c", "3")}}); !errors.Is(err, engine.ErrNoSpace) {
			t.Fatalf("write %d on the read-only store: %v, want ErrNoSpace", i, err)
		}
	}
	if p := v.cur.Load().failed.Load(); p != nil {
		t.Fatalf("the store failed: %v", *p)
	}
}
