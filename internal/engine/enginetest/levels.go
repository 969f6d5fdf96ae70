package enginetest

import (
	"context"
	"sync"

	"anykv/internal/engine"
)

// Levels is an engine decorator for tests of the consistency plumbing: it records the read level each Get and
// Scan was asked for (engine.ConsistencyOf of its context) and claims the read levels it is told to, so a test
// can see what a protocol asked for and make a level unservable.
type Levels struct {
	inner engine.Engine
	// Serves lists the levels ReadLevels reports; nil reports the wrapped engine's.
	Serves []engine.Consistency

	mu    sync.Mutex
	asked []string
}

// NewLevels wraps inner. It returns the decorator, to read the record from, and the engine to serve, which has
// exactly the optional abilities of inner.
func NewLevels(inner engine.Engine, serves ...engine.Consistency) (*Levels, engine.Engine) {
	l := &Levels{inner: inner, Serves: serves}
	return l, engine.Expose(l, engine.AbilitiesOf(inner))
}

func (l *Levels) record(ctx context.Context, what string) {
	c, ok := engine.ConsistencyOf(ctx)
	name := "none"
	if ok {
		name = c.String()
	}
	l.mu.Lock()
	l.asked = append(l.asked, what+" "+name)
	l.mu.Unlock()
}

// Asked returns and forgets the record: one "get LEVEL" or "scan LEVEL" per read in order, LEVEL "none" when the
// context carried no level.
func (l *Levels) Asked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.asked
	l.asked = nil
	return out
}

// Get implements engine.Engine and records the level.
func (l *Levels) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if !engine.IsInternalTable(table) { // the health probe is no client's read
		l.record(ctx, "get")
	}
	return l.inner.Get(ctx, table, key, now)
}

// View implements engine.Viewer as Get, recorded the same way.
func (l *Levels) View(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return l.Get(ctx, table, key, now)
}

// Apply implements engine.Engine: batches are not recorded (their reads are always linearizable).
func (l *Levels) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	return l.inner.Apply(ctx, b)
}

// Close implements engine.Engine.
func (l *Levels) Close() error { return l.inner.Close() }

// Scan implements engine.Scanner and records the level.
func (l *Levels) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if !engine.IsInternalTable(table) { // the sweeper's walks of collections' members are no client's read
		l.record(ctx, "scan")
	}
	return l.inner.(engine.Scanner).Scan(ctx, table, r, now, fn)
}

// Tables forwards engine.TableLister.
func (l *Levels) Tables(ctx context.Context) ([]string, error) {
	return l.inner.(engine.TableLister).Tables(ctx)
}

// Sweep forwards engine.Sweeper.
func (l *Levels) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	return l.inner.(engine.Sweeper).Sweep(ctx, now, budget)
}

// Stats forwards engine.Statser.
func (l *Levels) Stats() map[string]int64 { return l.inner.(engine.Statser).Stats() }

// SingleItemBatches implements engine.ItemScoper with the wrapped engine's limit.
func (l *Levels) SingleItemBatches() bool { return engine.SingleItemOnly(l.inner) }

// Slots implements engine.SlotScoped with the wrapped engine's slots.
func (l *Levels) Slots() int { return engine.SlotsOf(l.inner) }

// ReadLevels implements engine.ReadLeveler: Serves, or the wrapped engine's levels.
func (l *Levels) ReadLevels() []engine.Consistency {
	if l.Serves != nil {
		return l.Serves
	}
	return engine.ReadLevelsOf(l.inner)
}
