package engine

import (
	"math/rand/v2"
	"testing"
)

// mapReader is a committed state for Resolve: table → key → item.
type mapReader map[string]map[string]Item

func (m mapReader) Read(table string, key []byte) (Item, bool, error) {
	it, ok := m[table][string(key)]
	return it, ok, nil
}

// commit applies writes in order to m, as an engine does.
func (m mapReader) commit(writes []Write) {
	for _, w := range writes {
		switch {
		case w.Flush && w.Table == "":
			clear(m)
		case w.Flush:
			delete(m, w.Table)
		case w.Delete:
			delete(m[w.Table], string(w.Key))
		default:
			if m[w.Table] == nil {
				m[w.Table] = map[string]Item{}
			}
			m[w.Table][string(w.Key)] = w.Item
		}
	}
}

func resolve(t *testing.T, r mapReader, muts ...Mutation) ([]Write, []Result) {
	t.Helper()
	v := uint64(0)
	writes, res, err := Resolve(r, &Batch{Now: 1, Muts: muts}, func() uint64 { v++; return v })
	if err != nil {
		t.Fatal(err)
	}
	return writes, res
}

func set(table, key, value string) Mutation {
	return Mutation{Op: OpSet, Table: table, Key: []byte(key), Value: []byte(value)}
}

// A key written many times in one batch costs the engine one write: the latest, with the latest version.
func TestResolveWritesEachKeyOnce(t *testing.T) {
	writes, res := resolve(t, mapReader{},
		set("t", "k", "1"), set("t", "k", "2"), set("t", "other", "x"), set("t", "k", "3"))
	if len(writes) != 2 {
		t.Fatalf("%d writes for two keys: %+v", len(writes), writes)
	}
	if string(writes[0].Item.Value) != "3" || writes[0].Item.Version != res[3].New.Version {
		t.Fatalf("k's write is %q version %d, want the last set's %q version %d",
			writes[0].Item.Value, writes[0].Item.Version, "3", res[3].New.Version)
	}
}

// Later mutations of the batch read the latest write of a key, deletions included.
func TestResolveReadsTheBatchsLatestWrite(t *testing.T) {
	r := mapReader{"t": {"k": {Value: []byte("old"), Version: 1}}}
	writes, res := resolve(t, r,
		set("t", "k", "a"),
		Mutation{Op: OpDelete, Table: "t", Key: []byte("k")},
		Mutation{Op: OpGet, Table: "t", Key: []byte("k")},
		Mutation{Op: OpAppend, Table: "t", Key: []byte("k"), Value: []byte("z"), Edit: EditArgs{Create: true}},
		Mutation{Op: OpGet, Table: "t", Key: []byte("k")})
	if res[2].OldFound {
		t.Fatalf("a get after the delete found %q", res[2].Old.Value)
	}
	if got := string(res[4].Old.Value); got != "z" {
		t.Fatalf("a get after the append read %q, want z", got)
	}
	r.commit(writes)
	if got := string(r["t"]["k"].Value); got != "z" || len(writes) != 1 {
		t.Fatalf("committed %q in %d writes, want z in 1", got, len(writes))
	}
}

// A write after a flush of its table comes after the flush, so the flush cannot remove it; writes of other
// tables keep their place.
func TestResolveKeepsWritesAfterAFlush(t *testing.T) {
	r := mapReader{"t": {"gone": {Value: []byte("g")}}}
	writes, _ := resolve(t, r,
		set("t", "k", "before"), set("u", "k", "u1"),
		Mutation{Op: OpFlush, Table: "t"},
		set("t", "k", "after"), set("u", "k", "u2"))
	r.commit(writes)
	if got := string(r["t"]["k"].Value); got != "after" {
		t.Fatalf("t/k = %q after the batch, want the write after the flush", got)
	}
	if _, ok := r["t"]["gone"]; ok {
		t.Fatal("the flush did not remove an item stored before the batch")
	}
	if got := string(r["u"]["k"].Value); got != "u2" {
		t.Fatalf("u/k = %q, want u2", got)
	}

	r = mapReader{"t": {"gone": {Value: []byte("g")}}}
	writes, _ = resolve(t, r, set("t", "k", "before"), Mutation{Op: OpFlush}, set("t", "k", "after"))
	r.commit(writes)
	if got := string(r["t"]["k"].Value); got != "after" || len(r["t"]) != 1 {
		t.Fatalf("after FLUSHALL between two writes: %v", r["t"])
	}
}

// A batch resolves as its mutations would one at a time: the same results and the same committed state. Random
// batches of up to 40 mutations over two tables and six keys cross the point where the batch's view of its own
// writes moves from a scan to a map (scanWrites), with flushes of a table and of everything among them.
func TestResolveBatchEqualsOneAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tables, keys := []string{"t", "u"}, []string{"a", "b", "c", "d", "e", "f"}
	for round := 0; round < 3000; round++ {
		start := func() mapReader {
			return mapReader{"t": {"a": {Value: []byte("t0"), Version: 1}}, "u": {"b": {Value: []byte("u0"), Version: 1}}}
		}
		var muts []Mutation
		for n := 1 + rng.IntN(40); len(muts) < n; {
			tb, k := tables[rng.IntN(2)], []byte(keys[rng.IntN(len(keys))])
			switch p := rng.IntN(100); {
			case p < 40:
				muts = append(muts, Mutation{Op: OpSet, Table: tb, Key: k, Value: []byte{byte('0' + len(muts)%10)}})
			case p < 55:
				muts = append(muts, Mutation{Op: OpDelete, Table: tb, Key: k})
			case p < 85:
				muts = append(muts, Mutation{Op: OpGet, Table: tb, Key: k})
			case p < 95:
				muts = append(muts, Mutation{Op: OpAppend, Table: tb, Key: k, Value: []byte("+"), Edit: EditArgs{Create: true}})
			case p < 98:
				muts = append(muts, Mutation{Op: OpFlush, Table: tb})
			default:
				muts = append(muts, Mutation{Op: OpFlush})
			}
		}
		batch := start()
		writes, got := resolve(t, batch, muts...)
		batch.commit(writes)
		single := start()
		for i, m := range muts {
			w, want := resolve(t, single, m)
			single.commit(w)
			g := got[i]
			if g.OldFound != want[0].OldFound || string(g.Old.Value) != string(want[0].Old.Value) ||
				g.NewFound != want[0].NewFound || string(g.New.Value) != string(want[0].New.Value) ||
				(g.Err == nil) != (want[0].Err == nil) {
				t.Fatalf("round %d, mutation %d (%v %s/%s) of %d: batch gave %+v, one at a time %+v",
					round, i, m.Op, m.Table, m.Key, len(muts), g, want[0])
			}
		}
		for _, tb := range tables {
			if len(batch[tb]) != len(single[tb]) {
				t.Fatalf("round %d: table %s holds %d items after the batch, %d one at a time", round, tb,
					len(batch[tb]), len(single[tb]))
			}
			for k, it := range single[tb] {
				if string(batch[tb][k].Value) != string(it.Value) {
					t.Fatalf("round %d: %s/%s = %q after the batch, %q one at a time", round, tb, k,
						batch[tb][k].Value, it.Value)
				}
			}
		}
	}
}

// A small batch costs Resolve a few allocations up to scanWrites written keys, whatever its size: its state, its
// writes, its results, and the copy of a value it read back from its own writes (the second SET of a); no map, no
// key copies (it runs once per batch, for every write that reaches an engine). A map from the first write made
// 6 for the first four of these mutations alone.
func TestResolveSmallBatchAllocations(t *testing.T) {
	muts := []Mutation{set("t", "a", "1"), set("t", "b", "2"), set("t", "a", "3"), {Op: OpGet, Table: "u", Key: []byte("b")}}
	for i := 0; len(muts) < scanWrites; i++ {
		muts = append(muts, set("u", string(rune('c'+i)), "x"))
	}
	r := mapReader{}
	v := uint64(0)
	next := func() uint64 { v++; return v }
	b := &Batch{Now: 1, Muts: muts}
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := Resolve(r, b, next); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Fatalf("Resolve of a batch of %d mutations made %.0f allocations, want at most 4", len(muts), allocs)
	}
}
