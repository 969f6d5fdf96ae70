package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/engine/pebblestore"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestConformance(t *testing.T) {
	enginetest.Run(t, func(*testing.T) engine.Engine { return cache.New(memstore.New(), 1<<20) }, engine.AllAbilities)
}

// TestConformanceOverPebble: the cache in front of the durable engine, as anykv serves by default.
func TestConformanceOverPebble(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		s, err := pebblestore.Open(pebblestore.Options{Dir: "db", FS: vfs.NewMem(), CacheBytes: 8 << 20,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return cache.New(s, 1<<20)
	}, engine.AllAbilities)
}

func TestConformanceTinyCache(t *testing.T) { // constant eviction
	enginetest.Run(t, func(*testing.T) engine.Engine { return cache.New(memstore.New(), 256*64) }, engine.AllAbilities)
}

var ctx = context.Background()

func TestHitsAfterFirstRead(t *testing.T) {
	c := cache.New(memstore.New(), 1<<20)
	defer c.Close()
	// An item written by INCR is not written through: the first read misses, the next ones hit.
	c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("k"),
		Incr: engine.IncrArgs{Delta: 1, Create: true}}}})
	for i := 0; i < 3; i++ {
		if it, err := c.Get(ctx, "t", []byte("k"), 0); err != nil || string(it.Value) != "1" {
			t.Fatalf("get = %q, %v", it.Value, err)
		}
	}
	if st := c.(engine.Statser).Stats(); st["cache_hits"] != 2 || st["cache_misses"] != 1 || st["cache_items"] != 1 {
		t.Fatalf("stats = %v", st)
	}
	// A SET is written through: the next read is a hit with the value and version the SET reported.
	res, _ := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}})
	if it, err := c.Get(ctx, "t", []byte("k"), 0); err != nil || string(it.Value) != "v" || it.Version != res[0].New.Version {
		t.Fatalf("after SET: %q version %d, %v; SET reported version %d", it.Value, it.Version, err, res[0].New.Version)
	}
	if st := c.(engine.Statser).Stats(); st["cache_hits"] != 3 || st["cache_misses"] != 1 || st["cache_write_throughs"] != 1 {
		t.Fatalf("write-through: stats = %v", st)
	}
	// Absent keys are cached as absent, and a write makes them present at once.
	for i := 0; i < 2; i++ {
		if _, err := c.Get(ctx, "t", []byte("nokey"), 0); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("absent key: %v", err)
		}
	}
	if st := c.(engine.Statser).Stats(); st["cache_hits"] != 4 || st["cache_misses"] != 2 {
		t.Fatalf("negative caching: stats = %v", st)
	}
	c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("nokey"), Value: []byte("now")}}})
	if it, err := c.Get(ctx, "t", []byte("nokey"), 0); err != nil || string(it.Value) != "now" {
		t.Fatalf("after writing a cached-absent key: %q, %v", it.Value, err)
	}
}

// TestNoStaleReadsUnderRace: readers and writers hammer a few keys; every read must return a value at least as
// new as the last write acknowledged before the read began.
func TestNoStaleReadsUnderRace(t *testing.T) {
	c := cache.New(slowReads{memstore.New()}, 1<<20)
	defer c.Close()
	const keys = 4
	var acked [keys]struct {
		sync.Mutex
		n int
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := i % keys
				res, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t",
					Key: []byte(fmt.Sprint(k)), Incr: engine.IncrArgs{Delta: 1, Create: true}}}})
				if err != nil {
					t.Error(err)
					return
				}
				var n int
				fmt.Sscan(string(res[0].New.Value), &n)
				acked[k].Lock()
				acked[k].n = max(acked[k].n, n)
				acked[k].Unlock()
			}
		}(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				k := i % keys
				acked[k].Lock()
				floor := acked[k].n
				acked[k].Unlock()
				it, err := c.Get(ctx, "t", []byte(fmt.Sprint(k)), 0)
				if errors.Is(err, engine.ErrNotFound) {
					if floor > 0 {
						t.Errorf("key %d: not found after %d was acknowledged", k, floor)
					}
					continue
				}
				var n int
				fmt.Sscan(string(it.Value), &n)
				if n < floor {
					t.Errorf("key %d: read %d after %d was acknowledged (stale cache)", k, n, floor)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// slowReads widens the window between an engine read and the cache fill, where a write can slip in.
type slowReads struct{ *memstore.Store }

func (s slowReads) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := s.Store.Get(ctx, table, key, now)
	time.Sleep(50 * time.Microsecond)
	return it, err
}

// blockingApply makes a batch visible in the engine, then holds Apply open until release is closed: the window
// in which a durable engine is fsyncing.
type blockingApply struct {
	*memstore.Store
	applied, release chan struct{}
}

func (b blockingApply) Apply(ctx context.Context, batch *engine.Batch) ([]engine.Result, error) {
	res, err := b.Store.Apply(ctx, batch)
	close(b.applied)
	<-b.release
	return res, err
}

// TestNoOldValueWhileWriteInFlight: once the engine shows a new value, a read through the cache must not answer
// the older cached one, even before Apply returns.
func TestNoOldValueWhileWriteInFlight(t *testing.T) {
	inner := blockingApply{memstore.New(), make(chan struct{}), make(chan struct{})}
	inner.Store.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v0")}}})
	c := cache.New(inner, 1<<20)
	if it, _ := c.Get(ctx, "t", []byte("k"), 0); string(it.Value) != "v0" { // now cached
		t.Fatalf("warm-up read %q", it.Value)
	}
	done := make(chan struct{})
	go func() {
		c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v1")}}})
		close(done)
	}()
	<-inner.applied
	for i := 0; i < 3; i++ {
		if it, _ := c.Get(ctx, "t", []byte("k"), 0); string(it.Value) != "v1" {
			t.Fatalf("read %d while the write is in flight = %q; the engine already shows v1", i, it.Value)
		}
	}
	close(inner.release)
	<-done
	if it, _ := c.Get(ctx, "t", []byte("k"), 0); string(it.Value) != "v1" {
		t.Fatalf("after the write: %q", it.Value)
	}
}

// TestTablesNeverShareSlots: a table name of 64 KiB or more must not alias a shorter one (the slot once stored the
// name's length in 16 bits, so table "ab" and a 65538-byte table whose name begins with "ab" collided).
func TestTablesNeverShareSlots(t *testing.T) {
	c := cache.New(memstore.New(), 1<<30)
	defer c.Close()
	long := "ab" + strings.Repeat("x", 1<<16) // len = 65538 = 2 mod 65536
	// With a truncated length, (long, "k") and ("ab", "x…xk") have the same slot bytes.
	shortKey := strings.Repeat("x", 1<<16) + "k"
	if _, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: long, Key: []byte("k"), Value: []byte("long-table")},
	}}); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Get(ctx, long, []byte("k"), 0); err != nil || string(it.Value) != "long-table" {
		t.Fatalf("long table: %q, %v", it.Value, err)
	}
	if it, err := c.Get(ctx, "ab", []byte(shortKey), 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("table ab answered with another table's item: %q, %v", it.Value, err)
	}
	// And the reverse: a cached absent entry of the short table must not hide the long table's item.
	c2 := cache.New(memstore.New(), 1<<30)
	defer c2.Close()
	if _, err := c2.Get(ctx, "ab", []byte(shortKey), 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := c2.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "ab", Key: []byte(shortKey), Value: []byte("short-table")},
	}}); err != nil {
		t.Fatal(err)
	}
	if it, err := c2.Get(ctx, long, []byte("k"), 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("long table answered with table ab's item: %q, %v", it.Value, err)
	}
}

// TestAbilitiesAreThoseOfTheWrappedEngine: the cache claims no ability its engine lacks (and adds Statser).
func TestAbilitiesAreThoseOfTheWrappedEngine(t *testing.T) {
	enginetest.CheckDecorator(t, func(e engine.Engine) engine.Engine { return cache.New(e, 1<<20) }, engine.CanStats)
}

// holdOne applies batches at once, except one whose SET writes the value hold: that one is applied (the engine
// shows it) and then held open until release is closed, as if its fsync were slow.
type holdOne struct {
	*memstore.Store
	hold             string
	applied, release chan struct{}
}

func (h holdOne) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := h.Store.Apply(ctx, b)
	if len(b.Muts) > 0 && string(b.Muts[0].Value) == h.hold {
		close(h.applied)
		<-h.release
	}
	return res, err
}

// TestWriteThroughYieldsToALaterWrite: SET k v1 is applied but its Apply has not returned when SET k v2 is applied
// and returns. When v1's Apply returns, the cache must not keep v1: the engine holds v2.
func TestWriteThroughYieldsToALaterWrite(t *testing.T) {
	inner := holdOne{memstore.New(), "v1", make(chan struct{}), make(chan struct{})}
	c := cache.New(inner, 1<<20)
	set := func(v string) {
		if _, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte(v)}}}); err != nil {
			t.Error(err)
		}
	}
	done := make(chan struct{})
	go func() { set("v1"); close(done) }()
	<-inner.applied
	set("v2")
	close(inner.release)
	<-done
	if it, err := c.Get(ctx, "t", []byte("k"), 0); err != nil || string(it.Value) != "v2" {
		t.Fatalf("after both writes returned: %q, %v; the engine holds v2", it.Value, err)
	}
	if st := c.(engine.Statser).Stats(); st["cache_write_throughs"] != 0 {
		t.Fatalf("a SET racing another was written through: %v", st)
	}
}

// TestWritesInFlightKeepOnlyTheirOwnSlots: while a batch writing keys of every shard is in flight, a SET of
// another key the cache holds is written through (one it does not hold is not) and a read of another key is kept, since nothing in flight writes them; the
// batch's own keys are read from the engine until it returns. The marks were per shard: a third of a mixed
// load's SETs were not written through, each costing a later GET an engine read.
func TestWritesInFlightKeepOnlyTheirOwnSlots(t *testing.T) {
	inner := holdOne{memstore.New(), "held", make(chan struct{}), make(chan struct{})}
	c := cache.New(inner, 64<<20)
	var held []engine.Mutation
	for i := 0; i < 4096; i++ { // 16 a shard on average: every one of the 256 has some
		held = append(held, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(fmt.Sprint("w", i)), Value: []byte("held")})
	}
	done := make(chan struct{})
	go func() {
		if _, err := c.Apply(ctx, &engine.Batch{Muts: held}); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	<-inner.applied
	stats := func() map[string]int64 { return c.(engine.Statser).Stats() }
	c.Get(ctx, "t", []byte("k"), 0) // k's absence is cached: only a key the cache holds is written through
	for _, k := range []string{"k", "never-read"} {
		if _, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if st := stats(); st["cache_write_throughs"] != 1 {
		t.Fatalf("want k's SET written through (nothing else writes it) and never-read's not: %v", st)
	}
	for _, k := range []string{"k", "r", "r", "w7", "w7"} {
		c.Get(ctx, "t", []byte(k), 0)
	}
	// k hits; r misses once, then hits; w7 misses both times (its write is in flight) and reads the engine's.
	if st := stats(); st["cache_misses"] != 4 || st["cache_hits"] != 2 {
		t.Fatalf("misses %d, hits %d; want 4 (k's first read, r, w7 twice) and 2", st["cache_misses"], st["cache_hits"])
	}
	if it, err := c.Get(ctx, "t", []byte("w7"), 0); err != nil || string(it.Value) != "held" {
		t.Fatalf("w7 while its write is in flight: %q, %v; the engine holds it", it.Value, err)
	}
	close(inner.release)
	<-done
	if it, err := c.Get(ctx, "t", []byte("w7"), 0); err != nil || string(it.Value) != "held" {
		t.Fatalf("w7 after its write: %q, %v", it.Value, err)
	}
}

// TestWriteThroughAgreesWithTheEngine: writers race SETs (and DELs) on a few keys, in batches of several
// mutations; at every quiet point the cache must answer what the engine holds.
func TestWriteThroughAgreesWithTheEngine(t *testing.T) {
	inner := memstore.New()
	c := cache.New(slowApply{inner}, 1<<20)
	defer c.Close()
	keys := []string{"a", "b", "c"}
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var muts []engine.Mutation
				for i, k := range keys {
					if (round+w+i)%5 == 0 {
						muts = append(muts, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte(k)})
					} else {
						muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte(fmt.Sprint(round, w))})
					}
				}
				if _, err := c.Apply(ctx, &engine.Batch{Muts: muts[w%len(muts):]}); err != nil {
					t.Error(err)
				}
				c.Get(ctx, "t", []byte(keys[w%len(keys)]), 0) // fills race the writes
			}(w)
		}
		wg.Wait()
		for _, k := range keys {
			want, werr := inner.Get(ctx, "t", []byte(k), 0)
			got, gerr := c.Get(ctx, "t", []byte(k), 0)
			if string(got.Value) != string(want.Value) || got.Version != want.Version || (gerr == nil) != (werr == nil) {
				t.Fatalf("round %d key %s: cache %q v%d (%v), engine %q v%d (%v)", round, k, got.Value, got.Version, gerr,
					want.Value, want.Version, werr)
			}
		}
	}
}

// slowApply widens the window between a batch reaching the engine and its Apply returning.
type slowApply struct{ *memstore.Store }

func (s slowApply) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := s.Store.Apply(ctx, b)
	time.Sleep(time.Duration(len(b.Muts)) * 30 * time.Microsecond)
	return res, err
}

// TestViewSharesGetCopies: View answers a hit with the stored value itself (no copy), clipped so that a caller's
// append cannot write into the entry; Get answers a copy the caller may change without changing later reads; a
// written-through entry keeps copies of the writer's key and value.
func TestViewSharesGetCopies(t *testing.T) {
	c := cache.New(memstore.New(), 1<<20)
	defer c.Close()
	val, key := []byte("abc"), []byte("k")
	c.Get(ctx, "t", key, 0) // read first: only a key the cache holds is written through
	c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: key, Value: val}}})
	val[0], key[0] = 'q', 'q' // the caller reuses its buffers: the written-through entry keeps copies
	v := c.(engine.Viewer)
	a, err := v.View(ctx, "t", []byte("k"), 0)
	if err != nil || string(a.Value) != "abc" {
		t.Fatalf("view = %q, %v", a.Value, err)
	}
	b, _ := v.View(ctx, "t", []byte("k"), 0)
	if &a.Value[0] != &b.Value[0] {
		t.Fatal("two views of a cached item answered different buffers: View copies")
	}
	if cap(a.Value) != len(a.Value) {
		t.Fatalf("view's capacity %d past its length %d: an append would write into the cache", cap(a.Value), len(a.Value))
	}
	_ = append(a.Value, 'x')
	g, _ := c.Get(ctx, "t", []byte("k"), 0)
	if &g.Value[0] == &a.Value[0] {
		t.Fatal("Get answered the cache's own buffer")
	}
	g.Value[0] = 'z'
	if again, _ := v.View(ctx, "t", []byte("k"), 0); string(again.Value) != "abc" {
		t.Fatalf("after changing Get's copy, view = %q", again.Value)
	}
	c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("e"), Value: []byte{}}}})
	for i := 0; i < 2; i++ { // the miss, then the hit
		if e, err := v.View(ctx, "t", []byte("e"), 0); err != nil || e.Value == nil {
			t.Fatalf("view of an empty value = %#v, %v: want a found, non-nil empty value", e.Value, err)
		}
	}
	if _, err := v.View(ctx, "t", []byte("missing"), 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("view of a missing key: %v", err)
	}
}
