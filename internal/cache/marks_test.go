package cache

// Tests of the per-slot write marks (shard.writing, shard.all/allGen). They are internal tests, so that
// they can pick keys that share a shard (where per-slot marks differ from per-shard ones) and check that no mark
// outlives its batch.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

var rvCtx = context.Background()

// cachereview.set writes Item{Value: args[0]} at each key args[1:] names (declared in Call.Keys, or any key with
// AnyKey).
func init() {
	engine.RegisterFunc("cachereview.set", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		for _, k := range args[1:] {
			tx.Put(tx.Table(), k, engine.Item{Value: args[0]})
		}
		return engine.Result{}, nil
	})
}

// rvNew is New without engine.Expose, so that the test holds the *Cache.
func rvNew(e engine.Engine, maxBytes int64) *Cache { return newCache(e, maxBytes) }

// rvKeys returns n keys of table "t" named prefix0, prefix1, ... that fall in shard sh.
func rvKeys(c *Cache, sh uint8, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprint(prefix, i)
		if shardOf(c.hashOf(slot("t", []byte(k)))) == sh {
			out = append(out, k)
		}
	}
	return out
}

// rvNoMarks fails if any shard still has a slot marked as written or a batch of any key counted in flight.
func rvNoMarks(t *testing.T, c *Cache) {
	t.Helper()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n, all := len(sh.writing), sh.all
		var left []string
		for s, w := range sh.writing {
			left = append(left, fmt.Sprintf("%x:%+v", s, w))
		}
		sh.mu.RUnlock()
		if n != 0 || all != 0 {
			t.Fatalf("shard %d: marks left after every batch returned: writing %v, all %d", i, left, all)
		}
	}
}

// gated is a memstore whose Apply can be held before the engine applies a batch and after (the engine shows it,
// Apply has not returned), for the batch whose first mutation carries a given marker value.
type gated struct {
	*memstore.Store
	mu    sync.Mutex
	holds map[string]*gate // "before:marker" or "after:marker"
}

type gate struct{ at, release chan struct{} }

func newGated() *gated { return &gated{Store: memstore.New(), holds: map[string]*gate{}} }

// hold arms a gate for the batch marked marker, at "before" or "after".
func (g *gated) hold(where, marker string) *gate {
	h := &gate{make(chan struct{}), make(chan struct{})}
	g.mu.Lock()
	g.holds[where+":"+marker] = h
	g.mu.Unlock()
	return h
}

func (g *gated) wait(where string, b *engine.Batch) {
	if len(b.Muts) == 0 {
		return
	}
	m := &b.Muts[0]
	marker := string(m.Value)
	if m.Op == engine.OpCall && len(m.Call.Args) > 0 {
		marker = string(m.Call.Args[0])
	}
	g.mu.Lock()
	h := g.holds[where+":"+marker]
	delete(g.holds, where+":"+marker)
	g.mu.Unlock()
	if h != nil {
		close(h.at)
		<-h.release
	}
}

func (g *gated) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	g.wait("before", b)
	res, err := g.Store.Apply(ctx, b)
	g.wait("after", b)
	return res, err
}

func rvSet(k, v string) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte(v)}
}

// rvGo applies muts in a goroutine; the returned channel is closed once Apply returned.
func rvGo(t *testing.T, c *Cache, muts ...engine.Mutation) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.Apply(rvCtx, &engine.Batch{Muts: muts}); err != nil {
			t.Error(err)
		}
	}()
	return done
}

func rvWant(t *testing.T, c *Cache, e engine.Engine, k, step string) {
	t.Helper()
	for i := 0; i < 2; i++ { // the first read may fill, the second may hit
		want, werr := e.Get(rvCtx, "t", []byte(k), 0)
		got, gerr := c.Get(rvCtx, "t", []byte(k), 0)
		if string(got.Value) != string(want.Value) || got.Version != want.Version || (gerr == nil) != (werr == nil) {
			t.Fatalf("%s, read %d of %s: cache %q v%d (%v), engine %q v%d (%v)", step, i, k, got.Value, got.Version, gerr,
				want.Value, want.Version, werr)
		}
	}
}

// TestMarksWriteThatBeganFirstAndEndedDuringMineDeniesMyWriteThrough: B (SET k b) begins first and is held
// before the engine applies it; A (SET k a) begins, is applied and held; B is applied (after A: the engine
// holds b) and returns while A is in flight; then A returns. When A ends it is the only batch on k (the count
// is back to 0) and no batch began on k since A did, so only the slot's generation moved by B's end tells A that
// its item may be older than the engine's. Without it A writes a through and every later read answers a.
func TestMarksWriteThatBeganFirstAndEndedDuringMineDeniesMyWriteThrough(t *testing.T) {
	g := newGated()
	c := rvNew(g, 64<<20)
	bBefore := g.hold("before", "b")
	bDone := rvGo(t, c, rvSet("k", "b"))
	<-bBefore.at
	aAfter := g.hold("after", "a")
	aDone := rvGo(t, c, rvSet("k", "a"))
	<-aAfter.at
	close(bBefore.release)
	<-bDone
	rvWant(t, c, g.Store, "k", "with a in flight, b returned")
	close(aAfter.release)
	<-aDone
	rvWant(t, c, g.Store, "k", "after both returned")
	if n := c.writeThroughs.Load(); n != 0 {
		t.Fatalf("%d write-throughs of two racing SETs, want 0", n)
	}
	rvNoMarks(t, c)
}

// TestMarksBatchOfAnyKeyDuringMyFlightDeniesMyWriteThrough: SET k a is applied and held; a flush (or a call
// that may write any key, which writes k) begins and ends meanwhile. A's end sees no batch of k and none of any
// key in flight: only the shard's allGen tells it that such a batch came by after it began.
func TestMarksBatchOfAnyKeyDuringMyFlightDeniesMyWriteThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    engine.Mutation
	}{
		{"flush", engine.Mutation{Op: engine.OpFlush, Table: "t"}},
		{"wide call", engine.Mutation{Op: engine.OpCall, Table: "t", Key: []byte("named"),
			Call: engine.CallArgs{Name: "cachereview.set", Args: [][]byte{[]byte("w"), []byte("k")}, AnyKey: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGated()
			c := rvNew(g, 64<<20)
			aAfter := g.hold("after", "a")
			aDone := rvGo(t, c, rvSet("k", "a"))
			<-aAfter.at
			<-rvGo(t, c, tc.m)
			close(aAfter.release)
			<-aDone
			rvWant(t, c, g.Store, "k", "after both returned")
			rvNoMarks(t, c)
		})
	}
}

// TestMarksFlushInFlightAtMyEndDeniesMyWriteThrough: a flush has marked every shard and is held before the
// engine applies it; SET k a begins (after the flush's mark: allGen does not move during A), is applied, and is
// held; the flush is applied (the engine holds nothing) and held before it lifts its marks; then A returns. Only
// the count of batches of any key in flight (all > 0) keeps A from writing a through, which a read would then
// answer until the flush's end reaches the shard.
func TestMarksFlushInFlightAtMyEndDeniesMyWriteThrough(t *testing.T) {
	g := newGated()
	c := rvNew(g, 64<<20)
	flush := engine.Mutation{Op: engine.OpFlush, Table: "t", Value: []byte("flush")}
	fBefore, fAfter := g.hold("before", "flush"), g.hold("after", "flush")
	fDone := rvGo(t, c, flush)
	<-fBefore.at
	aAfter := g.hold("after", "a")
	aDone := rvGo(t, c, rvSet("k", "a"))
	<-aAfter.at
	close(fBefore.release)
	<-fAfter.at
	close(aAfter.release)
	<-aDone
	rvWant(t, c, g.Store, "k", "flush applied, its Apply not returned")
	close(fAfter.release)
	<-fDone
	rvWant(t, c, g.Store, "k", "after both returned")
	rvNoMarks(t, c)
}

// TestMarksOtherSlotsOfTheShardStayCacheable: what the change is for, with every key in one shard: while a
// batch writing a and b is in flight, c is filled and written through, a and b are not (their reads answer the
// engine's), and once it returns nothing is left marked. Also a batch writing a slot twice (two SETs, a RENAME
// onto itself, a call that names its own key again) lifts its marks.
func TestMarksOtherSlotsOfTheShardStayCacheable(t *testing.T) {
	g := newGated()
	c := rvNew(g, 64<<20)
	ks := rvKeys(c, 7, "k", 3)
	a, b, o := ks[0], ks[1], ks[2]
	held := g.hold("after", "held")
	done := rvGo(t, c, rvSet(a, "held"), rvSet(b, "x"))
	<-held.at
	for i := 0; i < 2; i++ {
		c.Get(rvCtx, "t", []byte(o), 0)
		c.Get(rvCtx, "t", []byte(a), 0)
	}
	if h, m := c.hits.Load(), c.misses.Load(); h != 1 || m != 3 {
		t.Fatalf("hits %d misses %d: want %s filled (1 hit) and %s read from the engine twice", h, m, o, a)
	}
	<-rvGo(t, c, rvSet(o, "v"))
	if n := c.writeThroughs.Load(); n != 1 {
		t.Fatalf("%d write-throughs of a key of the shard nothing in flight writes, want 1", n)
	}
	rvWant(t, c, g.Store, a, "a in flight")
	rvWant(t, c, g.Store, o, "o written through")
	close(held.release)
	<-done
	for _, k := range ks {
		rvWant(t, c, g.Store, k, "after the batch")
	}
	rvNoMarks(t, c)
	<-rvGo(t, c, rvSet(a, "1"), rvSet(a, "2"))
	<-rvGo(t, c, engine.Mutation{Op: engine.OpRename, Table: "t", Key: []byte(a), Target: engine.Target{Table: "t", Key: []byte(a)}})
	<-rvGo(t, c, engine.Mutation{Op: engine.OpCall, Table: "t", Key: []byte(a),
		Call: engine.CallArgs{Name: "cachereview.set", Args: [][]byte{[]byte("3"), []byte(a), []byte(b)}, Keys: [][]byte{[]byte(a), []byte(b)}}})
	for _, k := range ks {
		rvWant(t, c, g.Store, k, "after batches writing a slot twice")
	}
	rvNoMarks(t, c)
}

// rvEngine records the engine's states: every batch that may write is applied under mu, and after it the state
// of every key the test uses is read and, if changed, appended to that key's history with the batch's commit
// number; reads take mu shared. So each read through the cache can be checked against the states the engine
// went through during the read (linearizability of single reads, and of a batch of key reads as one state).
// Apply is slowed down at random before and after the engine, fails at random (before applying, or after, as an
// engine that does not know whether it applied), and engine reads are slowed down after they read.
type rvEngine struct {
	*memstore.Store
	items, hashes []string
	mu            sync.RWMutex
	commits       int
	hist          map[string][]rvState
	fails         atomic.Int64
}

type rvState struct {
	at int // commit number from which the key had state s
	s  string
}

var errInjected = errors.New("injected failure")

func rvItemState(it engine.Item, err error) string {
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("%s@%d", it.Value, it.Version)
}

func rvHashState(r engine.Result) string {
	var b strings.Builder
	fmt.Fprint(&b, r.Err, ":")
	for _, m := range r.Members {
		fmt.Fprintf(&b, "%s=%s@%d,", m.Name, m.Item.Value, m.Item.Version)
	}
	return b.String()
}

func rvMembers(h string) engine.Mutation {
	return engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte(h), Coll: engine.CollArgs{Kind: engine.KindHash}}
}

// snapshot appends the states that changed (under mu).
func (e *rvEngine) snapshot() {
	for _, k := range e.items {
		e.note(k, rvItemState(e.Store.Get(rvCtx, "t", []byte(k), 0)))
	}
	for _, h := range e.hashes {
		res, err := e.Store.Apply(rvCtx, &engine.Batch{Muts: []engine.Mutation{rvMembers(h)}})
		if err != nil {
			panic(err)
		}
		e.note(h, rvHashState(res[0]))
	}
}

func (e *rvEngine) note(k, s string) {
	if h := e.hist[k]; len(h) == 0 || h[len(h)-1].s != s {
		e.hist[k] = append(h, rvState{e.commits, s})
	}
}

func rvPause() {
	switch rand.IntN(6) {
	case 0:
		time.Sleep(time.Duration(rand.IntN(80)) * time.Microsecond)
	case 1, 2:
		runtime.Gosched()
	}
}

func (e *rvEngine) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	e.mu.RLock()
	it, err := e.Store.Get(ctx, table, key, now)
	e.mu.RUnlock()
	rvPause()
	return it, err
}

func (e *rvEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	rvPause()
	if engine.ReadsOnly(b.Muts) {
		e.mu.RLock()
		res, err := e.Store.Apply(ctx, b)
		e.mu.RUnlock()
		rvPause()
		return res, err
	}
	fail := rand.IntN(20)
	if fail == 0 {
		e.fails.Add(1)
		return nil, errInjected
	}
	e.mu.Lock()
	res, err := e.Store.Apply(ctx, b)
	e.commits++
	e.snapshot()
	e.mu.Unlock()
	rvPause()
	if fail == 1 {
		e.fails.Add(1)
		return res, errInjected
	}
	return res, err
}

// now is the last commit number.
func (e *rvEngine) now() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.commits
}

// stateAt is key k's state after commit n.
func (e *rvEngine) stateAt(k string, n int) string {
	h := e.hist[k]
	s := h[0].s
	for _, st := range h {
		if st.at > n {
			break
		}
		s = st.s
	}
	return s
}

// check reports whether the states got (by key) were, all at once, the engine's after some commit in [from, to].
func (e *rvEngine) check(from, to int, got map[string]string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	cands := []int{from}
	for k := range got {
		for _, st := range e.hist[k] {
			if st.at > from && st.at <= to {
				cands = append(cands, st.at)
			}
		}
	}
	for _, n := range cands {
		ok := true
		for k, s := range got {
			ok = ok && e.stateAt(k, n) == s
		}
		if ok {
			return true
		}
	}
	return false
}

// history is key k's states from the one it had after commit from on (with the last 3 before it).
func (e *rvEngine) history(k string, from int) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	h := e.hist[k]
	i := len(h)
	for i > 0 && h[i-1].at > from {
		i--
	}
	return fmt.Sprint(h[max(0, i-4):])
}

// TestMarksReadsAreLinearizableUnderRandomBatches: writers apply random batches (SETs, DELs, a key twice,
// RENAME and COPY between the keys, calls naming extra keys, calls of any key, flushes, hash member writes) over
// keys that mostly share one shard, with random delays and failures; readers Get and View the items and read
// the hashes' members (alone, and two in one batch). Every read must answer a state the engine had at some
// moment during the read (for two hashes, the same moment), and at the end no mark is left.
func TestMarksReadsAreLinearizableUnderRandomBatches(t *testing.T) {
	dur := 1500 * time.Millisecond
	if testing.Short() {
		dur = 300 * time.Millisecond
	}
	e := &rvEngine{Store: memstore.New(), hist: map[string][]rvState{}}
	c := rvNew(e, 64<<20)
	e.items = append(rvKeys(c, 3, "k", 6), rvKeys(c, 200, "k", 2)...) // 6 in shard 3, 2 in shard 200
	e.hashes = append(rvKeys(c, 3, "h", 2), rvKeys(c, 200, "h", 1)...)
	e.snapshot()
	var seq atomic.Int64
	val := func() []byte { return []byte(fmt.Sprint("v", seq.Add(1))) }
	item := func() []byte { return []byte(e.items[rand.IntN(len(e.items))]) }
	hash := func() []byte { return []byte(e.hashes[rand.IntN(len(e.hashes))]) }
	mutation := func() engine.Mutation {
		switch r := rand.IntN(100); {
		case r < 40:
			return engine.Mutation{Op: engine.OpSet, Table: "t", Key: item(), Value: val(), Set: engine.SetArgs{Blind: r%2 == 0}}
		case r < 50:
			return engine.Mutation{Op: engine.OpDelete, Table: "t", Key: item()}
		case r < 56:
			return engine.Mutation{Op: engine.OpRename, Table: "t", Key: item(), Target: engine.Target{Table: "t", Key: item()}}
		case r < 62:
			return engine.Mutation{Op: engine.OpCopy, Table: "t", Key: item(), Target: engine.Target{Table: "t", Key: item()}}
		case r < 70:
			k, x := item(), item()
			return engine.Mutation{Op: engine.OpCall, Table: "t", Key: k,
				Call: engine.CallArgs{Name: "cachereview.set", Args: [][]byte{val(), k, x}, Keys: [][]byte{x}}}
		case r < 72:
			return engine.Mutation{Op: engine.OpCall, Table: "t", Key: item(),
				Call: engine.CallArgs{Name: "cachereview.set", Args: [][]byte{val(), item()}, AnyKey: true}}
		case r < 73:
			return engine.Mutation{Op: engine.OpFlush, Table: "t"}
		case r < 88:
			return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: hash(), Value: val(),
				Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(fmt.Sprint("f", rand.IntN(2)))}}
		case r < 94:
			return engine.Mutation{Op: engine.OpMemberDel, Table: "t", Key: hash(),
				Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(fmt.Sprint("f", rand.IntN(2)))}}
		default:
			return engine.Mutation{Op: engine.OpDelete, Table: "t", Key: hash(), AnyKind: true}
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, answerReads atomic.Int64
	fail := func(format string, args ...any) {
		if !stop.Swap(true) {
			t.Errorf(format, args...)
		}
	}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				muts := make([]engine.Mutation, 1+rand.IntN(3))
				for i := range muts {
					muts[i] = mutation()
				}
				if _, err := c.Apply(rvCtx, &engine.Batch{Muts: muts}); err != nil && !errors.Is(err, errInjected) {
					fail("apply: %v", err)
				}
			}
		}()
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for !stop.Load() {
				k := e.items[rand.IntN(len(e.items))]
				from := e.now()
				var it engine.Item
				var err error
				if r%2 == 0 {
					it, err = c.Get(rvCtx, "t", []byte(k), 0)
				} else {
					it, err = c.View(rvCtx, "t", []byte(k), 0)
				}
				to := e.now()
				if err != nil && !errors.Is(err, engine.ErrNotFound) {
					fail("get: %v", err)
					return
				}
				reads.Add(1)
				if s := rvItemState(it, err); !e.check(from, to, map[string]string{k: s}) {
					fail("read of %s during commits %d..%d answered %s; the engine's history: %s", k, from, to, s, e.history(k, from))
					return
				}
			}
		}(r)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for !stop.Load() {
				hs := []string{e.hashes[rand.IntN(len(e.hashes))]}
				if r == 0 {
					hs = append(hs, e.hashes[rand.IntN(len(e.hashes))])
				}
				var muts []engine.Mutation
				for _, h := range hs {
					muts = append(muts, rvMembers(h))
				}
				from := e.now()
				res, err := c.Apply(rvCtx, &engine.Batch{Muts: muts})
				to := e.now()
				if err != nil {
					fail("key reads: %v", err)
					return
				}
				answerReads.Add(1)
				got := map[string]string{}
				for i, h := range hs {
					if s, ok := got[h]; ok && s != rvHashState(res[i]) {
						fail("one batch read %s twice and got %s and %s", h, s, rvHashState(res[i]))
						return
					}
					got[h] = rvHashState(res[i])
				}
				if !e.check(from, to, got) {
					var hist []string
					for _, h := range hs {
						hist = append(hist, h+": "+e.history(h, from))
					}
					fail("key reads of %v during commits %d..%d answered %v, no one state of the engine's: %s", hs, from, to, got,
						strings.Join(hist, "; "))
					return
				}
			}
		}(r)
	}
	time.Sleep(dur)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	rvNoMarks(t, c)
	for _, k := range e.items {
		rvWant(t, c, e.Store, k, "at the end")
	}
	t.Logf("%d commits, %d injected failures, %d reads (%d hits, %d misses), %d key-read batches (%d answer hits), %d write-throughs",
		e.now(), e.fails.Load(), reads.Load(), c.hits.Load(), c.misses.Load(), answerReads.Load(), c.callHits.Load(), c.writeThroughs.Load())
	if c.hits.Load() == 0 || c.writeThroughs.Load() == 0 || c.callHits.Load() == 0 {
		t.Fatal("the cache answered nothing from memory: the test did not exercise it")
	}
}

// TestMarksBigBatchLeavesNoMarkMaps: the maps of slots in flight that a big batch grew are dropped once empty
// (Go's maps never shrink: after one batch of a million keys the shards' empty maps held 84 MB, the review's
// measure), while a small one's stays for the next batch.
func TestMarksBigBatchLeavesNoMarkMaps(t *testing.T) {
	c := rvNew(memstore.New(), 64<<20)
	var muts []engine.Mutation
	for i := 0; i < 256*200; i++ { // about 200 a shard, past maxKeptMarks everywhere
		muts = append(muts, rvSet(fmt.Sprint("k", i), "v"))
	}
	<-rvGo(t, c, muts...)
	<-rvGo(t, c, rvSet("small", "v"))
	kept := 0
	for i := range c.shards {
		sh := &c.shards[i]
		if sh.writing != nil {
			kept++
			if len(sh.writing) != 0 || sh.peak > maxKeptMarks {
				t.Fatalf("shard %d kept a map of %d slots that held %d", i, len(sh.writing), sh.peak)
			}
		}
	}
	if kept != 1 {
		t.Fatalf("%d shards kept a map; want the small batch's one", kept)
	}
	rvNoMarks(t, c)
}
