package engine

import "context"

// Engine stores items and applies batches of mutations atomically. All methods are safe for concurrent use. The
// package comment (doc.go) is the whole contract: ownership, blocking, durability, versions, expiry, errors.
type Engine interface {
	// Get returns the live item at table/key, or ErrNotFound if there is none or it expired at now (unix ms).
	// The returned Value belongs to the caller. A durable engine returns only writes that are already durable.
	Get(ctx context.Context, table string, key []byte, now int64) (Item, error)
	// Apply applies the batch atomically, in order, and returns one Result per mutation once the batch is
	// durable as the engine's sync policy promises. A failed Guard returns ErrAborted and applies nothing.
	// Apply keeps no reference to the batch after it returns.
	Apply(ctx context.Context, b *Batch) ([]Result, error)
	// Close releases the engine; pending Applies finish first.
	Close() error
}

// Scanner is an engine that can list a table's live items in key order.
type Scanner interface {
	// Scan calls fn for each live item of table whose key lies in r, in key order, until fn returns false.
	// key and it.Value are valid only during the call.
	Scan(ctx context.Context, table string, r Range, now int64, fn func(key []byte, it Item) bool) error
}

// TableLister is an engine that can list the tables holding items.
type TableLister interface {
	// Tables returns the names of tables that hold at least one stored item, sorted.
	Tables(ctx context.Context) ([]string, error)
}

// Statser is an engine that reports figures about itself (sizes, syncs, cache use) for INFO, stats and metrics.
type Statser interface {
	// Stats returns named counters and gauges; names are lower_snake_case.
	Stats() map[string]int64
}

// Sweeper is an engine that reclaims expired items in the background. Expired items are already invisible to
// every read; sweeping only frees their space.
type Sweeper interface {
	// Sweep examines up to budget stored items, resuming where the previous call stopped, removes those expired
	// at now (unix ms) unless rewritten meanwhile, and returns how many it removed.
	Sweep(ctx context.Context, now int64, budget int) (int, error)
}

// SweepReporter is a Sweeper that also names what it removed, so the layers above can tell clients which keys
// expired (Redis's "expired" keyspace events). Items of the engine's own tables (collections' members) are not
// reported.
type SweepReporter interface {
	// SweepReport sweeps as Sweep does and calls removed with the table and key of each item it removed, after
	// the removal is durable.
	SweepReport(ctx context.Context, now int64, budget int, removed func(table string, key []byte)) (int, error)
}
