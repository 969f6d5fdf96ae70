package kv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

var ctx = context.Background()

func newStore(t *testing.T, opts kv.Options) *kv.Store {
	t.Helper()
	s := kv.New(memstore.New(), opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func set(key, val string) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(key), Value: []byte(val)}
}

func TestLimitsRejectWholeBatch(t *testing.T) {
	s := newStore(t, kv.Options{Limits: kv.Limits{MaxKey: 4, MaxValue: 8, MaxBatch: 3}})
	cases := []struct {
		muts []engine.Mutation
		want error
	}{
		{[]engine.Mutation{set("ok", "v"), set("toolong", "v")}, kv.ErrKeyTooLarge},
		{[]engine.Mutation{set("ok", "v"), set("k", "123456789")}, kv.ErrValueTooLarge},
		{[]engine.Mutation{set("a", ""), set("b", ""), set("c", ""), set("d", "")}, kv.ErrBatchTooLarge},
		{[]engine.Mutation{{Op: engine.OpSet, Key: []byte("k")}}, kv.ErrEmptyTable},
		{[]engine.Mutation{{Op: engine.OpRename, Table: "t", Key: []byte("k"), Target: engine.Target{Table: "t", Key: []byte("12345")}}}, kv.ErrKeyTooLarge},
	}
	for i, c := range cases {
		if _, err := s.Apply(ctx, c.muts); !errors.Is(err, c.want) {
			t.Errorf("case %d: err = %v, want %v", i, err, c.want)
		}
	}
	if _, err := s.Get(ctx, "t", []byte("ok")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a rejected batch was half applied: %v", err)
	}
	// Appends are bounded by the value limit too.
	s.Apply1(ctx, set("a", "1234"))
	r := s.Apply1(ctx, engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("a"), Value: []byte("56789")})
	if !errors.Is(r.Err, engine.ErrTooLarge) {
		t.Fatalf("append past the limit: %v", r.Err)
	}
	// A protocol's tighter bound (memcached's item size) is kept, not widened to MaxValue.
	r = s.Apply1(ctx, engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("a"), Value: []byte("5"), Edit: engine.EditArgs{MaxSize: 4}})
	if !errors.Is(r.Err, engine.ErrTooLarge) {
		t.Fatalf("append past the caller's MaxSize: %v", r.Err)
	}
}

func TestScanPagesAndCount(t *testing.T) {
	s := newStore(t, kv.Options{})
	var muts []engine.Mutation
	for i := 0; i < 25; i++ {
		muts = append(muts, set(fmt.Sprintf("k%02d", i), fmt.Sprint(i)))
	}
	muts = append(muts, set("other", "x"))
	if _, err := s.Apply(ctx, muts); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := kv.Query{Prefix: []byte("k"), Limit: 10}
	pages := 0
	for {
		p, err := s.Scan(ctx, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range p.Entries {
			got = append(got, string(e.Key)+"="+string(e.Item.Value))
		}
		if p.Next == nil {
			break
		}
		q.After = p.Next
	}
	if pages != 3 || len(got) != 25 || got[0] != "k00=0" || got[24] != "k24=24" {
		t.Fatalf("%d pages: %v", pages, got)
	}
	n, err := s.Count(ctx, "t", kv.Query{Start: []byte("k05"), End: []byte("k10")})
	if err != nil || n != 5 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if n, _ := s.Count(ctx, "t", kv.Query{Prefix: []byte("k1"), Start: []byte("k15")}); n != 5 {
		t.Fatalf("prefix+start count = %d, want 5", n)
	}
	if p, _ := s.Scan(ctx, "t", kv.Query{Start: []byte("z"), End: []byte("a")}); len(p.Entries) != 0 {
		t.Fatalf("inverted range returned %d entries", len(p.Entries))
	}
	p, _ := s.Scan(ctx, "t", kv.Query{Prefix: []byte("k0"), KeysOnly: true})
	if len(p.Entries) != 10 || p.Entries[0].Item.Value != nil {
		t.Fatalf("keys-only scan = %+v", p.Entries[:1])
	}
}

func TestSweeperReclaimsExpired(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Unix(1000, 0).UnixMilli())
	s := newStore(t, kv.Options{SweepInterval: time.Millisecond, Clock: func() time.Time { return time.UnixMilli(clock.Load()) }})
	for i := 0; i < 100; i++ {
		m := set(fmt.Sprint(i), "v")
		if i%2 == 0 {
			m.Expires = s.Now() + 1000
		}
		s.Apply1(ctx, m)
	}
	clock.Add(2000)
	if _, err := s.Get(ctx, "t", []byte("0")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("expired item visible: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Engine["keys"] != 50 {
		if time.Now().After(deadline) {
			t.Fatalf("sweeper left %d keys, want 50", s.Stats().Engine["keys"])
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.ExpiredSwept != 50 || st.Misses != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestNotSupportedWithoutScanner(t *testing.T) {
	s := kv.New(getOnly{memstore.New()}, kv.Options{SweepInterval: -1, EngineName: "memcached://127.0.0.1:11211"})
	defer s.Close()
	if _, err := s.Scan(ctx, "t", kv.Query{}); !errors.Is(err, engine.ErrNotSupported) ||
		!strings.Contains(err.Error(), "memcached://127.0.0.1:11211 keeps no ordered keys") {
		t.Fatalf("scan on an engine without Scanner: %v (want ErrNotSupported naming the engine)", err)
	}
	if _, err := s.Tables(ctx); !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "memcached://") {
		t.Fatalf("tables: %v", err)
	}
}

// getOnly hides every optional ability of the engine it wraps.
type getOnly struct{ e engine.Engine }

func (g getOnly) Get(ctx context.Context, t string, k []byte, now int64) (engine.Item, error) {
	return g.e.Get(ctx, t, k, now)
}
func (g getOnly) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	return g.e.Apply(ctx, b)
}
func (g getOnly) Close() error { return g.e.Close() }

// scanGuard fails the test when the engine is called from inside a Scan callback, which the engine contract
// forbids: memstore holds its read lock there, and a Get queued behind a waiting writer deadlocks (the reclaim
// sweep once did this, and hung the server under redis-benchmark's LPUSH test).
type scanGuard struct {
	*memstore.Store
	t  *testing.T
	in atomic.Bool
}

func (g *scanGuard) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	g.in.Store(true)
	defer g.in.Store(false)
	return g.Store.Scan(ctx, table, r, now, fn)
}

func (g *scanGuard) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if g.in.Load() {
		g.t.Error("Get called from inside a Scan callback")
	}
	return g.Store.Get(ctx, table, key, now)
}

func (g *scanGuard) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if g.in.Load() {
		g.t.Error("Apply called from inside a Scan callback")
	}
	return g.Store.Apply(ctx, b)
}

// TestCollectionMembersAreReclaimed: the members of a deleted hash leave the member table in the background, a
// live hash's members stay, and the engine's own tables are neither listed nor reachable by clients.
func TestCollectionMembersAreReclaimed(t *testing.T) {
	eng := &scanGuard{Store: memstore.New(), t: t}
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	hset := func(key, field string) engine.Mutation {
		return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(field)}}
	}
	if _, err := s.Apply(ctx, []engine.Mutation{hset("gone", "a"), hset("gone", "b"), hset("kept", "c")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte("gone"), AnyKind: true}}); err != nil {
		t.Fatal(err)
	}
	members := func() int {
		n := 0
		eng.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func([]byte, engine.Item) bool { n++; return true })
		return n
	}
	if n := members(); n != 3 {
		t.Fatalf("%d member items before the sweep, want 3", n)
	}
	s.SweepOnce(ctx)
	if n := members(); n != 1 {
		t.Fatalf("%d member items after the sweep, want 1 (the live hash's)", n)
	}
	tables, err := s.Tables(ctx)
	if err != nil || fmt.Sprint(tables) != "[t]" {
		t.Fatalf("Tables = %v, %v", tables, err)
	}
	if _, err := s.Get(ctx, engine.MemberTable("t"), []byte("x")); !errors.Is(err, kv.ErrReservedTable) {
		t.Fatalf("client read of a member table: %v", err)
	}
	if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpSet, Table: "\x00x", Key: []byte("k")}}); !errors.Is(err, kv.ErrReservedTable) {
		t.Fatalf("client write to a reserved table: %v", err)
	}
}

// A scan that fails gives no partial answer: no entries, no count (issue 10).
func TestScanErrorsGiveNoPartialAnswer(t *testing.T) {
	errCorrupt := errors.New("checksum mismatch")
	f, e := enginetest.NewFaulty(memstore.New(), errCorrupt)
	s := kv.New(e, kv.Options{SweepInterval: -1})
	defer s.Close()
	if _, err := s.Apply(ctx, []engine.Mutation{set("a", "1"), set("b", "2"), set("c", "3")}); err != nil {
		t.Fatal(err)
	}
	f.Fail(func(table string, key []byte) bool { return string(key) == "b" || key == nil })
	if p, err := s.Scan(ctx, "t", kv.Query{}); !errors.Is(err, errCorrupt) || len(p.Entries) != 0 || p.Next != nil {
		t.Errorf("Scan: %d entries, next %q, err %v", len(p.Entries), p.Next, err)
	}
	if n, err := s.Count(ctx, "t", kv.Query{}); !errors.Is(err, errCorrupt) || n != 0 {
		t.Errorf("Count: %d, %v", n, err)
	}
	if names, err := s.Tables(ctx); !errors.Is(err, errCorrupt) || names != nil {
		t.Errorf("Tables: %q, %v", names, err)
	}
	if _, err := s.Get(ctx, "t", []byte("b")); !errors.Is(err, errCorrupt) {
		t.Errorf("Get: %v", err)
	}
	if st := s.Stats(); st.Misses != 0 {
		t.Errorf("a failed read counted as a miss: %+v", st)
	}
}

// failingSweeper is memstore whose Sweep fails while fail is set, reporting each call on calls.
type failingSweeper struct {
	*memstore.Store
	fail  atomic.Bool
	calls chan struct{}
}

func (f *failingSweeper) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	f.calls <- struct{}{}
	if f.fail.Load() {
		return 0, errors.New("checksum mismatch")
	}
	return f.Store.Sweep(ctx, now, budget)
}

// logRecords is a slog handler that sends each record's level and message to a channel.
type logRecords chan string

func (l logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l logRecords) Handle(_ context.Context, r slog.Record) error {
	l <- r.Level.String() + " " + r.Message
	return nil
}
func (l logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logRecords) WithGroup(string) slog.Handler      { return l }

// The sweeper logs when sweeping starts failing and when it recovers, not at every tick.
func TestSweeperLogsFailuresOnce(t *testing.T) {
	eng := &failingSweeper{Store: memstore.New(), calls: make(chan struct{})}
	eng.fail.Store(true)
	logs := make(logRecords, 100)
	s := kv.New(eng, kv.Options{SweepInterval: time.Millisecond, Logger: slog.New(logs)})
	waitCalls := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-eng.calls:
			case <-time.After(10 * time.Second):
				t.Fatal("the sweeper stopped sweeping")
			}
		}
	}
	waitCalls(5)
	eng.fail.Store(false)
	waitCalls(3) // the call in flight may still fail; the next ones succeed
	go func() {
		for range eng.calls { // let Close stop a sweeper blocked on reporting its call
		}
	}()
	s.Close()
	close(eng.calls)
	close(logs)
	var got []string
	for r := range logs {
		got = append(got, r)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "ERROR kv: sweeping") || !strings.HasPrefix(got[1], "INFO ") {
		t.Fatalf("log records %q, want one error then one recovery", got)
	}
}

// A page that ends at the empty key says where to resume; a nil Next would end the scan there.
func TestScanPageEndingAtTheEmptyKey(t *testing.T) {
	s := newStore(t, kv.Options{})
	if _, err := s.Apply(ctx, []engine.Mutation{set("", "1"), set("a", "2")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := kv.Query{Limit: 1}
	for pages := 0; pages < 10; pages++ {
		p, err := s.Scan(ctx, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if e.Key == nil {
				t.Fatal("an entry with a nil key")
			}
			got = append(got, string(e.Key))
		}
		if p.Next == nil {
			break
		}
		q.After = p.Next
	}
	if fmt.Sprintf("%q", got) != `["" "a"]` {
		t.Fatalf("paging one key at a time: %q", got)
	}
}

// slottedMem is memstore spread, for the test, over 4 slots: like a slotted remote engine it refuses a batch whose
// keys are in two of them.
type slottedMem struct{ *memstore.Store }

func (slottedMem) Slots() int { return 4 }

func (s slottedMem) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	for _, m := range b.Muts {
		if engine.SlotOf(m.Table, m.Key, 4) != engine.SlotOf(b.Muts[0].Table, b.Muts[0].Key, 4) {
			return nil, engine.ErrCrossSlot
		}
	}
	return s.Store.Apply(ctx, b)
}

// Over an engine spread over slots, members of deleted collections in different slots are reclaimed too: each
// slot's in a batch of its own.
func TestReclaimKeepsBatchesInOneSlot(t *testing.T) {
	eng := slottedMem{memstore.New()}
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	slots := map[int]bool{}
	for i := 0; i < 8; i++ {
		key := fmt.Sprintf("h%d", i)
		slots[engine.SlotOf("t", []byte(key), 4)] = true
		m := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
		if _, err := s.Apply(ctx, []engine.Mutation{m}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte(key), AnyKind: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(slots) < 2 {
		t.Fatalf("the hashes fell in %d slot(s): the test needs several", len(slots))
	}
	s.SweepOnce(ctx)
	n := 0
	eng.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func([]byte, engine.Item) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d member items of deleted hashes left after the sweep", n)
	}
}

// scanCounter counts the engine's scans of member tables (the reclaimer's walks).
type scanCounter struct {
	*memstore.Store
	n atomic.Int64
}

func (c *scanCounter) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if _, ok := engine.UserTable(table); ok {
		c.n.Add(1)
	}
	return c.Store.Scan(ctx, table, r, now, fn)
}

// TestReclaimRestsUntilWoken: once a whole pass found nothing to delete, the background sweep stops walking the
// members of live collections (it read every member ten times a second before); a DEL wakes it, and the deleted
// hash's members go at the next tick.
func TestReclaimRestsUntilWoken(t *testing.T) {
	eng := &scanCounter{Store: memstore.New()}
	s := kv.New(eng, kv.Options{SweepInterval: 5 * time.Millisecond})
	defer s.Close()
	for _, key := range []string{"live", "gone"} {
		m := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
		if _, err := s.Apply(ctx, []engine.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	members := func() int {
		n := 0
		eng.Store.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func([]byte, engine.Item) bool { n++; return true })
		return n
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitUntil("a first pass", func() bool { return eng.n.Load() > 0 })
	time.Sleep(50 * time.Millisecond) // ten ticks: the first pass found nothing, so the reclaimer rests
	before := eng.n.Load()
	time.Sleep(200 * time.Millisecond) // forty ticks, within the first rest (1 s)
	if walks := eng.n.Load() - before; walks > 1 {
		t.Fatalf("%d walks of the members in 40 ticks with nothing to reclaim, want at most 1", walks)
	}
	if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte("gone"), AnyKind: true}}); err != nil {
		t.Fatal(err)
	}
	waitUntil("the deleted hash's member to be reclaimed", func() bool { return members() == 1 })
}

// queuedEngine runs wait before each Apply: a batch that waits in a writer's queue while time passes.
type queuedEngine struct {
	engine.Engine
	wait func()
}

func (e queuedEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	e.wait()
	return e.Engine.Apply(ctx, b)
}

// TestQueuedBatchJudgesExpiryWhenResolved: a SET XX that waited in the engine's queue past its key's expiry
// fails, as a read at that moment found the key gone; judged at the time Apply was called it would succeed and
// bring the key back, permanent (the audit's case, 33 times in 200 under load, through RESP and memcached).
func TestQueuedBatchJudgesExpiryWhenResolved(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_700_000_000_000)
	advance := false
	e := queuedEngine{Engine: memstore.New(), wait: func() {
		if advance {
			clock.Add(100) // the key expires while the batch waits
		}
	}}
	s := kv.New(e, kv.Options{SweepInterval: -1, Clock: func() time.Time { return time.UnixMilli(clock.Load()) }})
	defer s.Close()
	k := []byte("k")
	old := engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: []byte("old"), Expires: clock.Load() + 50}
	if r := s.Apply1(ctx, old); r.Err != nil {
		t.Fatal(r.Err)
	}
	advance = true
	r := s.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: []byte("new"), Cond: engine.CondPresent})
	if !errors.Is(r.Err, engine.ErrNotFound) {
		t.Fatalf("SET XX resolved after the key expired: %v, want ErrNotFound", r.Err)
	}
	if _, err := s.Get(ctx, "t", k); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the expired key is back: %v", err)
	}
}

// memberVisits counts the members of the collection at key that the engine's scans hand to their callbacks
// (the reclaimer's reads).
type memberVisits struct {
	*memstore.Store
	key string
	n   atomic.Int64
}

func (v *memberVisits) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	return v.Store.Scan(ctx, table, r, now, func(mk []byte, it engine.Item) bool {
		if k, _, _, err := engine.SplitMemberKey(mk); err == nil && string(k) == v.key {
			v.n.Add(1)
		}
		return fn(mk, it)
	})
}

// TestReclaimSkipsLiveCollections: a pass seeks past the members of a big live collection instead of reading
// them all, so a deleted collection sorted after it is reclaimed in the first step (a step examines at most 2,000
// members: walking the live hash's 10,000 took five steps first, and read every member again at each pass); a
// big deleted one is reclaimed whole, over several steps, and the live one keeps every member.
func TestReclaimSkipsLiveCollections(t *testing.T) {
	eng := &memberVisits{Store: memstore.New(), key: "big"}
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	hset := func(key string, n int) {
		var muts []engine.Mutation
		for i := 0; i < n; i++ {
			muts = append(muts, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte("v"),
				Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(fmt.Sprint("f", i))}})
		}
		if _, err := s.Apply(ctx, muts); err != nil {
			t.Fatal(err)
		}
	}
	del := func(key string) {
		if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte(key), AnyKind: true}}); err != nil {
			t.Fatal(err)
		}
	}
	members := func(key string) int {
		n := 0
		eng.Store.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func(mk []byte, _ engine.Item) bool {
			if k, _, _, _ := engine.SplitMemberKey(mk); string(k) == key {
				n++
			}
			return true
		})
		return n
	}
	// Member keys sort by the key's length first: "big" (live), then "gone", then "other" (both deleted).
	hset("big", 10000)
	hset("gone", 100)
	hset("other", 5000)
	del("gone")
	del("other")
	eng.n.Store(0)
	if err := s.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := members("gone"); n != 0 {
		t.Fatalf("%d members of the deleted hash sorted after a live one left after the first step", n)
	}
	if v := eng.n.Load(); v > 100 {
		t.Fatalf("the step read %d members of the live hash; want its first 65", v)
	}
	for i := 0; i < 5 && members("other") > 0; i++ {
		if err := s.SweepOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, live := members("other"), members("big"); n != 0 || live != 10000 {
		t.Fatalf("after five more steps: %d members of the big deleted hash left, %d of the live one (want 0 and 10000)", n, live)
	}
}
