package pebblestore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
)

// Benchmarks run on the real disk (a temp dir), as production does. Run them without -race: under the race
// detector Pebble enables its invariant checks, which are far slower.
//
//	go test -run '^$' -bench . -benchtime 5s ./internal/engine/pebblestore/

func benchKey(i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("key:"), i)
}

// BenchmarkApplySetParallel: clients goroutines each SET a 100-byte value under SyncAlways, b.N SETs in all;
// group commit shares fsyncs among them.
func BenchmarkApplySetParallel(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			val := make([]byte, 100)
			var seq atomic.Int64
			before := s.Stats()["fsyncs"]
			start := time.Now()
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := seq.Add(1)
						if i > int64(b.N) {
							return
						}
						k := benchKey(uint64(i))
						_, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: k, Value: val}}})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			fsyncs := s.Stats()["fsyncs"] - before
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
			b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/op")
		})
	}
}

// loadKeys writes n keys with 100-byte values in batches of 1000 (SyncNever for speed) and closes the store.
func loadKeys(b *testing.B, dir string, n int) (closeTook time.Duration) {
	s, err := Open(Options{Dir: dir, Sync: SyncNever, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 100)
	for i := 0; i < n; i += 1000 {
		muts := make([]engine.Mutation, 0, 1000)
		for j := i; j < min(n, i+1000); j++ {
			muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: benchKey(uint64(j)), Value: val})
		}
		if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkGet: parallel point reads of existing keys (100k keys, 100-byte values, all in the block cache).
func BenchmarkGet(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	loadKeys(b, dir, n)
	s, err := Open(Options{Dir: dir, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			if _, err := s.Get(ctx, "t", benchKey(rng.Uint64N(n)), now); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGetDuringWrites: the same reads while a SyncAlways writer keeps a group in flight most of the time,
// so every read also checks the in-flight group.
func BenchmarkGetDuringWrites(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	loadKeys(b, dir, n)
	s, err := Open(Options{Dir: dir, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		val := make([]byte, 100)
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: benchKey(n + i), Value: val}}})
		}
	}()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			if _, err := s.Get(ctx, "t", benchKey(rng.Uint64N(n)), now); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}

// BenchmarkOpen1M: Open of a store holding 1M items (about 150 MB of keys and values), every sstable block
// checksum verified (the default). It reports the Close after the load (it flushes the last memtable and writes
// the clean-shutdown record) as close-flush-ms, the first Open after it as first-open-ms, and one Open with
// SkipOpenVerify as open-noverify-ms; the loop measures verified Opens.
func BenchmarkOpen1M(b *testing.B) {
	dir := b.TempDir()
	closeTook := loadKeys(b, dir, 1_000_000)
	start := time.Now()
	s, err := Open(Options{Dir: dir, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	s, err = Open(Options{Dir: dir, Logger: quiet, SkipOpenVerify: true})
	if err != nil {
		b.Fatal(err)
	}
	noVerify := time.Since(start)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer() // (also deletes reported metrics: report after the loop)
	for b.Loop() {
		s, err := Open(Options{Dir: dir, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := s.Get(ctx, "t", benchKey(999_999), now); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(closeTook.Microseconds())/1000, "close-flush-ms")
	b.ReportMetric(float64(first.Microseconds())/1000, "first-open-ms")
	b.ReportMetric(float64(noVerify.Microseconds())/1000, "open-noverify-ms")
}

// BenchmarkGuardCheck: the cost a read pays for the guard while a group of 64 keys is in flight and the key read
// is not one of them (the common case under write load).
func BenchmarkGuardCheck(b *testing.B) {
	var s Store
	g := &group{done: make(chan struct{}), minVersion: 1000, keys: map[string]ovEntry{}}
	for i := 0; i < 64; i++ {
		g.keys[string(appendKey(nil, "t", benchKey(uint64(i))))] = ovEntry{}
	}
	s.inflight.Store(&[]*group{g})
	k := appendKey(nil, "t", benchKey(1<<40))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if g := s.hiding(k, "t", false, 0); g != nil {
				b.Error("hidden")
			}
		}
	})
}
