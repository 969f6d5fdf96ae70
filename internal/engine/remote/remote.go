// Package remote is the one way every adapter to an external datastore (PostgreSQL, Redis, etcd, ...) stays
// correct: optimistic concurrency around engine.Resolve.
//
// Apply reads every key a batch may touch together with each key's datastore-side stamp (a value that changes on
// every write of the key, 0 when absent) and reserves fresh item versions from a counter kept in the datastore,
// in one round trip where the datastore allows it. It then runs engine.Resolve unchanged on what was read and
// asks the Backend to commit the resulting writes only if every key Resolve read still has the stamp it had,
// using the datastore's own atomic primitive (a PostgreSQL transaction, a Redis Lua script, an etcd Txn). A
// conflict means another front end wrote first: nothing was applied, so Apply retries from the read, with
// backoff. A commit whose outcome is unknown (the connection broke after the commit was sent) is returned as an
// error wrapping ErrUnknownOutcome and never retried, since it may have been applied.
//
// Backends differ only in layout and primitives; the semantics of every Mutation stay in engine.Resolve.
package remote

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"anykv/internal/engine"
)

// ErrConflict is what Backend.Commit returns when a checked stamp changed: nothing was applied.
var ErrConflict = errors.New("concurrent write: commit refused")

// ErrUnknownOutcome wraps a commit error after which the commit may or may not have been applied (timeout,
// connection lost after the commit was sent). Apply returns it to the client rather than retrying. It is
// engine.ErrUnknownOutcome, so that the layers above an engine (the read cache, the protocols' error texts)
// recognize it without knowing of remote engines.
var ErrUnknownOutcome = engine.ErrUnknownOutcome

// ErrRefused wraps a commit error by which the datastore refused the commit before applying any of it, for what
// the commit holds (MariaDB refusing a key longer than its key column): Apply then commits the batches of a group
// so refused one at a time, so that the batch that holds it fails by itself, not the others grouped with it.
var ErrRefused = errors.New("commit refused")

// ErrBadURL wraps an adapter's complaint about its URL (as opposed to a failure to reach the datastore).
var ErrBadURL = errors.New("bad URL")

// Slot names one item: a table and a key.
type Slot struct {
	Table string
	Key   []byte
}

// SlotID is a map key for the slot of table and key; the length prefix keeps a table from running into its keys.
func SlotID(table string, key []byte) string {
	return fmt.Sprintf("%d:%s%s", len(table), table, key)
}

// Stored is one item as a Backend read it. Stamp changes on every write of the key; 0 means absent.
type Stored struct {
	Item  engine.Item
	Found bool
	Stamp uint64
}

// Check asks Commit to verify that Slot still has Stamp (0: still absent).
type Check struct {
	Slot
	Stamp uint64
}

// RangeCheck is what a batch's read of a range of a client's table found (KEYS, SCAN, DBSIZE, RANDOMKEY in a
// script or MULTI): every stored key in [Start, End) (End nil: to the table's end), expired or not, with its item
// version, in key order.
type RangeCheck struct {
	Table      string
	Start, End []byte
	Keys       [][]byte
	Versions   []uint64
}

// RangeCommitter is a Backend whose commit also checks the ranges a batch read: CommitRanges is Commit that
// returns ErrConflict, applying nothing, unless each range still holds exactly its keys at their versions. A
// batch that decides its writes from a range (write only if DBSIZE is 0) is then serializable against the
// commits of other front ends that create or delete keys there; without it such ranges go unchecked (a known
// defect of those adapters, docs/engines.md). Collection members need no range check (see Engine.Ranger).
type RangeCommitter interface {
	CommitRanges(ctx context.Context, checks []Check, ranges []RangeCheck, w *Writes, token any) error
}

// Put stores Item at Slot.
type Put struct {
	Slot
	Item engine.Item
}

// Writes is the net effect of a batch's writes, to be applied in this order: FlushAll or the Flush tables
// first, then Delete, then Put. Every slot appears at most once, sorted by table then key; deletes in
// flushed tables are dropped (the flush already removed them).
type Writes struct {
	FlushAll bool
	Flush    []string
	Delete   []Slot
	Put      []Put
}

// Empty reports whether there is nothing to write.
func (w *Writes) Empty() bool {
	return !w.FlushAll && len(w.Flush) == 0 && len(w.Delete) == 0 && len(w.Put) == 0
}

// Backend is what a datastore adapter provides. All methods are safe for concurrent use.
type Backend interface {
	// Read returns the stored state of slots (aligned with slots) and n fresh item versions, increasing, taken
	// from a counter in the datastore. snapshot reports whether all items were read at one point in time;
	// when not, Apply validates the reads of a batch that writes nothing with a Commit of checks only.
	// token is handed back to Commit (e.g. the counter's own stamp).
	Read(ctx context.Context, slots []Slot, n int) (items []Stored, versions []uint64, snapshot bool, token any, err error)
	// Commit atomically applies w if every check holds, returning ErrConflict (nothing applied) if one does
	// not, and an error wrapping ErrUnknownOutcome if it cannot tell whether it applied.
	Commit(ctx context.Context, checks []Check, w *Writes, token any) error
	// Get returns the stored item at slot, expired or not.
	Get(ctx context.Context, s Slot) (engine.Item, bool, error)
	// Close releases connections.
	Close() error
}

// Unreachable is implemented by a Backend that can tell from its driver's error that the datastore could not be
// reached or could not serve the request now (no connection in the pool, a connection lost while reading, too few
// replicas alive): Engine then wraps the error with engine.ErrUnavailable, which the protocols answer as "send
// again" (HTTP 503), not as the server's own failure (500). It is never asked about a commit of unknown outcome.
type Unreachable interface {
	Unreachable(err error) bool
}

// unavailable wraps err with engine.ErrUnavailable when the backend says the datastore could not be reached.
func (e *Engine) unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnknownOutcome) || errors.Is(err, engine.ErrUnavailable) || errors.Is(err, ErrConflict) {
		return err
	}
	if u, ok := e.b.(Unreachable); ok && u.Unreachable(err) {
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	return err
}

// Engine is an engine.Engine over a Backend. Adapters embed it and add the optional abilities
// (engine.Scanner, ...) their datastore supports.
type Engine struct {
	b Backend
	// MaxAttempts bounds retries after conflicts (default 64); Apply then fails with ErrConflict.
	MaxAttempts int
	// Timeout bounds each attempt of a batch (its read and its commit) and each Get (default DefaultTimeout; <0:
	// none): a datastore that stops answering without closing the connection (a stopped process, a partition
	// that drops packets) then fails the request with an error instead of holding its client, and every batch
	// grouped with it, for as long as it stalls. A commit cut off so reports ErrUnknownOutcome. It also bounds
	// each round trip of the adapters' Scan, Tables and Sweep (RoundTrip), not those calls as a whole.
	Timeout time.Duration
	// Ranger, when the adapter can scan, serves the range reads of collection ops (engine.RangeReader). Such a
	// read needs no check of its own: every collection op reads the collection's meta item, whose stamp
	// changes with any change of a member, so the meta's check covers the members read.
	// A range of a client's table (KEYS, SCAN, DBSIZE, RANDOMKEY in a script or MULTI) has no such item: a
	// RangeCommitter checks it at commit; over other adapters it goes unchecked, a known defect
	// (docs/engines.md, TestScriptRangeReadsSerializable).
	Ranger engine.Scanner
	// SingleItem, when set, names an engine whose datastore changes one item atomically and no more (memcached):
	// Apply then refuses, applying nothing, every batch that reads or writes several items or flushes.
	SingleItem string
	// GroupMuts, when > 0, lets concurrent Apply calls share one read and one commit, up to this many mutations
	// in all (group.go). Adapters set it when their commit is atomic across any keys and has room for them.
	GroupMuts int
	// GroupBytes, when > 0, also bounds the values a group's mutations carry, in bytes (Cassandra refuses a
	// BATCH over 50 KiB by default); a batch bigger than that alone is still applied, alone.
	GroupBytes int
	// Shards, when > 1, spreads the namespace over that many shards, each with a commit of its own (shard.go):
	// a batch must stay in one, and Apply runs it under WithShard so that the Backend reads and commits there.
	// Set it before the first Apply.
	Shards int
	closed atomic.Bool
	groups groupers
}

// SingleItemBatches implements engine.ItemScoper: true when SingleItem names the engine.
func (e *Engine) SingleItemBatches() bool { return e.SingleItem != "" }

// tooWide is the error of a batch a SingleItem engine refuses.
func (e *Engine) tooWide(what string) error {
	return fmt.Errorf("%w: the %s engine applies a batch atomically only if it touches one item, and this batch %s "+
		"(MSET of several keys, MULTI/EXEC or WATCH over several keys, RENAME, COPY, hashes, sets, sorted sets, lists "+
		"and FLUSH need several; see docs/engines.md)", engine.ErrNotSupported, e.SingleItem, what)
}

// errSwap refuses a swap of two tables (SWAPDB). Resolve swaps by copying both tables inside the batch, which
// is atomic where one writer resolves every batch in turn (the embedded engines). Here the copy would be read
// by range scans the commit does not check, so a key another client created meanwhile could be lost.
var errSwap = fmt.Errorf("%w: SWAPDB is served over the embedded engine only (it copies both databases in one "+
	"batch; over a datastore a key written meanwhile could be lost; see docs/resp.md)", engine.ErrNotSupported)

// errClosed is what every call after Close returns.
var errClosed = fmt.Errorf("remote: %w", engine.ErrClosed)

// Open returns ErrClosed once Close was called; adapters call it first in their optional abilities.
func (e *Engine) Open() error {
	if e.closed.Load() {
		return errClosed
	}
	return nil
}

// New returns an Engine over b.
func New(b Backend) *Engine { return &Engine{b: b, MaxAttempts: 64, Timeout: DefaultTimeout} }

// DefaultTimeout is Engine.Timeout's default: long enough for a flush of a big table, short enough that a stalled
// datastore answers its clients with an error within the time they would wait.
const DefaultTimeout = 30 * time.Second

// SetTimeout sets Timeout (anykv serve --engine-timeout); call it before the first request.
func (e *Engine) SetTimeout(d time.Duration) { e.Timeout = d }

// bounded returns ctx with the engine's Timeout, if it has one.
func (e *Engine) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, e.Timeout)
}

// RoundTrip runs fn, one round trip to the datastore, under the engine's Timeout. Adapters send every request
// of their Scan, Tables and Sweep through it (each page of a scan, each query of a table list or a sweep; a
// request that streams its rows is bounded as a whole), so a stalled datastore fails those calls once Timeout
// passes, while a long scan whose every page answers in time runs as long as it needs. Once the bound has cut
// fn off, fn's answer, possibly partial, is dropped for an error: the caller's own (ctx.Err) if ctx ended,
// else one saying the datastore did not answer in time.
func (e *Engine) RoundTrip(ctx context.Context, fn func(context.Context) error) error {
	bctx, cancel := e.bounded(ctx)
	defer cancel()
	err := fn(bctx)
	// A client that sets the deadline on its socket (go-redis) may fail before the context's own timer fires.
	if d, ok := bctx.Deadline(); bctx.Err() != nil || ok && err != nil && !time.Now().Before(d) {
		return e.cutOff(ctx)
	}
	return err
}

// Call is RoundTrip for an fn that returns a value.
func Call[T any](ctx context.Context, e *Engine, fn func(context.Context) (T, error)) (T, error) {
	var v T
	err := e.RoundTrip(ctx, func(ctx context.Context) (err error) {
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// cutOff is the error of a request to the datastore cut off by the engine's Timeout or by parent, the caller's
// context: the caller's error if parent ended (the caller gave up, not the datastore), else the datastore's.
func (e *Engine) cutOff(parent context.Context) error {
	if err := parent.Err(); err != nil {
		return err
	}
	if d, ok := parent.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded // the caller's deadline, its timer not yet fired
	}
	return fmt.Errorf("remote: the datastore did not answer within %v: %w", e.Timeout, context.DeadlineExceeded)
}

var _ engine.Engine = (*Engine)(nil)

// Get implements engine.Engine.
func (e *Engine) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if err := e.Open(); err != nil {
		return engine.Item{}, err
	}
	ctx, cancel := e.bounded(ctx)
	defer cancel()
	it, ok, err := e.b.Get(ctx, Slot{table, key})
	if err != nil {
		return engine.Item{}, e.unavailable(err)
	}
	if !ok || !it.Live(now) {
		return engine.Item{}, engine.ErrNotFound
	}
	if it.Value == nil {
		it.Value = []byte{}
	}
	return it, nil
}

// Close implements engine.Engine; a second Close returns nil.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.b.Close()
}

// Apply implements engine.Engine: read, Resolve, conditional commit, retried on conflict. With GroupMuts set,
// concurrent calls share one read and one commit (group.go).
func (e *Engine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if err := e.Open(); err != nil {
		return nil, err
	}
	if c, ok := engine.ConsistencyOf(ctx); ok && c != engine.Linearizable {
		// A batch's reads decide its outcome (and Ranger's scans read members): always linearizable.
		ctx = engine.WithConsistency(ctx, engine.Linearizable)
	}
	for i := range b.Muts {
		if b.Muts[i].Op == engine.OpSwap {
			return nil, errSwap
		}
	}
	if e.SingleItem != "" {
		for i := range b.Muts {
			if b.Muts[i].Op == engine.OpFlush {
				return nil, e.tooWide("flushes a table")
			}
		}
		if n := len(touched(b)); n > 1 {
			return nil, e.tooWide(fmt.Sprintf("touches %d", n))
		}
	}
	if e.Shards > 1 {
		return e.applySharded(ctx, b)
	}
	w := &waiter{ctx: ctx, b: b}
	if e.GroupMuts > 0 && len(b.Muts) <= e.GroupMuts && groupable(b) {
		return e.enqueue(w, 0)
	}
	e.run(ctx, []*waiter{w})
	return w.res, w.err
}

// maxGroupWrites bounds the bytes of keys and values a group's batches write together: the group commits the
// batches before the one that would pass it, and the rest go as a group of their own (try, run). GroupMuts and
// GroupBytes bound what the batches hold, not what they write: 30 clients' COPY of a 60 MiB string at once made
// one Redis commit script of 1.8 GB, which Redis cut off, and 29 of them got an unknown outcome; with this bound
// all 30 succeed in 8.8 s. 64 MiB, pebblestore's bound, made such groups slower here (a read and a round trip per
// two copies: 6.0 s against 3.6 s for 30 copies of 30 MiB, 4.5 s at 256 MiB). A variable for tests.
var maxGroupWrites = 256 << 20

// run applies the batches of ws as one read and one commit, retried from the read on conflict, and leaves each
// batch's results and error in its waiter. A failure of the read or the commit is every batch's error.
func (e *Engine) run(ctx context.Context, ws []*waiter) {
	var slots []Slot
	seen := map[slotKey]bool{}
	n := 0
	for _, w := range ws {
		for _, s := range touched(w.b) {
			if sk := (slotKey{s.Table, string(s.Key)}); !seen[sk] {
				seen[sk] = true
				slots = append(slots, s)
			}
		}
		for i := range w.b.Muts {
			if w.b.Muts[i].Writes() {
				n++
			}
		}
	}
	fail := func(err error) {
		for _, w := range ws {
			w.res, w.err = nil, err
		}
	}
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err := e.attempt(ctx, ws, slots, n)
		var cut cutAt
		switch {
		case err == nil:
			return
		case errors.As(err, &cut):
			// The first batches committed, or failed by themselves (cut.err); the rest go as a group of their own.
			if cut.err != nil {
				for _, w := range ws[:cut.n] {
					w.res, w.err = nil, e.unavailable(cut.err)
				}
			}
			e.run(ctx, ws[cut.n:])
			return
		case errors.Is(err, errSolo) || len(ws) > 1 && (errors.Is(err, engine.ErrCrossSlot) ||
			errors.Is(err, engine.ErrBatchTooBig) || errors.Is(err, engine.ErrInvalid) || errors.Is(err, ErrRefused)):
			// A batch of the group needs a view the group cannot give, reached into another shard (a script's
			// undeclared key), the group together is more than the datastore takes in one commit (etcd's
			// operations, MariaDB's max_allowed_packet), or the datastore refused what one batch holds (a key too
			// long for MariaDB's column or PostgreSQL's index, ErrInvalid; another refusal, ErrRefused): one at a
			// time, so that a batch fails only by itself.
			for _, w := range ws {
				e.run(ctx, []*waiter{w})
			}
			return
		case !errors.Is(err, ErrConflict):
			fail(e.unavailable(err))
			return
		case attempt >= e.MaxAttempts:
			fail(fmt.Errorf("remote: gave up after %d attempts: %w", attempt, err))
			return
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			fail(ctx.Err())
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// attempt reads slots (and n versions) once, resolves the batches of ws in order, each seeing what the earlier
// ones wrote, and commits their writes together, checked against the stamps read. It returns the error of the
// read or the commit; each batch's own outcome is left in its waiter.
//
// A panic of the backend (a datastore's reply it failed to decode) fails the batches with an error wrapping
// engine.ErrInternal and ErrUnknownOutcome (it may have come after the commit was sent) rather than end the
// process: a group runs on a goroutine of its own, where nothing else would recover it.
func (e *Engine) attempt(parent context.Context, ws []*waiter, slots []Slot, n int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("remote: %w (%w): %v", engine.ErrInternal, ErrUnknownOutcome, p)
		}
	}()
	ctx, cancel := e.bounded(parent)
	defer cancel()
	err = e.try(ctx, ws, slots, n)
	if errors.Is(err, ErrConflict) && ctx.Err() != nil { // a request cut off before it was sent: not retried
		return e.cutOff(parent)
	}
	return err
}

// try is one attempt, within attempt's time bound.
func (e *Engine) try(ctx context.Context, ws []*waiter, slots []Slot, n int) error {
	var (
		items    []Stored
		versions []uint64
		snapshot = true
		token    any
	)
	if len(slots) > 0 || n > 0 {
		var err error
		items, versions, snapshot, token, err = e.b.Read(ctx, slots, n)
		if err != nil {
			return err
		}
	}
	r := &reader{ctx: ctx, b: e.b, ranger: e.Ranger, items: make(map[slotKey]int, len(slots)), slots: slots, stored: items}
	for i, s := range slots {
		r.items[slotKey{s.Table, string(s.Key)}] = i
	}
	used := 0
	next := func() uint64 {
		if used >= len(versions) && r.err == nil { // a collection op needs more: reserve another few
			// Ask for all so far plus 16 and keep the last 16: a backend that hands out the counter's next
			// values and advances it only at commit (etcd, Cassandra) returns the ones already used first.
			var more []uint64
			_, more, _, _, r.err = e.b.Read(ctx, nil, len(versions)+16)
			if r.err == nil && len(more) == len(versions)+16 {
				versions = append(versions, more[len(versions):]...)
			}
		}
		used++
		if used > len(versions) {
			return 0
		}
		return versions[used-1]
	}
	var all []engine.Write
	size, cut := 0, 0
	for i, w := range ws {
		writes, results, rerr := engine.Resolve(r, w.b, next)
		if r.err != nil {
			return r.err
		}
		for j := range writes {
			size += len(writes[j].Key) + len(writes[j].Item.Value)
		}
		if size > maxGroupWrites && i > 0 {
			// The group ends before this batch: the ones before commit now, it and the rest in a group of their
			// own (run). What it read stays among the checks, which only makes the commit stricter.
			cut = i
			break
		}
		w.res, w.err = results, rerr // on an error (an abort included) Resolve wrote nothing
		all = append(all, writes...)
		if len(ws) > 1 {
			r.remember(writes)
		}
	}
	if used > len(versions) {
		return fmt.Errorf("remote: batch needed %d versions, %d reserved", used, len(versions))
	}
	err := e.commit(ctx, r, all, snapshot, token)
	switch {
	case cut == 0:
		return err
	case errors.Is(err, ErrConflict) || errors.Is(err, errSolo) || errors.Is(err, engine.ErrCrossSlot) ||
		errors.Is(err, engine.ErrBatchTooBig) || errors.Is(err, engine.ErrInvalid) || errors.Is(err, ErrRefused):
		return err // nothing applied: run retries the group, or runs it one batch at a time
	}
	// Committed, or failed for good (an unknown outcome, an unreachable datastore): that is the first batches'
	// answer only, the rest were never sent.
	return cutAt{n: cut, err: err}
}

// cutAt is try's answer when it committed only the group's first n batches (maxGroupWrites), or when that commit
// failed with err: run answers those and applies the rest.
type cutAt struct {
	n   int
	err error
}

func (c cutAt) Error() string {
	return fmt.Sprintf("remote: group cut after %d batches (%v)", c.n, c.err)
}

// commit is try's end: it commits the writes of the batches resolved with r, checked against what they read.
func (e *Engine) commit(ctx context.Context, r *reader, all []engine.Write, snapshot bool, token any) error {
	w := Net(all)
	if e.SingleItem != "" {
		if n := itemsTouched(r.checks, &w); n > 1 {
			return e.tooWide(fmt.Sprintf("touches %d", n))
		}
	}
	if w.Empty() {
		// Nothing to write: the results stand if the reads were one snapshot; else check they still hold
		// together (the stamps are validated by an empty commit). Ranges are not: a read-only batch's range
		// reads (MULTI of KEYS and DBSIZE) may each see another moment when another front end writes the table
		// meanwhile, where checking them would have such a batch retry for as long as the table keeps changing
		// (a scan of many keys rarely fits between two writes of a busy table; docs/engines.md).
		if (!snapshot || r.late) && len(r.checks) > 0 {
			return e.b.Commit(ctx, r.checks, &w, token)
		}
		return nil
	}
	if rc, ok := e.b.(RangeCommitter); ok && len(r.ranges) > 0 {
		return rc.CommitRanges(ctx, r.checks, r.ranges, &w, token)
	}
	return e.b.Commit(ctx, r.checks, &w, token)
}

type slotKey struct{ table, key string }

// itemsTouched counts the distinct items a commit of checks and w would check or change; a flush counts as many.
func itemsTouched(checks []Check, w *Writes) int {
	if w.FlushAll || len(w.Flush) > 0 {
		return math.MaxInt
	}
	seen := map[slotKey]bool{}
	for _, c := range checks {
		seen[slotKey{c.Table, string(c.Key)}] = true
	}
	for _, d := range w.Delete {
		seen[slotKey{d.Table, string(d.Key)}] = true
	}
	for _, p := range w.Put {
		seen[slotKey{p.Table, string(p.Key)}] = true
	}
	return len(seen)
}

// reader serves Resolve from what Read returned and records the stamps of what Resolve looked at. A key Resolve
// reads that was not fetched ahead (a collection's member, a key a function reads) is fetched on the spot.
type reader struct {
	ctx    context.Context
	b      Backend
	ranger engine.Scanner
	err    error // a failed fetch on the spot: the attempt fails with it
	late   bool  // something was read after the first round trip: the reads are no single snapshot
	items  map[slotKey]int
	slots  []Slot
	stored []Stored
	seen   map[slotKey]bool
	checks []Check
	ranges []RangeCheck // ranges of clients' tables read, when the backend can check them (RangeCommitter)
	// overlay holds what earlier batches of a group wrote (nil for a batch alone): a later batch reads it instead
	// of the datastore, with no check of its own, since the group's commit writes it anyway.
	overlay  map[slotKey]engine.Write
	ovTables map[string]bool
}

// remember adds a resolved batch's writes to the overlay.
func (r *reader) remember(ws []engine.Write) {
	if r.overlay == nil {
		r.overlay, r.ovTables = map[slotKey]engine.Write{}, map[string]bool{}
	}
	for _, w := range ws {
		r.overlay[slotKey{w.Table, string(w.Key)}] = w
		r.ovTables[w.Table] = true
	}
}

func (r *reader) Read(table string, key []byte) (engine.Item, bool, error) {
	k := slotKey{table, string(key)}
	if w, ok := r.overlay[k]; ok {
		// A copy: the value may be another caller's batch slice (its SET's Value), which that caller reuses
		// once its Apply returned, while this batch's result (a GET's reply) may still be waiting to be written.
		it := w.Item
		it.Value = append([]byte(nil), it.Value...)
		return it, !w.Delete, nil
	}
	i, ok := r.items[k]
	if !ok {
		got, _, _, _, err := r.b.Read(r.ctx, []Slot{{table, key}}, 0)
		if err != nil {
			r.err = err
			return engine.Item{}, false, err
		}
		if len(got) != 1 {
			return engine.Item{}, false, fmt.Errorf("remote: read of %q/%q returned %d items", table, key, len(got))
		}
		i = len(r.stored)
		r.late = true
		r.stored = append(r.stored, got[0])
		r.slots = append(r.slots, Slot{table, append([]byte(nil), key...)})
		r.items[k] = i
	}
	if !r.seen[k] {
		if r.seen == nil {
			r.seen = make(map[slotKey]bool)
		}
		r.seen[k] = true
		r.checks = append(r.checks, Check{Slot: r.slots[i], Stamp: r.stored[i].Stamp})
	}
	return r.stored[i].Item, r.stored[i].Found, nil
}

// touched lists the distinct slots Resolve may read for b: every mutation's key except blind sets and flushes,
// and the targets of renames and copies.
func touched(b *engine.Batch) []Slot {
	seen := make(map[slotKey]bool, len(b.Muts))
	var out []Slot
	add := func(t string, k []byte) {
		sk := slotKey{t, string(k)}
		if !seen[sk] {
			seen[sk] = true
			out = append(out, Slot{t, k})
		}
	}
	for i := range b.Muts {
		m := &b.Muts[i]
		switch {
		case m.Op == engine.OpFlush:
		case m.Op == engine.OpSet && m.Set.Blind && m.Cond == engine.CondNone && !m.Set.KeepTTL:
		default:
			add(m.Table, m.Key)
			if m.Target.Table != "" {
				add(m.Target.Table, m.Target.Key)
			}
			for _, k := range m.Call.Keys {
				add(m.Table, k)
			}
		}
	}
	return out
}

// Net reduces Resolve's ordered writes to their net effect (see Writes).
func Net(ws []engine.Write) Writes {
	var out Writes
	flushed := map[string]bool{}
	pending := map[slotKey]*engine.Write{}
	for i := range ws {
		w := &ws[i]
		switch {
		case w.Flush && w.Table == "":
			out.FlushAll = true
			clear(flushed)
			clear(pending)
		case w.Flush:
			flushed[w.Table] = true
			for k := range pending {
				if k.table == w.Table {
					delete(pending, k)
				}
			}
		default:
			pending[slotKey{w.Table, string(w.Key)}] = w
		}
	}
	if !out.FlushAll {
		for t := range flushed {
			out.Flush = append(out.Flush, t)
		}
		sort.Strings(out.Flush)
	}
	keys := make([]slotKey, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].table != keys[j].table {
			return keys[i].table < keys[j].table
		}
		return keys[i].key < keys[j].key
	})
	for _, k := range keys {
		w := pending[k]
		s := Slot{w.Table, w.Key}
		switch {
		case !w.Delete:
			out.Put = append(out.Put, Put{Slot: s, Item: w.Item})
		case !out.FlushAll && !flushed[w.Table]:
			out.Delete = append(out.Delete, s)
		}
	}
	return out
}

// Range implements engine.RangeReader with the adapter's scan (see Engine.Ranger).
func (r *reader) Range(table string, rg engine.Range, fn func([]byte, engine.Item) bool) error {
	if r.ranger == nil {
		return fmt.Errorf("%w: this engine cannot read ranges of members", engine.ErrNotSupported)
	}
	if r.ovTables[table] {
		r.err = errSolo // the scan would miss what earlier batches of the group wrote
		return r.err
	}
	r.late = true
	var rc *RangeCheck
	if _, ok := r.b.(RangeCommitter); ok && !engine.IsInternalTable(table) {
		r.ranges = append(r.ranges, RangeCheck{Table: table, Start: rg.Start, End: rg.End})
		rc = &r.ranges[len(r.ranges)-1]
	}
	return r.ranger.Scan(r.ctx, table, rg, math.MinInt64, func(k []byte, it engine.Item) bool {
		it.Value = append([]byte(nil), it.Value...)
		k = append([]byte(nil), k...)
		if rc != nil {
			rc.Keys, rc.Versions = append(rc.Keys, k), append(rc.Versions, it.Version)
		}
		if !fn(k, it) {
			if rc != nil { // the read stopped at k: what it covered ends there
				rc.End = append(k[:len(k):len(k)], 0)
			}
			return false
		}
		return true
	})
}

// PackFlags folds an item's kind into its flags for datastores that keep one integer column for them: the low
// 32 bits are the client flags, the next 8 the kind (0 for strings, so items stored before kinds read alike).
func PackFlags(it engine.Item) uint64 { return uint64(it.Flags) | uint64(it.Kind)<<32 }

// UnpackFlags sets it.Flags and it.Kind from a packed value.
func UnpackFlags(v uint64, it *engine.Item) {
	it.Flags, it.Kind = uint32(v), engine.Kind(v>>32)
}
