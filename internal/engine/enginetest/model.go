package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// testModel applies the same random batches to the engine and to the memory engine (the model) and requires the
// same results and the same final contents. Versions differ between engines, so compare-and-set uses each
// engine's own current version of the key.
func testModel(t *testing.T, e engine.Engine) {
	model := memstore.New()
	defer model.Close()
	rng := rand.New(rand.NewSource(1))
	tables := []string{"default", "db1", "d"}
	keys := []string{"a", "b", "c", "ab", "\x00", "n"}
	single := engine.SingleItemOnly(e)
	for round := 0; round < 300; round++ {
		n := 1 + rng.Intn(4)
		muts := make([]engine.Mutation, n)
		tb, ks, maxOp := tables, keys, engine.OpCall
		if single { // batches of one item: one key, and only the ops that touch no other
			tb, ks, maxOp = []string{tables[rng.Intn(len(tables))]}, []string{keys[rng.Intn(len(keys))]}, engine.OpExpire
		}
		for i := range muts {
			muts[i] = randomMutation(rng, tb, ks, maxOp)
		}
		if scoped(e) {
			oneTable(muts)
		}
		if engine.SlotsOf(e) > 1 {
			muts = oneSlot(muts)
		}
		ts := now + int64(round)*10
		got, gerr := applyModel(t, e, ts, muts)
		want, werr := applyModel(t, model, ts, muts)
		if !errors.Is(gerr, werr) && gerr != werr {
			t.Fatalf("round %d: batch error %v, model %v; batch %+v", round, gerr, werr, muts)
		}
		for i := range want {
			if d := diffResult(got[i], want[i]); d != "" {
				t.Fatalf("round %d mutation %d (%+v): %s", round, i, muts[i], d)
			}
		}
	}
	end := now + 300*10
	for _, tb := range tables {
		for _, k := range keys {
			key := []byte(k)
			if engine.SlotsOf(e) > 1 {
				key = tag(key) // the batches wrote the keys tagged (oneSlot)
			}
			g, gerr := e.Get(ctx, tb, key, end)
			w, werr := model.Get(ctx, tb, key, end)
			if !errors.Is(gerr, werr) && gerr != werr || !sameValue(g, w) || g.Flags != w.Flags || g.Expires != w.Expires {
				t.Fatalf("%s/%q: engine holds %+v (%v), model %+v (%v)", tb, k, g, gerr, w, werr)
			}
		}
		if _, ok := e.(engine.Scanner); !ok {
			continue
		}
		g := fmt.Sprintf("%q", scanKeysAt(t, e, tb, engine.Range{}, end))
		w := fmt.Sprintf("%q", scanKeysAt(t, model, tb, engine.Range{}, end))
		if g != w {
			t.Fatalf("table %q: engine scans %s, model %s", tb, g, w)
		}
	}
}

// applyModel resolves CondVersion placeholders against the engine's own state, then applies the batch.
func applyModel(t *testing.T, e engine.Engine, ts int64, muts []engine.Mutation) ([]engine.Result, error) {
	t.Helper()
	own := make([]engine.Mutation, len(muts))
	copy(own, muts)
	for i := range own {
		if own[i].Cond == engine.CondVersion && own[i].Version == 1 { // placeholder: "the current version"
			it, err := e.Get(ctx, own[i].Table, own[i].Key, ts)
			if err == nil {
				own[i].Version = it.Version
			} else {
				own[i].Version = 0
			}
		}
	}
	return e.Apply(ctx, &engine.Batch{Now: ts, Muts: own})
}

// randomMutation is a random mutation of an op up to maxOp on one of keys in one of tables.
func randomMutation(rng *rand.Rand, tables, keys []string, maxOp engine.Op) engine.Mutation {
	m := engine.Mutation{
		Table: tables[rng.Intn(len(tables))],
		Key:   []byte(keys[rng.Intn(len(keys))]),
		Op:    engine.Op(1 + rng.Intn(int(maxOp))),
	}
	if m.Op == engine.OpCall {
		return randomListCall(rng, m.Table, m.Key, tables, keys)
	}
	if m.Op >= engine.OpMemberGet {
		m.Coll = engine.CollArgs{Kind: engine.KindHash + engine.Kind(rng.Intn(2)*2), Member: []byte(keys[rng.Intn(len(keys))])}
	}
	m.AnyKind = rng.Intn(2) == 0
	vals := []string{"", "1", "-3", "x", "12", "2.5"}
	m.Value = []byte(vals[rng.Intn(len(vals))])
	m.Flags = uint32(rng.Intn(3))
	if rng.Intn(4) == 0 {
		m.Expires = now + int64(rng.Intn(4000))
	}
	switch rng.Intn(6) {
	case 0:
		m.Cond = engine.CondAbsent
	case 1:
		m.Cond = engine.CondPresent
	case 2:
		m.Cond, m.Version = engine.CondVersion, uint64(1+rng.Intn(2)*1_000_000) // 1: current, else stale
	}
	m.Guard = rng.Intn(8) == 0
	m.Set.KeepTTL = rng.Intn(2) == 0
	m.Set.Blind = rng.Intn(2) == 0
	m.Incr.Create = rng.Intn(2) == 0
	m.Edit.Create = rng.Intn(2) == 0
	m.Touch = rng.Intn(3) == 0
	m.Incr.Unsigned = rng.Intn(2) == 0
	m.Incr.Decr = rng.Intn(2) == 0
	m.Incr.Delta = int64(rng.Intn(7) - 3)
	m.Incr.UDelta = uint64(rng.Intn(5))
	m.Incr.Initial = uint64(rng.Intn(5))
	if m.Op == engine.OpIncrFloat {
		m.Value = []byte([]string{"0.5", "-1", "abc", "1e3"}[rng.Intn(4)])
	}
	if m.Guard && rng.Intn(2) == 0 {
		m.Group = uint32(1 + rng.Intn(2))
	} else if rng.Intn(4) == 0 {
		m.Group = uint32(1 + rng.Intn(2))
	}
	m.Edit.Offset = int64(rng.Intn(4))
	m.Edit.MaxSize = rng.Intn(2) * 8
	m.Expire.Cond = engine.ExpireCond(rng.Intn(6))
	m.Target.Table = tables[rng.Intn(len(tables))]
	m.Target.Key = []byte(keys[rng.Intn(len(keys))])
	if m.Op == engine.OpFlush && rng.Intn(3) == 0 {
		m.Table = ""
	}
	return m
}

func diffResult(g, w engine.Result) string {
	switch {
	case !errors.Is(g.Err, w.Err) && g.Err != w.Err:
		return fmt.Sprintf("err %v, model %v", g.Err, w.Err)
	case g.OldFound != w.OldFound || !sameValue(g.Old, w.Old) || g.Old.Flags != w.Old.Flags || g.Old.Expires != w.Old.Expires:
		return fmt.Sprintf("old %+v (%v), model %+v (%v)", g.Old, g.OldFound, w.Old, w.OldFound)
	case g.NewFound != w.NewFound || !sameValue(g.New, w.New) || g.New.Flags != w.New.Flags || g.New.Expires != w.New.Expires:
		return fmt.Sprintf("new %+v (%v), model %+v (%v)", g.New, g.NewFound, w.New, w.NewFound)
	case g.Old.Kind != w.Old.Kind || g.New.Kind != w.New.Kind:
		return fmt.Sprintf("kinds old %v new %v, model %v %v", g.Old.Kind, g.New.Kind, w.Old.Kind, w.New.Kind)
	case len(g.Members) != len(w.Members):
		return fmt.Sprintf("%d members, model %d", len(g.Members), len(w.Members))
	}
	for i := range g.Members {
		if !bytes.Equal(g.Members[i].Name, w.Members[i].Name) || !bytes.Equal(g.Members[i].Item.Value, w.Members[i].Item.Value) {
			return fmt.Sprintf("member %d: %q=%q, model %q=%q", i, g.Members[i].Name, g.Members[i].Item.Value, w.Members[i].Name, w.Members[i].Item.Value)
		}
	}
	return ""
}

// sameValue compares two items' values; a collection's meta holds a generation (a version, which differs between
// engines), so metas compare by their member count.
func sameValue(a, b engine.Item) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind == engine.KindString {
		return bytes.Equal(a.Value, b.Value)
	}
	ma, errA := engine.DecodeCollMeta(a.Value)
	mb, errB := engine.DecodeCollMeta(b.Value)
	return errA == nil && errB == nil && ma.Count == mb.Count
}

// randomListCall is one of the list functions with random arguments.
func randomListCall(rng *rand.Rand, table string, key []byte, tables, keys []string) engine.Mutation {
	v := []byte([]string{"a", "b", "1"}[rng.Intn(3)])
	i := int64(rng.Intn(7) - 3)
	score := []byte([]string{"1", "-2.5", "inf", "0"}[rng.Intn(4)])
	switch rng.Intn(16) {
	case 14:
		trim := collections.StreamTrim{By: "maxlen", MaxLen: int64(rng.Intn(3))}
		if rng.Intn(2) == 0 { // "~": whole nodes of 1 to 3 entries, at most 0 (none) to 3 a call
			trim.Approx, trim.Node, trim.Limit = true, int64(1+rng.Intn(3)), int64(rng.Intn(4))
		}
		return collections.XAdd(table, key, []byte("*"), rng.Intn(4) == 0, trim, v, v)
	case 15:
		return collections.XRange(table, key, collections.ID{}, collections.ID{MS: ^uint64(0), Seq: ^uint64(0)}, rng.Intn(2) == 0, int64(rng.Intn(3)-1))
	case 8:
		return collections.ZAdd(table, key, rng.Intn(64)&^(collections.ZNX|collections.ZIncr), score, v, []byte("2"), []byte("b"))
	case 9:
		return collections.ZAdd(table, key, collections.ZIncr, score, v)
	case 10:
		return collections.ZRem(table, key, v)
	case 11:
		return collections.ZRange(table, key, collections.RangeSpec{By: "score", Min: []byte("-inf"), Max: score, Rev: rng.Intn(2) == 0, Count: -1})
	case 12:
		return collections.ZPop(table, key, rng.Intn(2) == 0, int64(rng.Intn(3)))
	case 13:
		return collections.ZCombine(table, key, collections.Combine{Op: "union", Keys: [][]byte{key, []byte(keys[rng.Intn(len(keys))])}, Aggregate: "sum"}, true)
	case 0:
		return collections.Push(table, key, rng.Intn(2) == 0, rng.Intn(4) == 0, v, v)
	case 1:
		return collections.Pop(table, key, rng.Intn(2) == 0, int64(rng.Intn(4)-1))
	case 2:
		return collections.Index(table, key, i)
	case 3:
		return collections.Set(table, key, i, v)
	case 4:
		return collections.Range(table, key, i, int64(rng.Intn(7)-3))
	case 5:
		return collections.Trim(table, key, i, int64(rng.Intn(7)-3))
	case 6:
		return collections.Rem(table, key, i, v)
	}
	return collections.Move(table, key, tables[rng.Intn(len(tables))], []byte(keys[rng.Intn(len(keys))]), rng.Intn(2) == 0, rng.Intn(2) == 0)
}
