package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

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
	s := buildStoreOpts(t, opts)
	acked := s.version.Load()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names := listNames(t, dir)
	truncateBy(t, filepath.Join(dir, fileKinds[1].pick(names)), 13)
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
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
