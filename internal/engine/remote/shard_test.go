package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

// shardBackend is stampBackend confined to shards as a slotted datastore is: reads and commits happen in the
// shard Apply put in ctx, a slot of another is refused, and flushes delete the shard's items only.
type shardBackend struct {
	*stampBackend
	n int
}

func (b shardBackend) shard(ctx context.Context) (int, error) {
	i, ok := ShardFrom(ctx)
	if !ok {
		return 0, errors.New("read or commit outside a shard")
	}
	return i, nil
}

func (b shardBackend) Read(ctx context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	i, err := b.shard(ctx)
	if err == nil {
		err = InShard(slots, i, b.n)
	}
	if err != nil {
		return nil, nil, false, nil, err
	}
	return b.stampBackend.Read(ctx, slots, n)
}

func (b shardBackend) Commit(ctx context.Context, checks []Check, w *Writes, tok any) error {
	i, err := b.shard(ctx)
	if err != nil {
		return err
	}
	for _, c := range checks {
		if err := InShard([]Slot{c.Slot}, i, b.n); err != nil {
			return err
		}
	}
	for _, p := range w.Put {
		if err := InShard([]Slot{p.Slot}, i, b.n); err != nil {
			return err
		}
	}
	if w.FlushAll || len(w.Flush) > 0 {
		b.mu.Lock()
		for k := range b.items {
			if ShardOf(Slot{k.table, []byte(k.key)}, b.n) == i && (w.FlushAll || contains(w.Flush, k.table)) {
				delete(b.items, k)
			}
		}
		b.mu.Unlock()
	}
	return b.stampBackend.Commit(ctx, checks, w, tok)
}

func contains(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// keysOfShards returns one key per shard of n.
func keysOfShards(n int) [][]byte {
	out := make([][]byte, n)
	for i, found := 0, 0; found < n; i++ {
		k := fmt.Appendf(nil, "k%d", i)
		if s := ShardOf(Slot{"t", k}, n); out[s] == nil {
			out[s], found = k, found+1
		}
	}
	return out
}

func newSharded(n int) (*Engine, shardBackend) {
	b := shardBackend{newStampBackend(), n}
	e := New(b)
	e.Shards, e.GroupMuts = n, 8
	return e, b
}

func setMut(k []byte) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: []byte("v")}
}

// A batch across shards is refused before anything is read; keys of one hash tag go together.
func TestShardsRefuseCrossSlot(t *testing.T) {
	e, b := newSharded(4)
	keys := keysOfShards(4)
	_, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{setMut(keys[0]), setMut(keys[1])}})
	if !errors.Is(err, engine.ErrCrossSlot) || b.reads != 0 || len(b.items) != 0 {
		t.Fatalf("batch across shards: %v, %d reads, %d items", err, b.reads, len(b.items))
	}
	if _, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{setMut([]byte("{x}a")), setMut([]byte("{x}b"))}}); err != nil {
		t.Fatalf("one hash tag: %v", err)
	}
}

// A batch that flushes runs in its own shard first: aborted by its guard it flushes no other shard; applied, it
// flushes them all and keeps what it wrote.
func TestShardFlushFollowsItsBatch(t *testing.T) {
	e, b := newSharded(4)
	ctx := context.Background()
	keys := keysOfShards(4)
	for _, k := range keys {
		if _, err := e.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{setMut(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	guard := engine.Mutation{Op: engine.OpCheck, Table: "t", Key: keys[0], Cond: engine.CondAbsent, Guard: true}
	flush := engine.Mutation{Op: engine.OpFlush}
	if _, err := e.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{guard, flush}}); !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("guarded flush: %v, want ErrAborted", err)
	}
	if len(b.items) != 4 {
		t.Fatalf("%d of 4 items left after an aborted flush", len(b.items))
	}
	if _, err := e.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{flush, setMut(keys[2])}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.items[slotKey{"t", string(keys[2])}]; !ok || len(b.items) != 1 {
		t.Fatalf("after FLUSHALL and a SET: %d items, the SET's there: %v", len(b.items), ok)
	}
}

func init() {
	// test.readarg reads the key its first argument names: a key the mutation does not declare.
	engine.RegisterFunc("test.readarg", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		_, _, err := tx.Get(tx.Table(), args[0])
		return engine.Result{}, err
	})
}

// A batch of a group that reads a key of another shard fails alone: the group is rerun batch by batch.
func TestShardGroupRerunsCrossSlotAlone(t *testing.T) {
	e, b := newSharded(4)
	keys := keysOfShards(4)
	ctx := WithShard(context.Background(), 0)
	reader := &waiter{ctx: ctx, b: &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpCall, Table: "t", Key: keys[0],
		Call: engine.CallArgs{Name: "test.readarg", Args: [][]byte{keys[1]}}}}}}
	writer := &waiter{ctx: ctx, b: &engine.Batch{Now: 1, Muts: []engine.Mutation{setMut(keys[0])}}}
	e.run(ctx, []*waiter{reader, writer})
	if !errors.Is(reader.err, engine.ErrCrossSlot) {
		t.Fatalf("the batch reading another shard: %v, want ErrCrossSlot", reader.err)
	}
	if writer.err != nil {
		t.Fatalf("its group-mate: %v", writer.err)
	}
	if _, ok := b.items[slotKey{"t", string(keys[0])}]; !ok {
		t.Fatal("the group-mate's SET is missing")
	}
}
