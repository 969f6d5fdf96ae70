//go:build linux && cgo

package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"anykv/internal/engine"
)

// The sync thread syncs the file it is given, from many goroutines at once, and reports fdatasync's error: a
// descriptor that is not open answers EBADF, which Pebble must see (a failed WAL sync is fatal there).
func TestThreadSync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := threadSyncs()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := f.Write([]byte("x")); err != nil {
					t.Error(err)
					return
				}
				if ok, err := threadSync(f.Fd()); !ok || err != nil {
					t.Errorf("threadSync: ok %v, err %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := threadSyncs() - before; n != 8*20 {
		t.Fatalf("the thread made %d fdatasyncs for 160 requests", n)
	}
	if ok, err := threadSync(1 << 20); !ok || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("threadSync of a descriptor that is not open: ok %v, err %v; want EBADF", ok, err)
	}
}

// A durable store's WAL syncs go through the thread: every acknowledged SyncAlways write raised its count.
func TestStoreSyncsWALOnThread(t *testing.T) {
	s, err := Open(Options{Dir: filepath.Join(t.TempDir(), "db"), Sync: SyncAlways, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 20; i++ {
		before := threadSyncs()
		if _, err := s.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(fmt.Sprint(i)), Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
		if threadSyncs() == before {
			t.Fatalf("write %d was acknowledged without a WAL fdatasync on the thread", i)
		}
	}
}
