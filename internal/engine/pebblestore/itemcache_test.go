package pebblestore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
)

// TestConformanceWriterCacheSizes runs the conformance suite with the writer's item cache off, and so small that
// it evicts at almost every read: each answer must be what Pebble holds.
func TestConformanceWriterCacheSizes(t *testing.T) {
	for _, size := range []int64{-1, 1024} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			enginetest.Run(t, func(t *testing.T) engine.Engine {
				return openWith(t, Options{Dir: "/db", CacheBytes: 8 << 20, Logger: quiet, WriterCacheBytes: size})
			}, engine.AllAbilities)
		})
	}
}

func incr(table, key string) engine.Mutation {
	return engine.Mutation{Op: engine.OpIncr, Table: table, Key: []byte(key), Incr: engine.IncrArgs{Delta: 1, Create: true}}
}

// TestWriterCacheAnswersRepeatedReads: a key read again and again (a counter, a collection's meta) is read from
// Pebble once; the cache's answers are the current values.
func TestWriterCacheAnswersRepeatedReads(t *testing.T) {
	s := open(t, nil, SyncAlways)
	for i := 1; i <= 100; i++ {
		res := mustApply(t, s, incr("t", "n"))
		if got := string(res[0].New.Value); got != strconv.Itoa(i) {
			t.Fatalf("incr %d answered %q", i, got)
		}
	}
	st := s.Stats()
	if st["writer_cache_misses"] != 1 || st["writer_cache_hits"] != 99 {
		t.Fatalf("hits %d, misses %d; want 99 and 1", st["writer_cache_hits"], st["writer_cache_misses"])
	}
}

// TestWriterCacheForgetsFlushesAndDeletes: what a flush of one table, a flush of everything and a delete removed
// is not answered from the cache afterwards (each case counts from 0 again). A sweep removes only items no read
// can see (expired, or members of a dead generation), so whether it updates the cache shows in no answer.
func TestWriterCacheForgetsFlushesAndDeletes(t *testing.T) {
	s := open(t, nil, SyncAlways)
	wipes := map[string]engine.Mutation{
		"flush table": {Op: engine.OpFlush, Table: "t"},
		"flush all":   {Op: engine.OpFlush},
		"delete":      {Op: engine.OpDelete, Table: "t", Key: []byte("n")},
	}
	for name, wipe := range wipes {
		mustApply(t, s, incr("t", "n"))
		mustApply(t, s, incr("t", "n")) // read through the cache
		mustApply(t, s, wipe)
		if got := string(mustApply(t, s, incr("t", "n"))[0].New.Value); got != "1" {
			t.Fatalf("after %s, incr answered %q, want 1", name, got)
		}
		mustApply(t, s, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("n")})
	}

}

// TestWriterCacheStaysWithinItsBound: reading many more keys than fit keeps the cache within its bytes.
func TestWriterCacheStaysWithinItsBound(t *testing.T) {
	const max = 16 << 10
	s := openWith(t, Options{Dir: "/db", CacheBytes: 8 << 20, Logger: quiet, WriterCacheBytes: max})
	for i := 0; i < 2000; i++ {
		mustApply(t, s, incr("t", fmt.Sprint(i)))
	}
	for i := 0; i < 2000; i++ {
		if got := string(mustApply(t, s, incr("t", fmt.Sprint(i)))[0].New.Value); got != "2" {
			t.Fatalf("key %d: incr answered %q, want 2", i, got)
		}
	}
	if b := s.itemCache.m.Bytes(); b > max || b < max/2 {
		t.Fatalf("cache holds %d bytes, bound %d", b, max)
	}
}

// TestWriterCacheBoundHoldsWhenValuesGrow: keys cached small (absent, read by a SET XX that failed) and then
// written with big values do not take the cache past its bound (the audit's case: 120 MB in a 1 MiB cache).
func TestWriterCacheBoundHoldsWhenValuesGrow(t *testing.T) {
	const max = 64 << 10
	s := openWith(t, Options{Dir: "/db", CacheBytes: 8 << 20, Logger: quiet, WriterCacheBytes: max})
	big := make([]byte, 3000)
	for i := 0; i < 200; i++ {
		k := []byte(fmt.Sprint("k", i))
		res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: k, Cond: engine.CondPresent}}})
		if err != nil || res[0].Err == nil {
			t.Fatalf("SET XX of a missing key: %+v, %v", res, err)
		}
		mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: big})
		if b := s.itemCache.m.Bytes(); b > max {
			t.Fatalf("after %d big writes the cache holds %d bytes, bound %d", i+1, b, max)
		}
	}
	// A value over a quarter of the cache is not kept at all.
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("huge"), Value: make([]byte, max/2)})
	mustApply(t, s, engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("huge"), Value: []byte("x")})
	if s.itemCache.m.Has(appendKey(nil, "t", []byte("huge"))) {
		t.Fatal("a value of half the cache was cached")
	}
}

// TestGroupResolvedAgainWhenAnItemItFoundAliveExpires: a SET XX resolved while its key was alive, whose key has
// expired by the time its group would be published (reads may have found it gone meanwhile), is resolved again
// and fails, as it would have had it been judged a moment later.
func TestGroupResolvedAgainWhenAnItemItFoundAliveExpires(t *testing.T) {
	s := open(t, nil, SyncAlways)
	const expires = now + 100
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("old"), Expires: expires})
	clock := expiringClock(expires) // alive when resolved, expired when the group is checked, and after
	res, err := s.Apply(ctx, &engine.Batch{Now: now, Clock: clock, Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("new"), Cond: engine.CondPresent}}})
	if err != nil || !errors.Is(res[0].Err, engine.ErrNotFound) {
		t.Fatalf("SET XX = %+v, %v; want ErrNotFound", res, err)
	}
	if n := s.Stats()["groups_rejudged"]; n != 1 {
		t.Fatalf("groups_rejudged = %d, want 1", n)
	}
	// An item that stays alive past the check costs no second resolution.
	clock = expiringClock(expires)
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("j"), Value: []byte("old"), Expires: expires + 1000})
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Clock: clock, Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "t", Key: []byte("j"), Value: []byte("new"), Cond: engine.CondPresent}}}); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats()["groups_rejudged"]; n != 1 {
		t.Fatalf("groups_rejudged = %d after a batch whose item stayed alive, want 1", n)
	}
}

// TestGroupResolvedAgainIsAdmittedOnce: the free-space estimate counts a request's bytes once, however often its
// group is resolved (counted twice, writes near the reserve would be refused early).
func TestGroupResolvedAgainIsAdmittedOnce(t *testing.T) {
	s := openWith(t, Options{Dir: t.TempDir(), FS: vfs.Default, Sync: SyncAlways, CacheBytes: 8 << 20, Logger: quiet})
	if !s.space.measured.Load() {
		t.Skip("the file system's free space cannot be measured here")
	}
	const expires = now + 100
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("old"), Expires: expires})
	clock := expiringClock(expires) // alive when resolved, expired when the group is checked, and after
	b := &engine.Batch{Now: now, Clock: clock, Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: make([]byte, 1000), Cond: engine.CondPresent}}}
	before := s.space.pending.Load()
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if s.Stats()["groups_rejudged"] != 1 {
		t.Fatal("the group was not resolved again")
	}
	if grew, want := s.space.pending.Load()-before, int64((&request{batch: b}).size()); grew != want {
		t.Fatalf("pending free-space use grew %d for one request of %d bytes", grew, want)
	}
}

// TestWriterCacheRewritesInPlaceOrAnew: a rewrite of a cached key is answered with its new value whether it fit
// where the old one was (same size, a bit smaller), needed more room, shrank a lot, or the key was cached absent;
// what get hands out is a copy that a later rewrite does not change.
func TestWriterCacheRewritesInPlaceOrAnew(t *testing.T) {
	c := newItemCache(1 << 20)
	k := []byte("\x00t\x00key")
	c.fill(k, engine.Item{}, false)
	out := []engine.Item{}
	for i, v := range []string{"first value", "other value", "shorter", strings.Repeat("long", 40), "s", ""} {
		c.set(k, engine.Item{Value: []byte(v), Version: uint64(i + 1)})
		it, found, known := c.get(k)
		if !found || !known || string(it.Value) != v || it.Version != uint64(i+1) {
			t.Fatalf("after a rewrite to %q: %q version %d found %v known %v", v, it.Value, it.Version, found, known)
		}
		out = append(out, it)
	}
	for i, v := range []string{"first value", "other value", "shorter"} {
		if string(out[i].Value) != v {
			t.Fatalf("a value get handed out changed with a later rewrite: %q, want %q", out[i].Value, v)
		}
	}
	if got := c.m.Len(); got != 1 {
		t.Fatalf("%d entries for one key", got)
	}
}

// TestGroupResolvedAgainWhenAnItemItScannedAliveExpires: a range read inside a batch (KEYS or SCAN in a
// transaction, a script's) that finds alive an item expiring before the group is published makes the group be
// resolved again, as a point read does: else the batch answers, and writes by, a key that reads may have found
// gone meanwhile.
func TestGroupResolvedAgainWhenAnItemItScannedAliveExpires(t *testing.T) {
	s := open(t, nil, SyncAlways)
	const expires = now + 100
	mustApply(t, s, engine.Mutation{Op: engine.OpSet, Table: "s", Key: []byte("k"), Value: []byte("v"), Expires: expires})
	clock := expiringClock(expires) // alive when resolved, expired when the group is checked, and after
	res, err := s.Apply(ctx, &engine.Batch{Now: now, Clock: clock, Muts: []engine.Mutation{
		{Op: engine.OpCall, Table: "s", Call: engine.CallArgs{Name: scanFunc, Args: [][]byte{[]byte("a"), []byte("z"), []byte("f")}}},
		{Op: engine.OpSet, Table: "t", Key: []byte("x"), Value: []byte("1")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res[0].New.Value); got != "" {
		t.Errorf("the scan answered %q, judged before k expired, published after", got)
	}
	if n := s.Stats()["groups_rejudged"]; n != 1 {
		t.Errorf("groups_rejudged = %d, want 1", n)
	}
}

// expiringClock is a batch clock that reads expires-1 at its first call (the resolution finds an item of that
// expiry alive) and expires+1 from then on (it has expired by the group's check).
func expiringClock(expires int64) func() int64 {
	calls := 0
	return func() int64 {
		calls++
		if calls == 1 {
			return expires - 1
		}
		return expires + 1
	}
}
