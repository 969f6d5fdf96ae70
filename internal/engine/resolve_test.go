package engine

import (
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
