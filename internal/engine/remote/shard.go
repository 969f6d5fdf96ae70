package remote

import (
	"context"
	"fmt"

	"anykv/internal/engine"
)

// Sharded namespaces. A datastore whose atomic commit covers one partition (Cassandra's lightweight
// transactions) may spread a namespace over Engine.Shards partitions, so that writes to different shards run
// their commits side by side instead of contending on one. A key's shard is its engine.SlotOf: a hash of the
// key or of its {hash tag}; a collection's members go with the collection's key. A batch must stay in one shard:
// one that touches keys of two is refused with engine.ErrCrossSlot before anything is read, and a key read
// late (by a script) in another shard fails that batch the same way (a group it shared is rerun batch by batch).
// A flush runs on each shard in turn, atomically per shard only: a batch that flushes runs whole in its keys'
// shard first, then the others are flushed if it took effect.

// ShardOf returns the shard of s among n (engine.SlotOf).
func ShardOf(s Slot, n int) int { return engine.SlotOf(s.Table, s.Key, n) }

type shardKey struct{}

// WithShard returns ctx for work confined to shard i: Apply runs a batch's read and commit under it.
func WithShard(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, shardKey{}, i)
}

// ShardFrom returns the shard ctx is confined to, if any.
func ShardFrom(ctx context.Context) (int, bool) {
	i, ok := ctx.Value(shardKey{}).(int)
	return i, ok
}

// CrossSlot is the error of a batch that would reach beyond one shard.
func CrossSlot(shards int, what string) error {
	return fmt.Errorf("%w (%s; the namespace is spread over %d slots: give keys that must change together "+
		"one {hash tag}, see docs/engines.md)", engine.ErrCrossSlot, what, shards)
}

// InShard checks that every slot is in shard i of n.
func InShard(slots []Slot, i, n int) error {
	if n <= 1 {
		return nil
	}
	for _, s := range slots {
		if ShardOf(s, n) != i {
			return CrossSlot(n, fmt.Sprintf("key %q is not in the batch's slot", s.Key))
		}
	}
	return nil
}

// shardOfBatch returns the one shard b's keys are in (0 if it names none), whether b flushes, or ErrCrossSlot.
func (e *Engine) shardOfBatch(b *engine.Batch) (shard int, flushes bool, err error) {
	shard, flushes = -1, !groupable(b)
	for _, s := range touchedAll(b) {
		switch i := ShardOf(s, e.Shards); {
		case shard < 0:
			shard = i
		case i != shard:
			return 0, false, CrossSlot(e.Shards, "keys in different slots")
		}
	}
	return max(shard, 0), flushes, nil
}

// touchedAll lists every key b names, blind sets included (they are written, if not read).
func touchedAll(b *engine.Batch) []Slot {
	out := touched(b)
	for i := range b.Muts {
		if m := &b.Muts[i]; m.Op == engine.OpSet && m.Set.Blind && m.Cond == engine.CondNone && !m.Set.KeepTTL {
			out = append(out, Slot{m.Table, m.Key})
		}
	}
	return out
}

// applySharded applies b in its one shard. A batch that flushes runs whole in its own shard first, and only then,
// for each flush that took effect there (not aborted by a guard), flushes every other shard: atomic within a
// shard, not across shards, and a batch that fails or aborts flushes nothing beyond its own.
func (e *Engine) applySharded(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	shard, flushes, err := e.shardOfBatch(b)
	if err != nil {
		return nil, err
	}
	w := &waiter{ctx: ctx, b: b}
	if !flushes && e.GroupMuts > 0 && len(b.Muts) <= e.GroupMuts {
		return e.enqueue(w, shard)
	}
	e.run(WithShard(ctx, shard), []*waiter{w})
	if w.err != nil || !flushes {
		return w.res, w.err
	}
	only := &engine.Batch{Now: b.Now}
	for i, m := range b.Muts {
		if m.Op == engine.OpFlush && w.res[i].Err == nil {
			only.Muts = append(only.Muts, engine.Mutation{Op: engine.OpFlush, Table: m.Table})
		}
	}
	if len(only.Muts) == 0 {
		return w.res, nil
	}
	for i := range e.Shards {
		if i == shard {
			continue
		}
		o := &waiter{ctx: ctx, b: only}
		if e.run(WithShard(ctx, i), []*waiter{o}); o.err != nil {
			return nil, fmt.Errorf("remote: flushed slot %d of %d, then slot %d failed: %w", shard, e.Shards, i, o.err)
		}
	}
	return w.res, nil
}

// Slots implements engine.SlotScoped: the number of shards (1 when not sharded).
func (e *Engine) Slots() int { return max(e.Shards, 1) }
