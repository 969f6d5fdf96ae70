package remote

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
)

// stampBackend is a datastore in memory with what group commit relies on: stamps checked at commit (a conflict
// when one changed), a version counter, and an optional hold on Read so a test can make calls queue up.
type stampBackend struct {
	mu      sync.Mutex
	items   map[slotKey]engine.Item
	stamps  map[slotKey]uint64
	ctr     uint64
	stamp   uint64
	reads   int
	commits int
	hold    chan struct{} // when set, Read waits for it to close
	delay   time.Duration
	// failCall, when > 0, makes the failCall-th call of Commit (counting from 1 in calls) return failErr
	// without applying anything.
	calls    int
	failCall int
	failErr  error
}

func newStampBackend() *stampBackend {
	return &stampBackend{items: map[slotKey]engine.Item{}, stamps: map[slotKey]uint64{}}
}

func (b *stampBackend) Read(ctx context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	b.mu.Lock()
	hold := b.hold
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, nil, false, nil, ctx.Err()
		}
	}
	time.Sleep(b.delay)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads++
	out := make([]Stored, len(slots))
	for i, s := range slots {
		k := slotKey{s.Table, string(s.Key)}
		if it, ok := b.items[k]; ok {
			out[i] = Stored{Item: it, Found: true, Stamp: b.stamps[k]}
		}
	}
	vs := make([]uint64, n)
	for i := range vs {
		b.ctr++
		vs[i] = b.ctr
	}
	return out, vs, true, nil, nil
}

func (b *stampBackend) Commit(_ context.Context, checks []Check, w *Writes, _ any) error {
	time.Sleep(b.delay)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls++; b.calls == b.failCall {
		return b.failErr
	}
	for _, c := range checks {
		if b.stamps[slotKey{c.Table, string(c.Key)}] != c.Stamp {
			return ErrConflict
		}
	}
	b.commits++
	for _, d := range w.Delete {
		k := slotKey{d.Table, string(d.Key)}
		delete(b.items, k)
		b.stamp++
		b.stamps[k] = 0
	}
	for _, p := range w.Put {
		k := slotKey{p.Table, string(p.Key)}
		b.items[k] = p.Item
		b.stamp++
		b.stamps[k] = b.stamp
	}
	return nil
}

func (b *stampBackend) Get(_ context.Context, s Slot) (engine.Item, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.items[slotKey{s.Table, string(s.Key)}]
	return it, ok, nil
}

func (b *stampBackend) Close() error { return nil }

// Scan implements engine.Scanner, for the collection ops' range reads.
func (b *stampBackend) Scan(_ context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	b.mu.Lock()
	var keys []string
	for k := range b.items {
		if it := b.items[k]; k.table == table && r.Contains([]byte(k.key)) && it.Live(now) {
			keys = append(keys, k.key)
		}
	}
	sort.Strings(keys)
	items := make([]engine.Item, len(keys))
	for i, k := range keys {
		items[i] = b.items[slotKey{table, k}]
	}
	b.mu.Unlock()
	for i, k := range keys {
		if !fn([]byte(k), items[i]) {
			break
		}
	}
	return nil
}

func incrBy(key string, d int64) engine.Mutation {
	return engine.Mutation{Op: engine.OpIncr, Table: "t", Key: []byte(key), Incr: engine.IncrArgs{Delta: d, Create: true}}
}

// Concurrent increments through two front ends over one datastore, each grouping its own callers: none is lost,
// and the groups did save commits (the test fails if grouping stops happening).
func TestGroupedIncrementsLoseNothing(t *testing.T) {
	b := newStampBackend()
	b.delay = 200 * time.Microsecond
	fronts := []*Engine{New(b), New(b)}
	for _, e := range fronts {
		e.GroupMuts = 8
		e.MaxAttempts = 1000
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(fronts))
	for f, e := range fronts {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					key := fmt.Sprint("k", (w+i)%3)
					res, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy(key, 1)}})
					if err == nil {
						err = res[0].Err
					}
					if err != nil {
						errs <- fmt.Errorf("front %d: %w", f, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum := 0
	for k := range 3 {
		it, _, _ := b.Get(context.Background(), Slot{"t", []byte(fmt.Sprint("k", k))})
		n, err := strconv.Atoi(string(it.Value))
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	if total := 2 * workers * each; sum != total {
		t.Fatalf("counters sum to %d after %d increments", sum, total)
	}
	if b.commits >= 2*workers*each*3/4 {
		t.Errorf("%d commits for %d increments: the calls were not grouped", b.commits, 2*workers*each)
	}
}

// queued starts calls of e.Apply for each batch, one after another, while the backend holds every Read, so that
// the first call's group reads alone and the others queue behind it; it then releases the backend and returns
// the outcomes in the order of the batches.
func queued(t *testing.T, e *Engine, b *stampBackend, batches ...*engine.Batch) ([][]engine.Result, []error) {
	t.Helper()
	// An earlier call's group may still be serving for a moment after that call returned (it goes back for
	// more before it stops); wait until it has stopped, or it could take the first call and the next together.
	for deadline := time.Now().Add(5 * time.Second); e.groupServing(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an earlier group never stopped serving")
		}
	}
	b.mu.Lock()
	b.hold = make(chan struct{})
	b.mu.Unlock()
	res, errs := make([][]engine.Result, len(batches)), make([]error, len(batches))
	var wg sync.WaitGroup
	for i, bt := range batches {
		wg.Add(1)
		go func() { defer wg.Done(); res[i], errs[i] = e.Apply(context.Background(), bt) }()
		// Wait until this call is queued (the first: taken by a group) before the next, to fix their order.
		for deadline := time.Now().Add(5 * time.Second); ; {
			g := e.groups.of(e, 0)
			g.mu.Lock()
			n := len(g.queue)
			g.mu.Unlock()
			if (i == 0 && e.groupTookAll()) || (i > 0 && n == i) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("call %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.mu.Lock()
	close(b.hold)
	b.hold = nil
	b.mu.Unlock()
	wg.Wait()
	return res, errs
}

// Batches of one group see what the earlier ones wrote, and share one commit; one batch's failure is its own.
func TestGroupBatchesSeeEarlierOnes(t *testing.T) {
	b := newStampBackend()
	e := New(b)
	e.GroupMuts = 64
	set := engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("10")}
	notNum := engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("s"), Value: []byte("x")}
	del := engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("k")}
	res, errs := queued(t, e, b,
		&engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("first", 1)}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{set, notNum}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("k", 5)}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("s", 1)}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{del, incrBy("k", 1)}},
	)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if got := string(res[2][0].New.Value); got != "15" {
		t.Errorf("INCR after a SET of the same group = %q, want 15", got)
	}
	if !errors.Is(res[3][0].Err, engine.ErrNotInteger) {
		t.Errorf("INCR of a group's non-number = %v, want ErrNotInteger", res[3][0].Err)
	}
	if got := string(res[4][1].New.Value); !res[4][0].OldFound || got != "1" {
		t.Errorf("DEL then INCR after the group's writes: %+v, %q", res[4][0], got)
	}
	if b.commits != 2 {
		t.Errorf("%d commits, want 2 (the first call's, then one for the four queued behind it)", b.commits)
	}
	it, _, _ := b.Get(context.Background(), Slot{"t", []byte("k")})
	if string(it.Value) != "1" {
		t.Errorf("k = %q after the group, want 1", it.Value)
	}
	seen := map[uint64]bool{}
	for _, it := range b.items {
		if seen[it.Version] {
			t.Errorf("version %d stored twice", it.Version)
		}
		seen[it.Version] = true
	}
}

// A range read of a table an earlier batch of the group wrote cannot be served from the datastore: the group is
// applied one batch at a time instead, and the read sees the member written before it.
func TestGroupFallsBackForRangeReads(t *testing.T) {
	b := newStampBackend()
	e := New(b)
	e.GroupMuts = 64
	e.Ranger = b
	hset := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte("v"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
	all := engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("h"), Coll: engine.CollArgs{Kind: engine.KindHash}}
	res, errs := queued(t, e, b,
		&engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("first", 1)}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{hset}},
		&engine.Batch{Now: 1, Muts: []engine.Mutation{all}},
	)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if m := res[2][0].Members; len(m) != 1 || string(m[0].Name) != "f" || string(m[0].Item.Value) != "v" {
		t.Errorf("HGETALL after the group's HSET = %+v", res[2][0])
	}
}

// A caller whose context ends while its batch waits in the queue leaves at once, and the batch is never applied.
func TestQueuedCallerLeaves(t *testing.T) {
	b := newStampBackend()
	e := New(b)
	e.GroupMuts = 64
	b.hold = make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("a", 1)}})
		first <- err
	}()
	// The first call in a group of its own, so that the next one queues (waiting only for a group in flight, a
	// shuffled run saw one group take both, held until the engine's timeout).
	for !e.groupTookAll() {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{incrBy("b", 1)}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call with an ended context = %v", err)
	}
	close(b.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Get(context.Background(), Slot{"t", []byte("b")}); ok {
		t.Error("the batch of a caller that left was applied")
	}
}

// groupServing: shard 0's group has a goroutine serving it.
func (e *Engine) groupServing() bool {
	g := e.groups.of(e, 0)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.serving
}

// groupTookAll reports whether a group is in flight and took every queued call.
func (e *Engine) groupTookAll() bool {
	g := e.groups.of(e, 0)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.serving && len(g.queue) == 0
}

// GroupBytes bounds the values a group carries: queued batches that would exceed it go to the next group.
func TestGroupBytesSplitsGroups(t *testing.T) {
	b := newStampBackend()
	e := New(b)
	e.GroupMuts, e.GroupBytes = 64, 20
	set := func(k string) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("12345678")}}}
	}
	_, errs := queued(t, e, b, set("a"), set("b"), set("c"), set("d"), set("e"))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	// a alone (it was read while the others queued), then b+c (16 bytes), then d+e.
	if b.commits != 3 {
		t.Errorf("%d commits, want 3", b.commits)
	}
}

// A batch of a group reading what an earlier batch of the group wrote gets its own copy: the earlier batch's
// caller reuses its buffers once Apply returned, while the later one may still be writing its reply (a pipelined
// GET on another connection answered bytes of the first connection's next commands).
func TestGroupReadsDoNotAliasOtherBatches(t *testing.T) {
	e := New(newStampBackend())
	e.GroupMuts = 8
	buf := []byte("from A")
	a := &waiter{ctx: context.Background(), b: &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: buf}}}}
	b := &waiter{ctx: context.Background(), b: &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpGet, Table: "t", Key: []byte("k")}}}}
	e.run(context.Background(), []*waiter{a, b})
	if a.err != nil || b.err != nil {
		t.Fatal(a.err, b.err)
	}
	copy(buf, "XXXXXX") // A's connection reads its next commands into its buffer
	if got := b.res[0].Old.Value; string(got) != "from A" {
		t.Fatalf("B's GET, once A reused its buffer: %q", got)
	}
}

// panicBackend panics in Read once armed: a datastore's reply the backend failed to decode.
type panicBackend struct {
	*stampBackend
	armed atomic.Bool
}

func (b *panicBackend) Read(ctx context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	if b.armed.Load() {
		var v []any
		_ = v[len(slots)] // index out of range, as decodeAll's on a short reply
	}
	return b.stampBackend.Read(ctx, slots, n)
}

// TestBackendPanicFailsTheBatchNotTheProcess: a panic of the backend, on a group's goroutine or the caller's,
// fails the batches with ErrInternal (and ErrUnknownOutcome: it may come after a commit was sent); the engine
// serves the next batches.
func TestBackendPanicFailsTheBatchNotTheProcess(t *testing.T) {
	b := &panicBackend{stampBackend: newStampBackend()}
	for _, group := range []int{0, 8} {
		e := New(b)
		e.GroupMuts = group
		b.armed.Store(true)
		_, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet,
			Table: "t", Key: []byte("k"), Value: []byte("v")}}})
		if !errors.Is(err, engine.ErrInternal) || !errors.Is(err, engine.ErrUnknownOutcome) {
			t.Errorf("group %d: a panicking backend answered %v", group, err)
		}
		b.armed.Store(false)
		if _, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet,
			Table: "t", Key: []byte("k"), Value: []byte("v")}}}); err != nil {
			t.Errorf("group %d: after the panic: %v", group, err)
		}
	}
}

// downBackend fails every call with errDown, a driver's "no connection" error, once down is set; with unreachable
// it says so (remote.Unreachable), as an adapter that knows its driver's errors does.
type downBackend struct {
	*stampBackend
	down atomic.Bool
}

var errDown = errors.New("driver: no hosts available in the pool")

func (b *downBackend) Read(ctx context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	if b.down.Load() {
		return nil, nil, false, nil, errDown
	}
	return b.stampBackend.Read(ctx, slots, n)
}

func (b *downBackend) Get(ctx context.Context, s Slot) (engine.Item, bool, error) {
	if b.down.Load() {
		return engine.Item{}, false, errDown
	}
	return b.stampBackend.Get(ctx, s)
}

type unreachableBackend struct{ *downBackend }

func (unreachableBackend) Unreachable(err error) bool { return errors.Is(err, errDown) }

// TestUnreachableIsUnavailable: an error the backend calls unreachable answers engine.ErrUnavailable (503, send
// again), for reads and for batches; a backend that cannot tell leaves the error as it is (500).
func TestUnreachableIsUnavailable(t *testing.T) {
	for _, tell := range []bool{false, true} {
		d := &downBackend{stampBackend: newStampBackend()}
		var b Backend = d
		if tell {
			b = unreachableBackend{d}
		}
		e := New(b)
		d.down.Store(true)
		_, getErr := e.Get(context.Background(), "t", []byte("k"), 1)
		_, applyErr := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet,
			Table: "t", Key: []byte("k"), Value: []byte("v")}}})
		for what, err := range map[string]error{"Get": getErr, "Apply": applyErr} {
			if !errors.Is(err, errDown) || errors.Is(err, engine.ErrUnavailable) != tell {
				t.Errorf("%s with Unreachable %v: %v (unavailable: %v)", what, tell, err, errors.Is(err, engine.ErrUnavailable))
			}
		}
	}
}

// cutAt4KiB is a grouping engine over a fresh stampBackend whose groups are cut at 4 KiB of writes.
func cutAt4KiB(t *testing.T) (*stampBackend, *Engine) {
	old := maxGroupWrites
	t.Cleanup(func() { maxGroupWrites = old })
	maxGroupWrites = 4 << 10
	b := newStampBackend()
	e := New(b)
	e.GroupMuts = 64
	return b, e
}

// TestGroupWritesBoundSplitsGroups: batches that hold a few bytes each but write far more (APPENDs to a big value,
// COPYs) are applied one at a time once a group's writes pass maxGroupWrites, every one of them applied in order,
// where one commit would have carried them all.
func TestGroupWritesBoundSplitsGroups(t *testing.T) {
	b, e := cutAt4KiB(t)
	base := strings.Repeat("v", 3<<10)
	if _, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("big"), Value: []byte(base)}}}); err != nil {
		t.Fatal(err)
	}
	app := func(c byte) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpAppend, Table: "t", Key: []byte("big"), Value: []byte{c}}}}
	}
	commits := b.commits
	_, errs := queued(t, e, b, app('a'), app('b'), app('c'), app('d'))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if it, _, _ := b.Get(context.Background(), Slot{"t", []byte("big")}); string(it.Value) != base+"abcd" {
		t.Fatalf("after the appends the value ends %q, want abcd", it.Value[len(base):])
	}
	// a alone (it was read while the others queued), then b, c and d: a group of the three is cut before the
	// write that would pass 4 KiB (3 KiB each), so each commits by itself.
	if n := b.commits - commits; n != 4 {
		t.Errorf("%d commits, want 4", n)
	}
}

// TestGroupCutFailureIsTheFirstBatchesOnly: when the commit of the batches before a cut fails for good (an unknown
// outcome), that is their answer alone: the batches after the cut were never sent, and are applied by a group of
// their own instead of being told their outcome is unknown.
func TestGroupCutFailureIsTheFirstBatchesOnly(t *testing.T) {
	b, e := cutAt4KiB(t)
	big := strings.Repeat("v", 3<<10)
	set := func(k string) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte(big)}}}
	}
	b.failCall, b.failErr = 2, fmt.Errorf("lost: %w", ErrUnknownOutcome) // the commit of b, cut before c
	_, errs := queued(t, e, b, set("a"), set("b"), set("c"), set("d"))
	if errs[0] != nil || !errors.Is(errs[1], ErrUnknownOutcome) {
		t.Fatalf("a: %v, b: %v; want nil and an unknown outcome", errs[0], errs[1])
	}
	for i, k := range []string{"c", "d"} {
		if errs[2+i] != nil {
			t.Fatalf("%s, after the cut: %v, want applied", k, errs[2+i])
		}
		if _, ok, _ := b.Get(context.Background(), Slot{"t", []byte(k)}); !ok {
			t.Fatalf("%s answered but not applied", k)
		}
	}
}
