// Package kv is the protocol-neutral command layer between the protocols and an engine: it enforces limits,
// stamps every batch with the time, pages through scans, counts, keeps statistics and sweeps expired items.
// Protocols build engine.Mutations (every write is one) and translate results into their own replies.
package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/cache"
	"anykv/internal/engine"
)

// Limits bound what one request may store. Zero fields take the defaults.
type Limits struct {
	MaxKey   int // bytes in a key (default 64 KiB)
	MaxValue int // bytes in a value, also after APPEND/SETRANGE (default 64 MiB)
	MaxBatch int // mutations in one batch (default 1<<20)
}

// Default limits.
const (
	DefaultMaxKey   = 64 << 10
	DefaultMaxValue = 64 << 20
	DefaultMaxBatch = 1 << 20
	// MaxTable bounds the name of a table written to: only HTTP clients name tables, in the URL, and the name is
	// part of every stored key of the table (without a bound a name of up to a MiB would slip past the key limit).
	MaxTable = 255
)

// Errors of the command layer itself, beside engine's sentinels.
var (
	ErrKeyTooLarge   = errors.New("key too large")
	ErrValueTooLarge = errors.New("value too large")
	ErrBatchTooLarge = errors.New("too many mutations in one batch")
	ErrEmptyTable    = errors.New("empty table name")
	// ErrReservedTable: table names starting with a zero byte belong to the engine (collections' members).
	ErrReservedTable = errors.New("table names starting with a zero byte are reserved")
	ErrTableTooLong  = errors.New("table name too long")
)

// checkTable refuses the engine's own tables to clients.
func checkTable(table string) error {
	if engine.IsInternalTable(table) {
		return ErrReservedTable
	}
	return nil
}

// checkNewTable refuses a write that would store an item in a table named with more than MaxTable bytes. Reads,
// deletes and flushes of such a table (made before the bound) still work, so its data can be taken out.
func checkNewTable(m *engine.Mutation) error {
	if !m.Writes() || m.Op == engine.OpDelete || m.Op == engine.OpFlush {
		return nil
	}
	for _, t := range []string{m.Table, m.Target.Table} {
		if len(t) > MaxTable {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrTableTooLong, len(t), MaxTable)
		}
	}
	return nil
}

// Options configure a Store.
type Options struct {
	Limits Limits
	// Clock returns the current time; nil means time.Now. Tests pass a fake.
	Clock func() time.Time
	// SweepInterval is how often the background sweeper runs (0: 100ms; negative: never).
	SweepInterval time.Duration
	// Logger receives the sweeper's failures (once when sweeping starts to fail, once when it recovers); nil
	// discards them.
	Logger *slog.Logger
	// QueryCacheBytes bounds the cache of query answers (pages of scans, counts); 0 means none. It is correct only
	// while every write of the engine's data goes through this Store: no other process may write the datastore.
	QueryCacheBytes int64
	// Consistency is the read level of requests that ask for none (engine.WithConsistency); the caller checks it
	// with engine.CheckConsistency first. EngineName names the engine in the refusal of a level it cannot serve.
	Consistency engine.Consistency
	EngineName  string
}

// Store is the command layer over one engine. Safe for concurrent use.
type Store struct {
	eng    engine.Engine
	limits Limits
	// pipelineBatch is PipelineBatch: limits.MaxBatch, or the engine's BatchHint if lower.
	pipelineBatch int
	clock         func() time.Time
	nowFn         func() int64 // Now, made once: a batch's Clock (a method value made per batch would allocate)
	log           *slog.Logger
	stats         counters
	// functionsMu orders the writes of the function libraries (SetFunctions) with a flush of every table, which
	// reads them and writes them back: a library written in between would be undone.
	functionsMu sync.Mutex

	stop     chan struct{}
	stopOnce sync.Once
	swept    sync.WaitGroup
	reclaim  reclaimer // the sweeper's position among collections' members (sweep goroutine only)
	queries  *cache.Queries[answer]
	watches  watchRegistry // keys WATCHed by Redis clients (watch.go)
	expired  atomic.Pointer[func(table string, key []byte)]
	written  atomic.Pointer[func(muts []engine.Mutation, res []engine.Result)] // OnWrites
	applied  atomic.Pointer[AppliedFunc]                                       // OnApplied
	levels   levels
	name     string // the engine, as errors name it (Options.EngineName; "this engine" when unset)
}

// counters are the store-wide statistics every protocol reports from.
type counters struct {
	gets, hits, misses, batches, mutations, expiredSwept, membersReclaimed atomic.Int64
}

// New returns a Store over e and starts its sweeper if e is an engine.Sweeper.
func New(e engine.Engine, opts Options) *Store {
	l := opts.Limits
	if l.MaxKey <= 0 {
		l.MaxKey = DefaultMaxKey
	}
	if l.MaxValue <= 0 {
		l.MaxValue = DefaultMaxValue
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = DefaultMaxBatch
	}
	s := &Store{eng: e, limits: l, clock: opts.Clock, log: opts.Logger, stop: make(chan struct{})}
	if e != nil { // a store without an engine (a script's, which only compiles commands) asks no queries
		s.queries = cache.NewQueries[answer](opts.QueryCacheBytes) // 36 KiB of marks, zeroed for every script before
	}
	s.levels = newLevels(e, opts.EngineName, opts.Consistency)
	s.pipelineBatch = l.MaxBatch
	if h := engine.BatchHintOf(e); h > 0 {
		s.pipelineBatch = min(h, l.MaxBatch)
	}
	s.name = opts.EngineName
	if s.name == "" {
		s.name = "this engine"
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.nowFn = s.Now
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	_, canSweep := e.(engine.Sweeper)
	if a := engine.AbilitiesOf(e); (canSweep || a&(engine.CanScan|engine.CanTables) == engine.CanScan|engine.CanTables) &&
		opts.SweepInterval >= 0 {
		every := opts.SweepInterval
		if every == 0 {
			every = 100 * time.Millisecond
		}
		s.swept.Add(1)
		go s.sweep(every)
	}
	return s
}

// Abilities reports the optional abilities of the engine beneath (what INFO and docs/engines.md call them).
func (s *Store) Abilities() engine.Ability { return engine.AbilitiesOf(s.eng) }

// SingleItem reports whether the engine applies batches of one item only (engine.ItemScoper): protocols then run
// each pipelined command as a batch of its own rather than merging them.
func (s *Store) SingleItem() bool { return engine.SingleItemOnly(s.eng) }

// CommandPerBatch reports whether protocols must run each pipelined command as a batch of its own: the engine
// takes one item per batch (SingleItem), or one slot of several (engine.SlotScoped), where merging independent
// commands on keys of different slots would make the engine refuse them.
func (s *Store) CommandPerBatch() bool { return s.SingleItem() || engine.SlotsOf(s.eng) > 1 }

// PipelineBatch is the most mutations a protocol should gather from a pipeline into one batch: Limits.MaxBatch,
// or less if the engine applies smaller batches best (engine.BatchHinter).
func (s *Store) PipelineBatch() int { return s.pipelineBatch }

// DefaultTable is the table every protocol shares by default: RESP database 0, memcached, and the HTTP Active
// Cloud DB routes.
const DefaultTable = "default"

// healthKey is a key no client can write (clients' keys never reach the engine in a table named so).
var healthKey = []byte("\x00anykv-healthz")

// Health reports whether the engine answers reads: nil, or the engine's error (ErrClosed once closing, an I/O
// error, a lost connection to a remote datastore). It reads one key that never exists, outside the statistics.
func (s *Store) Health(ctx context.Context) error {
	_, err := s.eng.Get(ctx, "\x00health", healthKey, s.Now())
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return nil
}

// Limits returns the limits in force.
func (s *Store) Limits() Limits { return s.limits }

// Now returns the current time in unix milliseconds, the unit of every expiry.
func (s *Store) Now() int64 { return s.clock().UnixMilli() }

// Time returns the current time from the store's clock.
func (s *Store) Time() time.Time { return s.clock() }

// CheckKey returns ErrKeyTooLarge for a key over the limit.
func (s *Store) CheckKey(key []byte) error {
	if len(key) > s.limits.MaxKey {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), s.limits.MaxKey)
	}
	return nil
}

// Get returns the live string at table/key, engine.ErrNotFound, or engine.ErrWrongType if a collection is
// stored there (memcached and HTTP see strings only; the Redis protocol reads collections with member ops).
func (s *Store) Get(ctx context.Context, table string, key []byte) (engine.Item, error) {
	return s.GetAt(ctx, table, key, s.Now())
}

// View is Get whose Value the caller must not modify (see ViewAt).
func (s *Store) View(ctx context.Context, table string, key []byte) (engine.Item, error) {
	return s.ViewAt(ctx, table, key, s.Now())
}

// GetAt is Get judged at now (unix ms, from Now): a batch of reads takes the clock once.
func (s *Store) GetAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := s.GetAnyAt(ctx, table, key, now)
	if err == nil && it.Kind != engine.KindString {
		return engine.Item{}, fmt.Errorf("%w: %s", engine.ErrWrongType, it.Kind)
	}
	return it, err
}

// GetAnyAt returns the live item of any kind at table/key (a collection's meta item for a hash or a set).
func (s *Store) GetAnyAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return s.read(ctx, table, key, now, false, true)
}

// PeekAnyAt is ViewAnyAt without counting in the hit and miss statistics: WATCH's reads of what it watches,
// which Redis does not count as lookups (INFO keyspace_hits and keyspace_misses).
func (s *Store) PeekAnyAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return s.read(ctx, table, key, now, true, false)
}

// ViewAt is GetAt whose Value the caller must not modify (engine.Viewer): readers that format it into a reply
// and drop it save a copy.
func (s *Store) ViewAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := s.read(ctx, table, key, now, true, true)
	if err == nil && it.Kind != engine.KindString {
		return engine.Item{}, fmt.Errorf("%w: %s", engine.ErrWrongType, it.Kind)
	}
	return it, err
}

// ViewAnyAt is GetAnyAt whose Value the caller must not modify (engine.Viewer).
func (s *Store) ViewAnyAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return s.read(ctx, table, key, now, true, true)
}

func (s *Store) read(ctx context.Context, table string, key []byte, now int64, view, count bool) (engine.Item, error) {
	if err := checkTable(table); err != nil {
		return engine.Item{}, err
	}
	ctx, err := s.levels.read(ctx)
	if err != nil {
		return engine.Item{}, err
	}
	var it engine.Item
	if view {
		it, err = engine.ViewOf(s.eng, ctx, table, key, now)
	} else {
		it, err = s.eng.Get(ctx, table, key, now)
	}
	if !count {
		return it, err
	}
	s.stats.gets.Add(1)
	switch {
	case err == nil:
		s.stats.hits.Add(1)
	case errors.Is(err, engine.ErrNotFound):
		s.stats.misses.Add(1)
	}
	return it, err
}

// Apply validates the mutations against the limits and applies them atomically at the current time. Values in
// the results must not be modified. A batch with an invalid mutation is rejected whole, before the engine sees it.
// Apply bounds MaxSize of the size-growing ops (APPEND, PREPEND, SETRANGE) in muts by the value limit, in place.
func (s *Store) Apply(ctx context.Context, muts []engine.Mutation) ([]engine.Result, error) {
	if err := s.check(muts); err != nil {
		return nil, err
	}
	var res []engine.Result
	var err error
	r := &s.watches
	// Counted before the check: a WATCH that begins after it knows this write may mark nothing (watch.go).
	r.unmarked.Add(1)
	if r.active.Load() > 0 { // somebody WATCHes keys: mark what this batch writes (watch.go)
		r.unmarked.Add(-1)
		res, err = s.applyMarking(ctx, muts)
	} else {
		res, err = s.apply(ctx, muts)
		r.unmarked.Add(-1)
	}
	if fn := s.written.Load(); fn != nil && err == nil && ctx.Value(notifiedKey{}) == nil {
		(*fn)(muts, res)
	}
	switch {
	case err == nil:
		s.tellApplied(ctx, muts, res)
	case errors.Is(err, engine.ErrUnknownOutcome):
		s.tellDoubted(ctx, muts)
	}
	return res, err
}

// AppliedFunc hears of a batch Apply or ApplyWatched applied: the caller's context, the batch and its results.
type AppliedFunc func(ctx context.Context, muts []engine.Mutation, res []engine.Result)

// OnApplied makes Apply and ApplyWatched call fn with every batch they applied, from any protocol, and with
// every batch of unknown outcome (tellDoubted: res nil), before they return, until OnApplied(nil): Redis's
// client-side caching sets it while a client tracks keys, to send the invalidations of the keys written.
// Without it a batch costs one atomic load more. fn must not block and must not change muts or res.
func (s *Store) OnApplied(fn AppliedFunc) {
	if fn == nil {
		s.applied.Store(nil)
		return
	}
	s.applied.Store(&fn)
}

// tellDoubted tells OnApplied's function, if any, of a batch whose outcome is unknown (engine.ErrUnknownOutcome:
// a remote datastore's commit ran but its answer was lost): it may have been applied, so the keys it may have
// written are told as written (no results: kv.EachWritten counts every write), and every key, as by a flush, if
// it held a call that may write keys it does not name (a script), since which it wrote is not known. Without
// this a client tracking a key (client-side caching) kept the value from before a write that did change it.
// A commit that lands only after this (still in flight at the datastore) is not covered.
func (s *Store) tellDoubted(ctx context.Context, muts []engine.Mutation) {
	if s.applied.Load() == nil {
		return
	}
	for i := range muts {
		if m := &muts[i]; m.Op == engine.OpCall && m.Call.AnyKey && m.Writes() {
			muts = []engine.Mutation{{Op: engine.OpFlush}}
			break
		}
	}
	s.tellApplied(ctx, muts, nil)
}

// tellApplied calls OnApplied's function, if any. It is loaded once the batch was applied, not before: a reader
// that registered for a key before it read the key and saw its old value had its function set before that (see
// protocol/redis's tracking), so the batch that wrote the key, done after that read, finds the function.
func (s *Store) tellApplied(ctx context.Context, muts []engine.Mutation, res []engine.Result) {
	if fn := s.applied.Load(); fn != nil {
		(*fn)(ctx, muts, res)
	}
}

// reserveKey carries a context's Reserving function.
type reserveKey struct{}

// Reserving returns ctx carrying fn as the Reserve of the batches Apply makes under it (engine.Batch.Reserve): a
// connection accounts there what its batches' reads hold until their replies are written.
func Reserving(ctx context.Context, fn func(held int) error) context.Context {
	return context.WithValue(ctx, reserveKey{}, fn)
}

// reserveOf is ctx's Reserving function, or nil.
func reserveOf(ctx context.Context) func(int) error {
	fn, _ := ctx.Value(reserveKey{}).(func(int) error)
	return fn
}

// notifiedKey marks a context of Notified.
type notifiedKey struct{}

// Notified returns ctx marked as the context of a caller that sends the keyspace events of its writes itself
// (RESP's commands): Apply does not hand its batches to OnWrites.
func Notified(ctx context.Context) context.Context {
	return context.WithValue(ctx, notifiedKey{}, true)
}

// OnWrites makes Apply call fn with each batch it applied, once durable, and its results, unless the caller's
// context is Notified: RESP's keyspace events for the writes of memcached and HTTP clients. fn must not block
// and must not change muts or res. nil stops the calls.
func (s *Store) OnWrites(fn func(muts []engine.Mutation, res []engine.Result)) {
	if fn == nil {
		s.written.Store(nil)
		return
	}
	s.written.Store(&fn)
}

// check validates a batch against the limits, bounding the size-growing ops in place.
func (s *Store) check(muts []engine.Mutation) error {
	if len(muts) > s.limits.MaxBatch {
		return ErrBatchTooLarge
	}
	for i := range muts {
		m := &muts[i]
		if err := s.CheckKey(m.Key); err != nil {
			return err
		}
		if err := s.CheckKey(m.Target.Key); err != nil {
			return err
		}
		if len(m.Value) > s.limits.MaxValue {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(m.Value), s.limits.MaxValue)
		}
		if m.Table == "" && m.Op != engine.OpFlush {
			return ErrEmptyTable
		}
		if err := checkTable(m.Table); err != nil {
			return err
		}
		if err := checkTable(m.Target.Table); err != nil {
			return err
		}
		if err := checkNewTable(m); err != nil {
			return err
		}
		switch m.Op {
		case engine.OpAppend, engine.OpPrepend, engine.OpSetRange:
			if m.Edit.MaxSize <= 0 || m.Edit.MaxSize > s.limits.MaxValue { // a protocol may bound it tighter (memcached -I)
				m.Edit.MaxSize = s.limits.MaxValue
			}
		case engine.OpDelete, engine.OpRename, engine.OpCopy, engine.OpFlush, engine.OpExpire:
			s.reclaim.wake() // may leave members of a collection behind: the sweep should look soon (reclaim.go)
		case engine.OpSet:
			if m.AnyKind || m.Set.Blind { // both replace a collection (MSET, SETEX and memcached's set are blind)
				s.reclaim.wake()
			}
		}
	}
	return nil
}

// apply runs a checked batch: statistics, the query cache's bookkeeping and the engine. A batch that flushes
// every table (FLUSHALL) writes the function libraries back after it, in the same batch: Redis's FLUSHALL keeps
// them (its results are not returned).
func (s *Store) apply(ctx context.Context, muts []engine.Mutation) ([]engine.Result, error) {
	if flushesAll(muts) {
		s.functionsMu.Lock()
		defer s.functionsMu.Unlock()
		it, err := s.eng.Get(ctx, FunctionsTable, functionsKey, s.Now())
		switch {
		case errors.Is(err, engine.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			n := len(muts)
			res, err := s.applyChecked(ctx, append(muts[:n:n], functionsPut(it.Value)))
			if len(res) > n {
				res = res[:n]
			}
			return res, err
		}
	}
	return s.applyChecked(ctx, muts)
}

func flushesAll(muts []engine.Mutation) bool {
	for i := range muts {
		if muts[i].Op == engine.OpFlush && muts[i].Table == "" {
			return true
		}
	}
	return false
}

// FunctionsTable is the engine's table where the Redis protocol keeps its function libraries (FUNCTION LOAD), as
// one item: an internal table, as collections' member tables are, that no client names (Apply, Get, Scan and
// Tables refuse or skip it), and that a flush of every table (FLUSHALL) keeps.
const FunctionsTable = "\x00functions"

var functionsKey = []byte("libraries")

func functionsPut(v []byte) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: FunctionsTable, Key: functionsKey, Value: v, Set: engine.SetArgs{Blind: true}}
}

// Functions returns the function libraries stored (SetFunctions), nil when there are none.
func (s *Store) Functions(ctx context.Context) ([]byte, error) {
	ctx, err := s.levels.read(ctx)
	if err != nil {
		return nil, err
	}
	it, err := s.eng.Get(ctx, FunctionsTable, functionsKey, s.Now())
	if errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	}
	return it.Value, err
}

// SetFunctions stores the function libraries, durably, as one item of FunctionsTable; nil or empty deletes it.
func (s *Store) SetFunctions(ctx context.Context, v []byte) error {
	m := functionsPut(v)
	if len(v) == 0 {
		m = engine.Mutation{Op: engine.OpDelete, Table: FunctionsTable, Key: functionsKey}
	} else if len(v) > s.limits.MaxValue {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(v), s.limits.MaxValue)
	}
	s.functionsMu.Lock()
	defer s.functionsMu.Unlock()
	_, err := s.applyChecked(ctx, []engine.Mutation{m})
	return err
}

// applyChecked is apply without the flush keeper.
func (s *Store) applyChecked(ctx context.Context, muts []engine.Mutation) ([]engine.Result, error) {
	s.stats.batches.Add(1)
	s.stats.mutations.Add(int64(len(muts)))
	if s.queries.Enabled() {
		var one [2]string // most batches write one table (two with a RENAME's target): no allocation for them
		tables, all := tablesWritten(muts, one[:0])
		s.queries.Begin(tables, all)
		res, err := s.eng.Apply(ctx, &engine.Batch{Now: s.Now(), Clock: s.nowFn, Reserve: reserveOf(ctx), Muts: muts})
		if errors.Is(err, engine.ErrUnknownOutcome) {
			// The commit may still land at any time (a datastore's commit timed out after it was sent): no
			// answer over its tables is cached again, as the read cache keeps such a key in doubt. A count cached
			// before it landed was served until the next write.
			s.queries.Doubt(tables, all)
		}
		s.queries.End(tables, all)
		return res, err
	}
	return s.eng.Apply(ctx, &engine.Batch{Now: s.Now(), Clock: s.nowFn, Reserve: reserveOf(ctx), Muts: muts})
}

// tablesWritten lists the tables a batch may change (with repeats), or reports that it flushes every table: the
// query cache's answers over them become stale.
func tablesWritten(muts []engine.Mutation, tables []string) ([]string, bool) {
	for i := range muts {
		m := &muts[i]
		switch {
		case m.Op == engine.OpFlush && m.Table == "":
			return nil, true
		case !m.Writes():
			continue
		}
		if len(tables) == 0 || tables[len(tables)-1] != m.Table {
			tables = append(tables, m.Table)
		}
		if m.Target.Table != "" && m.Target.Table != m.Table {
			tables = append(tables, m.Target.Table)
		}
	}
	return tables, false
}

// Apply1 applies one mutation and returns its result, folding a batch error into the result's Err.
func (s *Store) Apply1(ctx context.Context, m engine.Mutation) engine.Result {
	res, err := s.Apply(ctx, []engine.Mutation{m})
	if err != nil {
		return engine.Result{Err: err}
	}
	return res[0]
}

// Stats are the store-wide counters.
type Stats struct {
	Gets, Hits, Misses, Batches, Mutations, ExpiredSwept int64
	// Engine holds the engine's own figures, if it reports any, and the query cache's (query_cache_*).
	Engine map[string]int64
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Gets: s.stats.gets.Load(), Hits: s.stats.hits.Load(), Misses: s.stats.misses.Load(),
		Batches: s.stats.batches.Load(), Mutations: s.stats.mutations.Load(), ExpiredSwept: s.stats.expiredSwept.Load(),
	}
	st.Engine = map[string]int64{}
	if es, ok := s.eng.(engine.Statser); ok {
		for k, v := range es.Stats() {
			st.Engine[k] = v
		}
	}
	if s.queries != nil {
		s.queries.Stats("query_cache_", st.Engine)
	}
	return st
}

// sweep reclaims expired items and the members of deleted collections in small steps, so requests never wait
// behind it. A failing sweep answers no client, so it is logged, once per run of failures rather than every
// tick; reads meet the error themselves.
func (s *Store) sweep(every time.Duration) {
	defer s.swept.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		err := s.sweepStep(context.Background(), false)
		switch {
		case err == nil && failing:
			s.log.Info("kv: sweeping works again")
		case err != nil && !failing:
			s.log.Error("kv: sweeping failed; retrying quietly until it works", "err", err)
		}
		failing = err != nil
	}
}

// SweepOnce runs one step of the background sweep: expired items (if the engine is a Sweeper), then members of
// deleted collections, and returns the first error. Tests call it to sweep without waiting for the ticker.
func (s *Store) SweepOnce(ctx context.Context) error { return s.sweepStep(ctx, true) }

// sweepStep is one step of the sweep; the ticker's steps (always false) leave members alone while the reclaimer
// rests (reclaim.go).
func (s *Store) sweepStep(ctx context.Context, always bool) error {
	var first error
	if sw, ok := s.eng.(engine.Sweeper); ok {
		var n int
		var err error
		if fn, sr := s.expired.Load(), asReporter(s.eng); fn != nil && sr != nil {
			n, err = sr.SweepReport(ctx, s.Now(), 2000, *fn)
		} else {
			n, err = sw.Sweep(ctx, s.Now(), 2000)
		}
		s.stats.expiredSwept.Add(int64(n))
		first = err
		if n > 0 {
			s.reclaim.wake() // expired collections leave their members behind
		}
	}
	if !always && s.reclaim.resting(s.clock()) {
		return first
	}
	n, err := s.reclaimStep(ctx, 2000)
	s.stats.membersReclaimed.Add(int64(n))
	if first == nil {
		first = err
	}
	return first
}

// OnExpired makes the sweeper call fn with the table and key of each item it removes because it expired, once the
// removal is durable (Redis's "expired" keyspace events), if the engine can name them (engine.SweepReporter).
// fn must not block nor call the engine: the sweep calls it inside an engine operation (a reopen of the engine
// would wait for fn, and fn for the reopen). nil stops the calls.
func (s *Store) OnExpired(fn func(table string, key []byte)) {
	if fn == nil {
		s.expired.Store(nil)
		return
	}
	s.expired.Store(&fn)
}

// CanReportExpired reports whether the engine names the items its sweeps remove, so OnExpired is called.
func (s *Store) CanReportExpired() bool { return asReporter(s.eng) != nil }

func asReporter(e engine.Engine) engine.SweepReporter {
	sr, _ := e.(engine.SweepReporter)
	return sr
}

// Close stops the sweeper and closes the engine.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.swept.Wait()
	return s.eng.Close()
}
