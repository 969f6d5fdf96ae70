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
)

// Errors of the command layer itself, beside engine's sentinels.
var (
	ErrKeyTooLarge   = errors.New("key too large")
	ErrValueTooLarge = errors.New("value too large")
	ErrBatchTooLarge = errors.New("too many mutations in one batch")
	ErrEmptyTable    = errors.New("empty table name")
)

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
}

// Store is the command layer over one engine. Safe for concurrent use.
type Store struct {
	eng    engine.Engine
	limits Limits
	clock  func() time.Time
	log    *slog.Logger
	stats  counters

	stop     chan struct{}
	stopOnce sync.Once
	swept    sync.WaitGroup
}

// counters are the store-wide statistics every protocol reports from.
type counters struct {
	gets, hits, misses, batches, mutations, expiredSwept atomic.Int64
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
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if sw, ok := e.(engine.Sweeper); ok && opts.SweepInterval >= 0 {
		every := opts.SweepInterval
		if every == 0 {
			every = 100 * time.Millisecond
		}
		s.swept.Add(1)
		go s.sweep(sw, every)
	}
	return s
}

// Engine returns the engine beneath, for optional abilities (Statser, TableLister).
func (s *Store) Engine() engine.Engine { return s.eng }

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

// Get returns the live item at table/key or engine.ErrNotFound.
func (s *Store) Get(ctx context.Context, table string, key []byte) (engine.Item, error) {
	return s.GetAt(ctx, table, key, s.Now())
}

// GetAt is Get judged at now (unix ms, from Now): a batch of reads takes the clock once.
func (s *Store) GetAt(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	s.stats.gets.Add(1)
	it, err := s.eng.Get(ctx, table, key, now)
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
	if len(muts) > s.limits.MaxBatch {
		return nil, ErrBatchTooLarge
	}
	for i := range muts {
		m := &muts[i]
		if err := s.CheckKey(m.Key); err != nil {
			return nil, err
		}
		if err := s.CheckKey(m.Key2); err != nil {
			return nil, err
		}
		if len(m.Value) > s.limits.MaxValue {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(m.Value), s.limits.MaxValue)
		}
		if m.Table == "" && m.Op != engine.OpFlush {
			return nil, ErrEmptyTable
		}
		switch m.Op {
		case engine.OpAppend, engine.OpPrepend, engine.OpSetRange:
			if m.MaxSize <= 0 || m.MaxSize > s.limits.MaxValue { // a protocol may bound it tighter (memcached -I)
				m.MaxSize = s.limits.MaxValue
			}
		}
	}
	s.stats.batches.Add(1)
	s.stats.mutations.Add(int64(len(muts)))
	return s.eng.Apply(ctx, &engine.Batch{Now: s.Now(), Muts: muts})
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
	// Engine holds the engine's own figures, if it reports any.
	Engine map[string]int64
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Gets: s.stats.gets.Load(), Hits: s.stats.hits.Load(), Misses: s.stats.misses.Load(),
		Batches: s.stats.batches.Load(), Mutations: s.stats.mutations.Load(), ExpiredSwept: s.stats.expiredSwept.Load(),
	}
	if es, ok := s.eng.(engine.Statser); ok {
		st.Engine = es.Stats()
	}
	return st
}

// sweep reclaims expired items in small steps so requests never wait behind it. A failing sweep answers no
// client, so it is logged, once per run of failures rather than every tick; reads meet the error themselves.
func (s *Store) sweep(sw engine.Sweeper, every time.Duration) {
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
		n, err := sw.Sweep(context.Background(), s.Now(), 2000)
		switch {
		case err == nil:
			s.stats.expiredSwept.Add(int64(n))
			if failing {
				s.log.Info("kv: sweeping expired items works again")
			}
		case !failing:
			s.log.Error("kv: sweeping expired items failed; retrying quietly until it works", "err", err)
		}
		failing = err != nil
	}
}

// Close stops the sweeper and closes the engine.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.swept.Wait()
	return s.eng.Close()
}
