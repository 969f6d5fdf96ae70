package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/cache"
	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// lrange reads list l of table t through e as LRANGE does (RangeValues) and returns its elements joined by
// spaces, or the result's error.
func lrange(t *testing.T, e engine.Engine, now int64, l string) string {
	t.Helper()
	res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{collections.RangeValues("t", []byte(l), 0, -1)}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		return res[0].Err.Error()
	}
	var out []string
	for v, rest, ok := collections.NextValue(res[0].New.Value); ok; v, rest, ok = collections.NextValue(rest) {
		out = append(out, string(v))
	}
	return strings.Join(out, " ")
}

func apply(t *testing.T, e engine.Engine, now int64, muts ...engine.Mutation) {
	t.Helper()
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
		t.Fatal(err)
	}
}

func answerStats(c engine.Engine) (hits, misses int64) {
	st := c.(engine.Statser).Stats()
	return st["cache_answer_hits"], st["cache_answer_misses"]
}

// TestKeyReadAnswersFollowWrites: a list read is answered from memory once read, and every way the list can
// change drops that answer: a push, a delete, a flush of its table, a call that wrote it without naming it.
func TestKeyReadAnswersFollowWrites(t *testing.T) {
	c := cache.New(memstore.New(), 1<<20)
	defer c.Close()
	push := func(v string) { apply(t, c, 1, collections.Push("t", []byte("l"), true, false, []byte(v))) }
	want := func(step, w string) {
		t.Helper()
		if got := lrange(t, c, 1, "l"); got != w {
			t.Fatalf("%s: LRANGE = %q, want %q", step, got, w)
		}
	}
	push("a")
	want("first read", "a")
	want("second read", "a")
	if hits, misses := answerStats(c); hits != 1 || misses != 1 {
		t.Fatalf("hits %d, misses %d after two reads: want the second answered from memory", hits, misses)
	}
	push("b")
	want("after a push", "b a")
	want("after a push, again", "b a")
	// Other arguments are another answer; LINDEX too.
	res, _ := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{collections.Index("t", []byte("l"), 1)}})
	if string(res[0].New.Value) != "a" {
		t.Fatalf("LINDEX 1 = %q", res[0].New.Value)
	}
	apply(t, c, 1, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("l"), AnyKind: true})
	want("after DEL", "")
	push("c")
	want("re-created", "c")
	apply(t, c, 1, engine.Mutation{Op: engine.OpFlush, Table: "t"})
	want("after a flush", "")
	push("d")
	want("re-created again", "d")
	// A script that writes the key without naming it (AnyKey) turns the list into a string.
	apply(t, c, 1, engine.Mutation{Op: engine.OpCall, Table: "t", Key: []byte("other"),
		Call: engine.CallArgs{Name: "cachetest.set", Args: [][]byte{[]byte("l")}, AnyKey: true}})
	if got := lrange(t, c, 1, "l"); got != engine.ErrWrongType.Error() {
		t.Fatalf("after a wide call wrote the key: LRANGE = %q, want %q", got, engine.ErrWrongType)
	}
}

// TestKeyReadAnswerEndsAtExpiry: an answer is not served past its key's expiry, which changes it with no write.
func TestKeyReadAnswerEndsAtExpiry(t *testing.T) {
	c := cache.New(memstore.New(), 1<<20)
	defer c.Close()
	apply(t, c, 1000, collections.Push("t", []byte("l"), true, false, []byte("a")),
		engine.Mutation{Op: engine.OpExpire, Table: "t", Key: []byte("l"), Expires: 2000})
	for _, now := range []int64{1500, 1999} {
		if got := lrange(t, c, now, "l"); got != "a" {
			t.Fatalf("at %d, before the expiry: %q", now, got)
		}
	}
	if hits, _ := answerStats(c); hits != 1 {
		t.Fatalf("%d hits before the expiry, want 1", hits)
	}
	if got := lrange(t, c, 2000, "l"); got != "" {
		t.Fatalf("at the expiry: %q, want an empty list", got)
	}
}

// TestKeyReadAnswerWhileWriteInFlight: once the engine shows a push, a list read must not answer the older
// cached list, even before the push's Apply returns; nor keep the answer it read meanwhile past the push.
func TestKeyReadAnswerWhileWriteInFlight(t *testing.T) {
	inner := blockingApply{memstore.New(), make(chan struct{}), make(chan struct{})}
	inner.Store.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{collections.Push("t", []byte("l"), true, false, []byte("a"))}})
	c := cache.New(readsPass{inner}, 1<<20)
	if got := lrange(t, c, 0, "l"); got != "a" { // now cached
		t.Fatalf("warm-up: %q", got)
	}
	done := make(chan struct{})
	go func() {
		c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{collections.Push("t", []byte("l"), true, false, []byte("b"))}})
		close(done)
	}()
	<-inner.applied
	for i := 0; i < 3; i++ {
		if got := lrange(t, c, 0, "l"); got != "b a" {
			t.Fatalf("read %d while the push is in flight = %q; the engine already shows b a", i, got)
		}
	}
	close(inner.release)
	<-done
	if got := lrange(t, c, 0, "l"); got != "b a" {
		t.Fatalf("after the push: %q", got)
	}
}

// readsPass sends batches of reads straight to the store and others through blockingApply.
type readsPass struct{ blockingApply }

func (r readsPass) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if engine.ReadsOnly(b.Muts) {
		return r.Store.Apply(ctx, b)
	}
	return r.blockingApply.Apply(ctx, b)
}

// TestKeyReadAnswersAgreeWithTheEngine: writers push and pop while readers read the lists through the cache;
// at the end of each round the cache's answer of every list is the engine's.
func TestKeyReadAnswersAgreeWithTheEngine(t *testing.T) {
	inner := memstore.New()
	c := cache.New(slowApply{inner}, 1<<20)
	defer c.Close()
	lists := []string{"a", "b", "c"}
	for round := 0; round < 40; round++ {
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(2)
			go func(w int) {
				defer wg.Done()
				l := []byte(lists[(round+w)%len(lists)])
				m := collections.Push("t", l, w%2 == 0, false, []byte(fmt.Sprint(round, "-", w)))
				if (round+w)%3 == 0 {
					m = collections.Pop("t", l, w%2 == 1, -1)
				}
				if _, err := c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{m}}); err != nil {
					t.Error(err)
				}
			}(w)
			go func(w int) { // fills race the writes
				defer wg.Done()
				for _, l := range lists {
					c.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{collections.RangeValues("t", []byte(l), 0, -1)}})
				}
			}(w)
		}
		wg.Wait()
		for _, l := range lists {
			if got, want := lrange(t, c, 0, l), lrange(t, inner, 0, l); got != want {
				t.Fatalf("round %d list %s: cache %q, engine %q", round, l, got, want)
			}
		}
	}
	if hits, _ := answerStats(c); hits == 0 {
		t.Fatal("no answer came from memory: the test did not exercise the cache")
	}
}

// TestKeyReadAnswerReadBeforeAWriteIsNotKept: a list read that reached the engine before a push, and returns
// after the push completed, answers what it read, but must not keep it: the next read shows the push.
func TestKeyReadAnswerReadBeforeAWriteIsNotKept(t *testing.T) {
	inner := &heldReads{Store: memstore.New(), read: make(chan struct{}, 1), release: make(chan struct{})}
	c := cache.New(inner, 1<<20)
	defer c.Close()
	apply(t, c, 0, collections.Push("t", []byte("l"), true, false, []byte("a")))
	got := make(chan string)
	inner.block.Store(true)
	go func() { got <- lrange(t, c, 0, "l") }()
	<-inner.read // the engine answered "a"; the answer is on its way back
	inner.block.Store(false)
	apply(t, c, 0, collections.Push("t", []byte("l"), true, false, []byte("b")))
	close(inner.release)
	if g := <-got; g != "a" {
		t.Fatalf("the read that began before the push: %q", g)
	}
	if g := lrange(t, c, 0, "l"); g != "b a" {
		t.Fatalf("after the push: %q; the answer read before it was kept", g)
	}
}

// heldReads holds a batch of reads after the engine answered it, while block is set, until release is closed.
type heldReads struct {
	*memstore.Store
	block   atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func (s *heldReads) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := s.Store.Apply(ctx, b)
	if engine.ReadsOnly(b.Muts) && s.block.Load() {
		s.read <- struct{}{}
		<-s.release
	}
	return res, err
}

// TestMemberAndRangeAnswersFollowWrites: hash field and whole-hash reads, and sorted-set ranges, are answered
// from memory once read, and a write of the collection drops them; ZRANGESTORE, which reads another key, is
// never answered from memory, and its destination's answers go when it writes.
func TestMemberAndRangeAnswersFollowWrites(t *testing.T) {
	c := cache.New(memstore.New(), 1<<20)
	defer c.Close()
	hset := func(f, v string) {
		apply(t, c, 1, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte(v),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}})
	}
	read := func(m engine.Mutation) engine.Result {
		t.Helper()
		res, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	hget := func(f string) string {
		r := read(engine.Mutation{Op: engine.OpMemberGet, Table: "t", Key: []byte("h"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}})
		if r.Err != nil {
			return r.Err.Error()
		}
		return string(r.Old.Value)
	}
	hgetall := func() string {
		r := read(engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("h"), Coll: engine.CollArgs{Kind: engine.KindHash}})
		var out []string
		for _, mb := range r.Members {
			out = append(out, string(mb.Name)+"="+string(mb.Item.Value))
		}
		return strings.Join(out, " ")
	}
	hset("a", "1")
	for i := 0; i < 2; i++ {
		if g := hget("a"); g != "1" {
			t.Fatalf("HGET a = %q", g)
		}
		if g := hgetall(); g != "a=1" {
			t.Fatalf("HGETALL = %q", g)
		}
	}
	if g := hget("b"); g != engine.ErrNotFound.Error() {
		t.Fatalf("HGET b = %q", g)
	}
	if hits, _ := answerStats(c); hits != 2 {
		t.Fatalf("%d answers from memory, want 2 (the second HGET a and HGETALL)", hits)
	}
	hset("b", "2")
	if g := hget("b"); g != "2" {
		t.Fatalf("HGET b after HSET = %q", g)
	}
	if g := hgetall(); g != "a=1 b=2" {
		t.Fatalf("HGETALL after HSET = %q", g)
	}
	apply(t, c, 1, engine.Mutation{Op: engine.OpMemberDel, Table: "t", Key: []byte("h"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("a")}})
	if g := hgetall(); g != "b=2" {
		t.Fatalf("HGETALL after HDEL = %q", g)
	}

	zrange := func(key string) string {
		r := read(collections.ZRange("t", []byte(key), collections.RangeSpec{By: "rank", Min: []byte("0"), Max: []byte("-1"), Count: -1}))
		var out []string
		for _, mb := range r.Members {
			out = append(out, string(mb.Name))
		}
		return strings.Join(out, " ")
	}
	apply(t, c, 1, collections.ZAdd("t", []byte("z"), 0, []byte("1"), []byte("x")))
	zrange("z")
	if g := zrange("z"); g != "x" {
		t.Fatalf("ZRANGE = %q", g)
	}
	apply(t, c, 1, collections.ZAdd("t", []byte("z"), 0, []byte("0"), []byte("w")))
	if g := zrange("z"); g != "w x" {
		t.Fatalf("ZRANGE after ZADD = %q", g)
	}
	zrange("dst")
	st := collections.ZRangeStore("t", []byte("dst"), []byte("z"), collections.RangeSpec{By: "rank", Min: []byte("0"), Max: []byte("-1"), Count: -1})
	if engine.KeyRead(&st) {
		t.Fatal("ZRANGESTORE, which reads another key and writes its own, counts as a read of its own key")
	}
	apply(t, c, 1, st)
	if g := zrange("dst"); g != "w x" {
		t.Fatalf("ZRANGE of ZRANGESTORE's destination = %q", g)
	}
}

// TestKeyReadBatchIsOneState: a batch of several reads answered from memory reads one state, as the engine
// would: a writer sets two hash fields (of one key, then of two keys) to the same value in one batch, readers
// keep each field's answer cached alone, and a batch reading both must never see them differ. Without the check
// of the shards' generations after the lookups, an answer from before a write met one from after it within a
// second or two (the review's finding).
func TestKeyReadBatchIsOneState(t *testing.T) {
	for _, tc := range []struct{ ka, fa, kb, fb string }{{"h", "f1", "h", "f2"}, {"a", "f", "b", "f"}} {
		t.Run(tc.ka+tc.kb, func(t *testing.T) {
			c := cache.New(memstore.New(), 64<<20)
			defer c.Close()
			get := func(k, f string) engine.Mutation {
				return engine.Mutation{Op: engine.OpMemberGet, Table: "t", Key: []byte(k), Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
			}
			set := func(k, f, v string) engine.Mutation {
				return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(k), Value: []byte(v),
					Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
			}
			var pads []engine.Mutation // reads between the two widen the window between their lookups
			for i := 0; i < 200; i++ {
				k := fmt.Sprint("pad", i)
				apply(t, c, 1, set(k, "f", "x"))
				pads = append(pads, get(k, "f"))
			}
			apply(t, c, 1, set(tc.ka, tc.fa, "0"), set(tc.kb, tc.fb, "0"))
			check := append(append([]engine.Mutation{get(tc.ka, tc.fa)}, pads...), get(tc.kb, tc.fb))
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(3)
			go func() {
				defer wg.Done()
				for i := 1; !stop.Load(); i++ {
					v := fmt.Sprint(i)
					if _, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set(tc.ka, tc.fa, v), set(tc.kb, tc.fb, v)}}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			for _, m := range []engine.Mutation{get(tc.ka, tc.fa), get(tc.kb, tc.fb)} {
				go func() {
					defer wg.Done()
					for !stop.Load() {
						c.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
						runtime.Gosched()
					}
				}()
			}
			defer func() { stop.Store(true); wg.Wait() }()
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
				res, err := c.Apply(ctx, &engine.Batch{Now: 1, Muts: check})
				if err != nil {
					t.Fatal(err)
				}
				if a, b := string(res[0].Old.Value), string(res[len(res)-1].Old.Value); a != b {
					t.Fatalf("one batch read %s.%s = %s and %s.%s = %s", tc.ka, tc.fa, a, tc.kb, tc.fb, b)
				}
			}
			if hits, _ := answerStats(c); hits == 0 {
				t.Fatal("no answer came from memory: the test did not exercise the cache")
			}
		})
	}
}

// TestKeyAnswersStayWithinTheirBound: the answers of one key, however many ranges are read, hold no more than
// the shard's share for answers (the review found eight answers of one key holding twice that).
func TestKeyAnswersStayWithinTheirBound(t *testing.T) {
	const maxBytes = 256 * 64 << 10 // 64 KiB a shard: 16 KiB for answers
	c := cache.New(memstore.New(), maxBytes)
	defer c.Close()
	for i := 0; i < 40; i++ {
		apply(t, c, 1, collections.Push("t", []byte("l"), false, false, []byte(strings.Repeat("x", 100))))
	}
	for i := int64(0); i < 8; i++ { // eight ranges of 20 elements, about 3.7 KiB each
		for j := 0; j < 2; j++ {
			apply(t, c, 1, collections.Range("t", []byte("l"), i, i+19))
		}
	}
	st := c.(engine.Statser).Stats()
	if bound := int64(maxBytes / 256 / 4); st["cache_answer_bytes"] > bound || st["cache_answer_hits"] == 0 {
		t.Fatalf("one key's answers hold %d bytes (bound %d), %d hits", st["cache_answer_bytes"], bound, st["cache_answer_hits"])
	}
}
