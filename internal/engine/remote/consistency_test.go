package remote

import (
	"context"
	"errors"
	"testing"

	"anykv/internal/engine"
)

// levelBackend records the read level of the contexts Read and Get see; it stores nothing.
type levelBackend struct{ read, get []string }

func levelName(ctx context.Context) string {
	c, ok := engine.ConsistencyOf(ctx)
	if !ok {
		return "none"
	}
	return c.String()
}

func (b *levelBackend) Read(ctx context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	b.read = append(b.read, levelName(ctx))
	vs := make([]uint64, n)
	for i := range vs {
		vs[i] = uint64(i + 1)
	}
	return make([]Stored, len(slots)), vs, true, nil, nil
}

func (b *levelBackend) Commit(context.Context, []Check, *Writes, any) error { return nil }

func (b *levelBackend) Get(ctx context.Context, _ Slot) (engine.Item, bool, error) {
	b.get = append(b.get, levelName(ctx))
	return engine.Item{}, false, nil
}

func (b *levelBackend) Close() error { return nil }

// TestApplyReadsLinearizably: a serializable context reaches the backend's Get as it is, but a batch's reads (whose
// outcome depends on them) are made at the linearizable level.
func TestApplyReadsLinearizably(t *testing.T) {
	b := &levelBackend{}
	e := New(b)
	ctx := engine.WithConsistency(context.Background(), engine.Serializable)
	if _, err := e.Get(ctx, "t", []byte("k"), 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k")}}}); err != nil {
		t.Fatal(err)
	}
	if len(b.get) != 1 || b.get[0] != "serializable" || len(b.read) != 1 || b.read[0] != "linearizable" {
		t.Errorf("Get saw %v, Apply's Read saw %v", b.get, b.read)
	}
}
