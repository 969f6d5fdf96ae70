package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

// refusingBackend refuses, as MariaDB refuses a key longer than its key column, any commit that puts the key
// "bad": the datastore's verdict on one batch's input, not a failure of the datastore.
type refusingBackend struct{ *stampBackend }

func (b refusingBackend) Commit(ctx context.Context, checks []Check, w *Writes, state any) error {
	for _, p := range w.Put {
		if string(p.Key) == "bad" {
			return fmt.Errorf("%w: the key does not fit the datastore", engine.ErrInvalid)
		}
	}
	return b.stampBackend.Commit(ctx, checks, w, state)
}

// TestGroupInputRefusalIsTheBatchsOwn: a commit the datastore refuses for one batch's bad input (a key too long
// for its column) fails that batch alone; the batches grouped with it are applied. Before, the refusal was every
// batch's error: over MariaDB, one client's 3000-byte key failed the writes of every client queued with it (39 of
// 40 concurrent good PUTs answered 500).
func TestGroupInputRefusalIsTheBatchsOwn(t *testing.T) {
	b := refusingBackend{newStampBackend()}
	e := New(b)
	e.GroupMuts = 64
	set := func(k string) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}}}
	}
	_, errs := queued(t, e, b.stampBackend, set("first"), set("a"), set("bad"), set("b"))
	for i, k := range []string{"first", "a", "bad", "b"} {
		if k == "bad" {
			if !errors.Is(errs[i], engine.ErrInvalid) {
				t.Errorf("the bad batch: %v, want its refusal", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("batch %q: %v", k, errs[i])
		}
		if _, ok, _ := b.Get(context.Background(), Slot{"t", []byte(k)}); !ok {
			t.Errorf("batch %q was not applied", k)
		}
	}
}
