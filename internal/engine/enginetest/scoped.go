package enginetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"anykv/internal/engine"
)

// scoped reports whether e keeps each batch within one table (engine.TableScoped).
func scoped(e engine.Engine) bool {
	_, ok := e.(engine.TableScoped)
	return ok
}

// spansSlots reports whether a SlotScoped engine (of more than one slot) refuses muts: they name keys of two
// slots.
func spansSlots(e engine.Engine, muts []engine.Mutation) bool {
	n := engine.SlotsOf(e)
	if n <= 1 {
		return false
	}
	slot := -1
	for i := range muts {
		m := &muts[i]
		if m.Op == engine.OpFlush {
			continue
		}
		keys := append([][]byte{m.Key}, m.Call.Keys...)
		tables := []string{m.Table}
		for range m.Call.Keys {
			tables = append(tables, m.Table)
		}
		if m.Target.Table != "" {
			keys, tables = append(keys, m.Target.Key), append(tables, m.Target.Table)
		}
		for j, k := range keys {
			switch s := engine.SlotOf(tables[j], k, n); {
			case slot < 0:
				slot = s
			case s != slot:
				return true
			}
		}
	}
	return false
}

// oneSlot rewrites a random batch of the model test so that every key has the same hash tag, without function
// calls, for a SlotScoped engine (refusing it would teach nothing).
func oneSlot(muts []engine.Mutation) []engine.Mutation {
	// Functions name keys in their arguments too (ZUNIONSTORE's sources), which no rewrite here can know.
	if kept := slices.DeleteFunc(slices.Clone(muts), func(m engine.Mutation) bool { return m.Op == engine.OpCall }); len(kept) > 0 {
		muts = kept
	}
	for i := range muts {
		m := &muts[i]
		m.Key = tag(m.Key)
		if m.Target.Table != "" {
			m.Target.Key = tag(m.Target.Key)
		}
		for j := range m.Call.Keys {
			m.Call.Keys[j] = tag(m.Call.Keys[j])
		}
	}
	return muts
}

// spansTables reports whether a TableScoped engine refuses muts (engine.Span).
func spansTables(muts []engine.Mutation) bool {
	_, second, all := engine.Span(muts)
	return second != "" || all
}

// wantRefused requires a TableScoped engine to refuse the batch muts with ErrNotSupported.
func wantRefused(t *testing.T, e engine.Engine, muts ...engine.Mutation) {
	t.Helper()
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("%T is TableScoped but a batch across tables got %v, want ErrNotSupported", e, err)
	}
}

// applyEach is apply for a batch a TableScoped or SlotScoped engine refuses: it checks the refusal, then applies each mutation
// as a batch of its own (the suite's batches across tables set up independent items).
func applyEach(t *testing.T, e engine.Engine, muts []engine.Mutation) []engine.Result {
	t.Helper()
	wantRefused(t, e, muts...)
	var out []engine.Result
	for _, m := range muts {
		out = append(out, apply(t, e, m)...)
	}
	return out
}

// oneTable rewrites a random batch of the model test to stay in its first mutation's table, for a TableScoped
// engine (which refusing it would teach nothing).
func oneTable(muts []engine.Mutation) {
	t := muts[0].Table
	if t == "" {
		t = "default"
	}
	for i := range muts {
		muts[i].Table = t
		if muts[i].Target.Table != "" {
			muts[i].Target.Table = t
		}
	}
}

// tagged runs the suite's wide tests on a SlotScoped engine: it gives every key one hash tag, so a test's
// batches stay in one slot (the adapter's own tests prove batches across slots are refused), and takes it off
// the keys results name. Only Get and Apply, which the wide tests use.
type tagged struct{ e engine.Engine }

func tag(k []byte) []byte { return append([]byte("{w}"), k...) }

func (t tagged) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	return t.e.Get(ctx, table, tag(key), now)
}

func (t tagged) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	c := *b
	c.Muts = make([]engine.Mutation, len(b.Muts))
	for i, m := range b.Muts {
		m.Key = tag(m.Key)
		if m.Target.Table != "" {
			m.Target.Key = tag(m.Target.Key)
		}
		m.Call.Keys = make([][]byte, len(b.Muts[i].Call.Keys))
		for j, k := range b.Muts[i].Call.Keys {
			m.Call.Keys[j] = tag(k)
		}
		c.Muts[i] = m
	}
	res, err := t.e.Apply(ctx, &c)
	for i := range res {
		for j, k := range res[i].Wrote {
			res[i].Wrote[j] = bytes.TrimPrefix(k, tag(nil))
		}
	}
	return res, err
}

func (t tagged) Close() error { return t.e.Close() }
