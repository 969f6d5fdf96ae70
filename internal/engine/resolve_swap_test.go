package engine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// A swap of two tables that together hold more than maxBuilt is refused whole (ErrBatchTooBig, no write), as
// any batch that would build that much: it copies both tables, and holding them whole is what the bound is for.
func TestSwapOfTooMuchIsRefused(t *testing.T) {
	defer func(old int) { maxBuilt = old }(maxBuilt)
	maxBuilt = 4 << 20
	big := bytes.Repeat([]byte("v"), 1<<20)
	r := rangeMap{mapReader{"t": {}, "u": {}}}
	for _, k := range []string{"a", "b", "c"} {
		r.mapReader["t"][k] = Item{Value: big, Version: 1}
		r.mapReader["u"][k] = Item{Value: big, Version: 2}
	}
	swap := Mutation{Op: OpSwap, Table: "t", Target: Target{Table: "u"}}
	v := uint64(10)
	next := func() uint64 { v++; return v }
	writes, _, err := Resolve(r, &Batch{Now: 1, Muts: []Mutation{set("t", "x", "1"), swap}}, next)
	if !errors.Is(err, ErrBatchTooBig) || writes != nil {
		t.Fatalf("a swap of 6 MiB under a 4 MiB bound: %d writes, err %v; want none and ErrBatchTooBig", len(writes), err)
	}
	delete(r.mapReader["u"], "c")
	delete(r.mapReader["u"], "b")
	delete(r.mapReader["t"], "c")
	writes, _, err = Resolve(r, &Batch{Now: 1, Muts: []Mutation{swap}}, next)
	if err != nil || len(writes) != 4+3 { // four flushes (two tables, two member tables), three items
		t.Fatalf("a swap of 3 MiB: %d writes, err %v", len(writes), err)
	}
}

// A swap carries a live string's annotation (memcached's stale and win bits, at generation 0 of the member table)
// with the string, and leaves behind the annotation of an item no longer live and the members of a deleted hash.
func TestSwapCarriesAnnotations(t *testing.T) {
	r := rangeMap{mapReader{
		"t": {"s": {Value: []byte("v"), Version: 5}, "gone": {Value: []byte("x"), Version: 6, Expires: 1}},
		MemberTable("t"): {
			string(AnnotationKey([]byte("s"))):             {Value: AppendAnnotation(nil, 5, []byte{1})},
			string(AnnotationKey([]byte("gone"))):          {Value: AppendAnnotation(nil, 6, []byte{1})},
			string(MemberKey([]byte("h"), 9, []byte("f"))): {Value: []byte("old")},
		},
		"u": {},
	}}
	v := uint64(10)
	writes, _, err := Resolve(r, &Batch{Now: 2, Muts: []Mutation{{Op: OpSwap, Table: "t", Target: Target{Table: "u"}}}},
		func() uint64 { v++; return v })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range writes {
		if !w.Flush {
			got = append(got, fmt.Sprintf("%s/%q v%d", w.Table, w.Key, w.Item.Version))
		}
	}
	// The string keeps its version; the annotation, a member, gets a new one (the reclaimer's deletes are
	// conditional on the version it saw).
	want := []string{`u/"s" v5`, fmt.Sprintf("%s/%q v11", MemberTable("u"), AnnotationKey([]byte("s")))}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("swap wrote %v, want %v", got, want)
	}
}
