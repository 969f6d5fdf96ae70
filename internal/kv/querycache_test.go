package kv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

func newCached(t *testing.T, e engine.Engine, clock func() time.Time) *kv.Store {
	t.Helper()
	s := kv.New(e, kv.Options{QueryCacheBytes: 1 << 20, Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	return s
}

func count(t *testing.T, s *kv.Store, q kv.Query) int64 {
	t.Helper()
	n, err := s.Count(ctx, "t", q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQueryCacheAnswersRepeatsUntilAWrite: a repeated count or page is a hit; a write to the table, a flush of
// every table, and the expiry of an item the answer counted each make the next answer fresh and right.
func TestQueryCacheAnswersRepeatsUntilAWrite(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newCached(t, memstore.New(), clock)
	s.Apply(ctx, []engine.Mutation{set("a", "1"), set("b", "2"),
		{Op: engine.OpSet, Table: "t", Key: []byte("c"), Value: []byte("3"), Expires: 1_000_500}})
	hits := func() int64 { return s.Stats().Engine["query_cache_hits"] }

	if n := count(t, s, kv.Query{}); n != 3 {
		t.Fatalf("count = %d", n)
	}
	if n := count(t, s, kv.Query{}); n != 3 || hits() != 1 {
		t.Fatalf("repeat: count %d, hits %d", n, hits())
	}
	p1, _ := s.Scan(ctx, "t", kv.Query{Limit: 2})
	p1.Entries[0] = kv.Entry{Key: []byte("zz")} // the caller owns the slice: the cached page must not change
	p2, _ := s.Scan(ctx, "t", kv.Query{Limit: 2})
	if hits() != 2 || len(p2.Entries) != 2 || string(p2.Entries[0].Key) != "a" || string(p2.Next) != "b" {
		t.Fatalf("cached page: %d hits, %+v", hits(), p2)
	}

	s.Apply(ctx, []engine.Mutation{set("d", "4")})
	if n := count(t, s, kv.Query{}); n != 4 {
		t.Fatalf("after a write: count = %d, want 4", n)
	}
	mu.Lock()
	now = time.UnixMilli(1_000_500) // c expires
	mu.Unlock()
	if n := count(t, s, kv.Query{}); n != 3 {
		t.Fatalf("after c expired: count = %d, want 3", n)
	}
	s.Apply(ctx, []engine.Mutation{{Op: engine.OpFlush}})
	if n := count(t, s, kv.Query{}); n != 0 {
		t.Fatalf("after flushing every table: count = %d", n)
	}
	if p, _ := s.Scan(ctx, "t", kv.Query{Limit: 2}); len(p.Entries) != 0 {
		t.Fatalf("after flushing every table: page %+v", p)
	}
}

// slowEngine widens the windows between a query's look-up and its fill, and between a batch reaching the
// engine and its Apply returning.
type slowEngine struct{ *memstore.Store }

func (e slowEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := e.Store.Apply(ctx, b)
	time.Sleep(50 * time.Microsecond)
	return res, err
}

func (e slowEngine) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	time.Sleep(50 * time.Microsecond)
	return e.Store.Scan(ctx, table, r, now, fn)
}

// TestQueryCacheNeverOlderThanACompletedWrite: writers add distinct keys; a count started after n additions were
// acknowledged must count at least n, however the cached answers and the writes interleave.
func TestQueryCacheNeverOlderThanACompletedWrite(t *testing.T) {
	s := newCached(t, engine.Expose(slowEngine{memstore.New()}, engine.AllAbilities), nil)
	var acked atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				if _, err := s.Apply(ctx, []engine.Mutation{set(fmt.Sprint(w, "-", i), "v")}); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		}(w)
	}
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := acked.Load()
				n, err := s.Count(ctx, "t", kv.Query{})
				if err != nil || n < floor {
					t.Errorf("count %d (%v) after %d writes were acknowledged", n, err, floor)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if n := count(t, s, kv.Query{}); n != 450 {
		t.Fatalf("final count %d", n)
	}
}

// lateEngine reports engine.ErrUnknownOutcome for its next Apply after hold, without applying it, and applies it
// at land: a datastore's commit that timed out after it was sent and landed later.
type lateEngine struct {
	*memstore.Store
	mu   sync.Mutex
	hold bool
	late *engine.Batch
}

func (l *lateEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold {
		l.hold, l.late = false, b
		return nil, fmt.Errorf("%w: timed out after sending", engine.ErrUnknownOutcome)
	}
	return l.Store.Apply(ctx, b)
}

// TestQueryCacheAfterAnUnknownOutcome: a write whose outcome is unknown may land at any time; a count cached
// before it landed answered the old count until the next write (an audit saw DBSIZE stay at 2 with 3 keys).
// No answer over its table is cached again; other tables keep their cache.
func TestQueryCacheAfterAnUnknownOutcome(t *testing.T) {
	l := &lateEngine{Store: memstore.New()}
	s := newCached(t, l, nil)
	s.Apply(ctx, []engine.Mutation{set("a", "1"), set("b", "2")})
	l.hold = true
	if _, err := s.Apply(ctx, []engine.Mutation{set("late", "3")}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("held write: %v", err)
	}
	if n := count(t, s, kv.Query{}); n != 2 {
		t.Fatalf("count before the late commit = %d", n)
	}
	l.mu.Lock()
	l.Store.Apply(ctx, l.late)
	l.mu.Unlock()
	if n := count(t, s, kv.Query{}); n != 3 {
		t.Fatalf("count after the late commit = %d, want 3 (a cached answer)", n)
	}
	if n := count(t, s, kv.Query{}); n != 3 {
		t.Fatalf("count again = %d", n)
	}
	// Tables share 4096 generation words by a seeded hash: of three other tables, at least one has a word of
	// its own (all three share t's once in 4096³ runs).
	hits := s.Stats().Engine["query_cache_hits"]
	for _, table := range []string{"u", "v", "w"} {
		for i := 0; i < 3; i++ {
			if n, err := s.Count(ctx, table, kv.Query{}); err != nil || n != 0 {
				t.Fatal(n, err)
			}
		}
	}
	if got := s.Stats().Engine["query_cache_hits"]; got < hits+2 {
		t.Fatalf("other tables' counts were not cached: %d hits, from %d", got, hits)
	}
}
