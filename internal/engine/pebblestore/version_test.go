package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestKeyOrderLoadCompactsOnce: keys written in key order (ids, timestamps) are compacted about once each. When
// every group rewrote the version record, the store's first key, each flushed sstable spanned from it to the
// group's keys, and each compaction rewrote the whole store: the bytes compacted grew with the square of the
// store's size (five times the bytes flushed here, and more the bigger the store). With --fsync always the record
// is a ceiling raised rarely; with --fsync interval every group still rewrites it, and sstables cut at the store's
// meta records (spans.go) keep it from stretching the flushes (5.3× before the cuts).
func TestKeyOrderLoadCompactsOnce(t *testing.T) {
	for _, mode := range []SyncMode{SyncNever, SyncInterval} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openWith(t, Options{Dir: "/db", Sync: mode, CacheBytes: 8 << 20, Logger: quiet,
				tune: func(o *pebble.Options) { o.MemTableSize = 256 << 10 }})
			rng := rand.New(rand.NewPCG(1, 2))
			value := make([]byte, 512)
			for b := 0; b < 600; b++ {
				muts := make([]engine.Mutation, 100)
				for i := range muts {
					for j := range value {
						value[j] = byte(rng.Uint32())
					}
					muts[i] = set("t", fmt.Sprintf("k%09d", b*100+i), string(value))
				}
				mustApply(t, s, muts...)
			}
			flushed, compacted := settle(t, s)
			if flushed < 10<<20 {
				t.Fatalf("flushed %d bytes: the load did not go through flushes", flushed)
			}
			if compacted > flushed {
				t.Fatalf("compactions wrote %d bytes for %d flushed (%.1f×)", compacted, flushed, float64(compacted)/float64(flushed))
			}
			t.Logf("flushed %d, compacted %d bytes", flushed, compacted)
		})
	}
}

// TestRecoverNeverReusesVersions: a recovering Open that drops the sstable holding the newest version record
// (a truncated MANIFEST loses the edit of the last flush) goes on above every version the store acknowledged.
// A reserve of 5 keeps the record close to the versions, so the
// record left in the older sstables is below the lost keys' versions.
func TestRecoverNeverReusesVersions(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, versionReserve: 5,
		tune: func(o *pebble.Options) { o.DisableAutomaticCompactions = true }}
	acked := damagedStore(t, opts)
	opts.Recover, opts.tune = true, nil
	r, err := Open(opts)
	if err != nil {
		t.Fatalf("Open with Recover: %v", err)
	}
	if len(r.Recovered()) == 0 {
		t.Fatal("nothing recovered: the test damaged nothing")
	}
	if v := r.version.Load(); v <= acked {
		t.Fatalf("after Recover versions go on from %d, at or below the %d acknowledged", v, acked)
	}
	defer r.Close()
	if res := mustApply(t, r, set("default", "after", "v")); res[0].New.Version <= acked {
		t.Fatalf("version %d after Recover, at or below the %d acknowledged", res[0].New.Version, acked)
	}
}

// diskFullFS reports the disk full (no byte free) while full is set, and roomy otherwise; the files are real.
type diskFullFS struct {
	vfs.FS
	full *atomic.Bool
}

func (f diskFullFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	if f.full.Load() {
		return vfs.DiskUsage{AvailBytes: 0, TotalBytes: 1 << 40, UsedBytes: 1 << 40}, nil
	}
	return vfs.DiskUsage{AvailBytes: 1 << 39, TotalBytes: 1 << 40, UsedBytes: 1 << 39}, nil
}

// TestRecoverOnFullDiskNeverReusesVersions: a recovering Open on a full disk opens read-only and hands out no
// version, so it left the version record as it found it; but it removed the clean-shutdown record, the only
// evidence of the damage (a MANIFEST cut at its end, as TestRecoverNeverReusesVersions), so the writable reopen
// once space returned saw no damage, did not go on above the stored versions, and handed out the versions of the
// items the damage had dropped again.
func TestRecoverOnFullDiskNeverReusesVersions(t *testing.T) {
	dir := t.TempDir()
	full := new(atomic.Bool)
	opts := Options{Dir: dir, FS: diskFullFS{FS: vfs.Default, full: full}, CacheBytes: 8 << 20, Logger: quiet,
		MinFreeSpace: MinFree{Bytes: 1 << 20}, spacePoll: 10 * time.Millisecond, versionReserve: 5,
		tune: func(o *pebble.Options) { o.DisableAutomaticCompactions = true }}
	acked := damagedStore(t, opts)
	full.Store(true)
	opts.Recover, opts.tune = true, nil
	v, err := OpenServing(opts)
	if err != nil {
		t.Fatalf("OpenServing with Recover on a full disk: %v", err)
	}
	defer v.Close()
	if !v.cur.Load().space.readOnly.Load() || len(v.cur.Load().Recovered()) == 0 {
		t.Fatalf("read-only %v, recovered %v: want a read-only store past damage",
			v.cur.Load().space.readOnly.Load(), v.cur.Load().Recovered())
	}
	full.Store(false)
	var res []engine.Result
	waitFor(t, func() bool {
		res, err = v.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{set("default", "after", "v")}})
		return err == nil
	})
	if res[0].New.Version <= acked {
		t.Fatalf("version %d after the writable reopen, at or below the %d acknowledged", res[0].New.Version, acked)
	}
}

// killAfterFS copies the store's directory (what a kill at that moment leaves) once the clean-shutdown record
// is removed, into *killed.
type killAfterFS struct {
	vfs.FS
	t      *testing.T
	killed *string
}

func (f killAfterFS) Remove(name string) error {
	err := f.FS.Remove(name)
	if err == nil && filepath.Base(name) == cleanName && *f.killed == "" {
		*f.killed = copyDir(f.t, filepath.Dir(name))
	}
	return err
}

// TestKillDuringRecoverNeverReusesVersions: a recovering Open removes the clean-shutdown record, the only
// evidence of the damage, before it goes on above the stored versions: a kill in between (during Pebble's Open
// or the sstable checks) left a store whose next Open saw no damage and handed out the versions of the items
// the damage had dropped again.
func TestKillDuringRecoverNeverReusesVersions(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, versionReserve: 5,
		tune: func(o *pebble.Options) { o.DisableAutomaticCompactions = true }}
	acked := damagedStore(t, opts)
	var killed string
	opts.Recover, opts.tune, opts.FS = true, nil, killAfterFS{FS: vfs.Default, t: t, killed: &killed}
	r, err := Open(opts)
	if err != nil {
		t.Fatalf("Open with Recover: %v", err)
	}
	r.Close()
	if killed == "" {
		t.Fatal("the recovering Open removed no clean-shutdown record")
	}
	for _, recover := range []bool{false, true} {
		s, err := Open(Options{Dir: copyDir(t, killed), CacheBytes: 8 << 20, Logger: quiet, Recover: recover})
		if err != nil {
			t.Logf("Open after the kill (Recover %v): %v", recover, err)
			continue
		}
		res := mustApply(t, s, set("default", "after", "v"))
		s.Close()
		if res[0].New.Version <= acked {
			t.Errorf("Open after a kill during Recover (Recover %v): version %d, at or below the %d acknowledged",
				recover, res[0].New.Version, acked)
		}
	}
}

// damagedStore builds a store in opts.Dir, closes it, cuts its MANIFEST short at its end (losing the edit of the
// last flush, and with it the sstable holding the newest version record) and removes its WALs; it returns the
// last version the store acknowledged.
func damagedStore(t *testing.T, opts Options) (acked uint64) {
	t.Helper()
	s := buildStoreOpts(t, opts)
	acked = s.version.Load()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names := listNames(t, opts.Dir)
	truncateBy(t, filepath.Join(opts.Dir, fileKinds[1].pick(names)), 13)
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if err := os.Remove(filepath.Join(opts.Dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return acked
}
