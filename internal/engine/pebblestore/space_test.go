package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
)

// limitFS is an in-memory file system of a fixed capacity: writes past it fail with ENOSPC (after writing what
// fits, as write(2) does), and GetDiskUsage reports what is left. other is space taken by other programs.
type limitFS struct {
	vfs.FS
	mu       sync.Mutex
	capacity int64
	used     int64 // bytes written to files still present, plus other
	other    int64
	sizes    map[string]int64
}

func newLimitFS(capacity int64) *limitFS {
	return &limitFS{FS: vfs.NewMem(), capacity: capacity, sizes: map[string]int64{}}
}

// take makes another program use n more bytes (negative: free them), as far as the capacity allows.
func (fs *limitFS) take(n int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n = max(min(n, fs.capacity-fs.used), -fs.other)
	fs.other += n
	fs.used += n
}

// fill makes another program take all the free space.
func (fs *limitFS) fill() { fs.take(1 << 62) }

func (fs *limitFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return vfs.DiskUsage{AvailBytes: uint64(fs.capacity - fs.used), TotalBytes: uint64(fs.capacity),
		UsedBytes: uint64(fs.used)}, nil
}

func (fs *limitFS) forget(name string) {
	fs.used -= fs.sizes[name]
	delete(fs.sizes, name)
}

func (fs *limitFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	fs.forget(name)
	fs.mu.Unlock()
	return &limitFile{File: f, fs: fs, name: name}, nil
}

func (fs *limitFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	fs.forget(oldname)
	fs.mu.Unlock()
	return &limitFile{File: f, fs: fs, name: newname}, nil
}

func (fs *limitFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return &limitFile{File: f, fs: fs, name: name}, nil
}

func (fs *limitFS) Remove(name string) error {
	if err := fs.FS.Remove(name); err != nil {
		return err
	}
	fs.mu.Lock()
	fs.forget(name)
	fs.mu.Unlock()
	return nil
}

func (fs *limitFS) Rename(oldname, newname string) error {
	if err := fs.FS.Rename(oldname, newname); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.sizes[oldname]
	delete(fs.sizes, oldname)
	fs.forget(newname)
	fs.sizes[newname] = n
	fs.used += n
	return nil
}

// limitFile counts every byte written as used (an overwrite too: an approximation on the safe side).
type limitFile struct {
	vfs.File
	fs   *limitFS
	name string
}

// room reserves up to n bytes and returns how many it got.
func (f *limitFile) room(n int) int {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n = int(min(int64(n), f.fs.capacity-f.fs.used))
	f.fs.used += int64(n)
	f.fs.sizes[f.name] += int64(n)
	return n
}

func (f *limitFile) Write(p []byte) (int, error) {
	if n := f.room(len(p)); n < len(p) {
		m, err := f.File.Write(p[:n])
		if err == nil {
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
		return m, err
	}
	return f.File.Write(p)
}

func (f *limitFile) WriteAt(p []byte, off int64) (int, error) {
	if n := f.room(len(p)); n < len(p) {
		m, err := f.File.WriteAt(p[:n], off)
		if err == nil {
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
		return m, err
	}
	return f.File.WriteAt(p, off)
}

// openLimited opens a store on fs with a reserve and a poller period.
func openLimited(t *testing.T, fs *limitFS, reserve int64, poll time.Duration) *Store {
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
func checkReopened(t *testing.T, s *Store, fs *limitFS, acked map[string]string) {
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
	fs := newLimitFS(64 << 20)
	s := openLimited(t, fs, 8<<20, 10*time.Millisecond)
	acked := map[string]string{}
	val := strings.Repeat("v", 64<<10)
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
	fs.take(60 << 20) // another program fills the disk: the store notices it is full
	waitFor(t, func() bool { return s.Stats()["disk_full"] == 1 })
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "small", "x")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a small write on a full disk: %v", err)
	}
	checkAcked(t, s, acked)

	fs.take(-60 << 20)
	fs.mu.Lock()
	fs.capacity += 32 << 20 // the volume grows
	fs.mu.Unlock()
	waitWritable(t, s, "again", "yes", acked)
	if st := s.Stats(); st["disk_full"] != 0 || st["disk_writes_refused"] == 0 {
		t.Fatalf("stats after recovery: %v", st)
	}
	checkReopened(t, s, fs, acked)
}

// TestAdmitCountsRequestBytes: with no poll to help, the writer refuses a batch whose bytes would take free
// space below the reserve before it reaches Pebble (no ENOSPC), and still admits a small one.
func TestAdmitCountsRequestBytes(t *testing.T) {
	fs := newLimitFS(64 << 20)
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
	fs := newLimitFS(64 << 20)
	s := openLimited(t, fs, 8<<20, time.Hour) // the poller never runs: the store cannot see the disk fill
	if _, err := fs.Stat("/db/" + ballastName); err != nil {
		t.Fatalf("no ballast after Open: %v", err)
	}
	mustApply(t, s, set("t", "before", "1"))
	acked := map[string]string{"before": "1"}
	fs.fill()
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "raced", "2")}}); err != nil {
		t.Fatalf("the write that met ENOSPC should have used the ballast: %v", err)
	}
	acked["raced"] = "2"
	if _, err := fs.Stat("/db/" + ballastName); err == nil {
		t.Fatal("the ballast is still there")
	}
	if st := s.Stats(); st["disk_full"] != 1 || st["disk_enospc_errors"] == 0 {
		t.Fatalf("stats after ENOSPC: %v", st)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "refused", "3")}}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a write after ENOSPC: %v, want ErrNoSpace", err)
	}

	fs.fill()                 // what the ballast freed is taken too
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
	fs.take(-1 << 62) // the other program's files are deleted
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
	fs := newLimitFS(64 << 20)
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
	fs.fill()
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
	fs.take(-1 << 62)
	waitWritable(t, v, "c", "3", acked)
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if st := v.Stats(); st["disk_full"] != 0 {
		t.Fatalf("writable again, stats: %v", st)
	}
	waitFor(t, func() bool { _, err := fs.Stat("/db/" + ballastName); return err == nil })
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
