package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
)

// TestCheckpointHoldsEveryAcknowledgedWrite: writers keep writing while a checkpoint is taken; a store opened on
// the checkpoint holds every write acknowledged before the checkpoint began, and the original keeps working.
func TestCheckpointHoldsEveryAcknowledgedWrite(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncInterval, SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			s, err := Open(Options{Dir: filepath.Join(t.TempDir(), "db"), Sync: mode, CacheBytes: 8 << 20, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var acked atomic.Int64 // writes 0..acked-1 of writer 0 are acknowledged
			var stop atomic.Bool
			var wg sync.WaitGroup
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; !stop.Load() || i < 200; i++ {
						if _, err := s.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
							Key: []byte(fmt.Sprint(w, ":", i)), Value: []byte("v")}}}); err != nil {
							t.Error(err)
							return
						}
						if w == 0 {
							acked.Store(int64(i + 1))
						}
					}
				}(w)
			}
			for acked.Load() < 100 { // let the writers get going
				if t.Failed() {
					return
				}
				runtime.Gosched()
			}
			before := acked.Load()
			dest := filepath.Join(t.TempDir(), "backup")
			if err := s.Checkpoint(ctx, dest); err != nil {
				t.Fatal(err)
			}
			stop.Store(true)
			wg.Wait()
			if err := s.Checkpoint(ctx, dest); err == nil {
				t.Fatal("a checkpoint overwrote an existing directory")
			}
			b, err := Open(Options{Dir: dest, CacheBytes: 8 << 20, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := int64(0); i < before; i++ {
				if _, err := b.Get(ctx, "t", []byte(fmt.Sprint(0, ":", i)), 0); err != nil {
					t.Fatalf("write %d of %d acknowledged before the checkpoint: %v", i, before, err)
				}
			}
			if _, err := s.Get(ctx, "t", []byte(fmt.Sprint(0, ":", acked.Load()-1)), 0); err != nil {
				t.Fatalf("the original after the checkpoint: %v", err)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if err := s.Checkpoint(ctx, dest+"2"); !errors.Is(err, engine.ErrClosed) {
				t.Fatalf("checkpoint after Close: %v", err)
			}
		})
	}
}

// TestDirectoriesAreTheOwnersOnly: the store's directory and a checkpoint's are created 0700, so other users of
// the machine cannot read the WAL or the sstables (created 0644) past the password (an audit read a value
// straight from a backup's WAL).
func TestDirectoriesAreTheOwnersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dest := filepath.Join(t.TempDir(), "copy")
	if err := s.Checkpoint(ctx, dest); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, dest} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s: mode %v, %v; want no access for group and others", d, fi.Mode().Perm(), err)
		}
	}
}
