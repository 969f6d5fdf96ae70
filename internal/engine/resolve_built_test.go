package engine

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// A pipeline of small writes to one big value (the audit's GETEX, gat, APPEND and EXPIRE, a thousand each on a
// 1 MiB value) must not copy the value once per write: each copy was held by its result until the batch was
// answered, gigabytes from a few kilobytes of requests. Reads of the batch's own writes share one copy, APPENDs
// extend the batch's own array in place, and every result still reads as it did when it was made.
func TestWritesToOneBigValueShareIt(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 1<<20)
	r := mapReader{"t": {"k": {Value: big, Version: 1}}}
	key := []byte("k")
	var muts []Mutation
	for range 300 {
		muts = append(muts, Mutation{Op: OpGet, Table: "t", Key: key, Touch: true, Expires: 1 << 40})
	}
	for range 300 {
		muts = append(muts, Mutation{Op: OpAppend, Table: "t", Key: key, Value: []byte("x")})
	}
	for range 300 {
		muts = append(muts, Mutation{Op: OpExpire, Table: "t", Key: key, Expires: 1 << 41},
			Mutation{Op: OpGet, Table: "t", Key: key})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	writes, res := resolve(t, r, muts...)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("resolving 1,200 writes to a 1 MiB value allocated %d MiB; want a few copies, not one per write",
			grew>>20)
	}
	for i := range 300 {
		if v := res[i].New.Value; !bytes.Equal(v, big) {
			t.Fatalf("GETEX %d answered %d bytes, want the 1 MiB value", i, len(v))
		}
		v := res[300+i].New.Value
		if len(v) != len(big)+i+1 || !bytes.Equal(v[:len(big)], big) || v[len(v)-1] != 'x' || v[len(big)] != 'x' {
			t.Fatalf("APPEND %d left %d bytes, want %d ending in x", i, len(v), len(big)+i+1)
		}
	}
	final := res[len(res)-1].Old.Value
	if len(final) != len(big)+300 || len(writes) != 1 || !bytes.Equal(writes[0].Item.Value, final) {
		t.Fatalf("the batch reads %d bytes at its end and writes %d items, want %d bytes in 1", len(final),
			len(writes), len(big)+300)
	}
	if writes[0].Item.Expires != 1<<41 {
		t.Fatalf("the write expires at %d, want the last EXPIRE's", writes[0].Item.Expires)
	}
	// An append to a value a read of the batch shares must not show through that read's result.
	_, res = resolve(t, mapReader{}, set("t", "s", "ab"), Mutation{Op: OpGet, Table: "t", Key: []byte("s")},
		Mutation{Op: OpAppend, Table: "t", Key: []byte("s"), Value: []byte("c")},
		Mutation{Op: OpSetRange, Table: "t", Key: []byte("s"), Value: []byte("Z")},
		Mutation{Op: OpGet, Table: "t", Key: []byte("s")})
	if a, b, c := string(res[1].New.Value), string(res[2].New.Value), string(res[4].New.Value); a != "ab" || b != "abc" || c != "Zbc" {
		t.Fatalf("reads and appends in one batch answered %q, %q, %q; want ab, abc, Zbc", a, b, c)
	}
}

// A batch that would build more than maxBuilt bytes of values (SETRANGEs, each a new copy of a big value) is
// refused whole, with nothing written; one mutation alone may still build a value past the bound.
func TestBatchThatBuildsTooMuchIsRefused(t *testing.T) {
	defer func(old int) { maxBuilt = old }(maxBuilt)
	maxBuilt = 4 << 20
	big := bytes.Repeat([]byte("v"), 1<<20)
	r := mapReader{"t": {"k": {Value: big, Version: 1}}}
	var muts []Mutation
	for range 20 {
		muts = append(muts, Mutation{Op: OpSetRange, Table: "t", Key: []byte("k"), Value: []byte("x")})
	}
	v := uint64(0)
	writes, _, err := Resolve(r, &Batch{Now: 1, Muts: muts}, func() uint64 { v++; return v })
	if !errors.Is(err, ErrBatchTooBig) || writes != nil {
		t.Fatalf("20 SETRANGEs of a 1 MiB value under a 4 MiB bound: %d writes, err %v; want none and ErrBatchTooBig",
			len(writes), err)
	}
	writes, res := resolve(t, r, muts[:3]...)
	if len(writes) != 1 || string(res[2].New.Value[:1]) != "x" {
		t.Fatalf("3 SETRANGEs under the bound: %d writes; want them applied", len(writes))
	}
	// The copies reads answer with are replies, not counted (a pipeline of SET and GET, or of SETBITs, whose
	// function rewrites the value between reads, holds a reply's worth each, as Redis's output buffer would).
	var pairs []Mutation
	for range 20 {
		pairs = append(pairs, Mutation{Op: OpSet, Table: "t", Key: []byte("k"), Value: big, Set: SetArgs{Blind: true}},
			Mutation{Op: OpGet, Table: "t", Key: []byte("k")})
	}
	if _, _, err := Resolve(r, &Batch{Now: 1, Muts: pairs}, func() uint64 { v++; return v }); err != nil {
		t.Fatalf("20 SETs and GETs of a 1 MiB value under a 4 MiB bound: %v", err)
	}
	_, res = resolve(t, mapReader{}, Mutation{Op: OpSetRange, Table: "t", Key: []byte("n"), Value: []byte("x"),
		Edit: EditArgs{Offset: 8 << 20}})
	if res[0].Err != nil || len(res[0].New.Value) != 8<<20+1 {
		t.Fatalf("one SETRANGE building 8 MiB under a 4 MiB bound: %v, %d bytes; want it built", res[0].Err,
			len(res[0].New.Value))
	}
}

// A batch that reads more than MaxBatchRead bytes of values from the engine (the same big value again and again, by
// key or as a collection's members) is refused whole, with nothing written; one read alone may pass the bound,
// and reads of the batch's own writes share one copy and are not counted.
func TestBatchThatReadsTooMuchIsRefused(t *testing.T) {
	defer func(old int) { MaxBatchRead = old }(MaxBatchRead)
	MaxBatchRead = 4 << 20
	big := bytes.Repeat([]byte("v"), 1<<20)
	r := mapReader{"t": {"k": {Value: big, Version: 1}}}
	var muts []Mutation
	for range 8 {
		muts = append(muts, Mutation{Op: OpGet, Table: "t", Key: []byte("k")})
	}
	muts = append(muts, Mutation{Op: OpSet, Table: "t", Key: []byte("w"), Value: []byte("x")})
	v := uint64(0)
	writes, _, err := Resolve(r, &Batch{Now: 1, Muts: muts}, func() uint64 { v++; return v })
	if !errors.Is(err, ErrBatchTooBig) || writes != nil {
		t.Fatalf("8 GETs of a 1 MiB value and a SET under a 4 MiB bound: %d writes, err %v; want none and ErrBatchTooBig",
			len(writes), err)
	}
	writes, res := resolve(t, r, append(muts[:3:3], muts[8])...)
	if len(writes) != 1 || len(res[2].New.Value) != 1<<20 {
		t.Fatalf("3 GETs and a SET under the bound: %d writes; want them applied", len(writes))
	}
	_, res = resolve(t, mapReader{"t": {"k": {Value: bytes.Repeat([]byte("v"), 8<<20), Version: 1}}}, muts[0])
	if res[0].Err != nil || len(res[0].New.Value) != 8<<20 {
		t.Fatalf("one GET of 8 MiB under a 4 MiB bound: %v; want it answered", res[0].Err)
	}
	var own []Mutation
	for range 20 {
		own = append(own, Mutation{Op: OpSet, Table: "t", Key: []byte("k"), Value: big, Set: SetArgs{Blind: true}},
			Mutation{Op: OpGet, Table: "t", Key: []byte("k")})
	}
	if _, _, err := Resolve(r, &Batch{Now: 1, Muts: own}, func() uint64 { v++; return v }); err != nil {
		t.Fatalf("20 SETs and GETs of a 1 MiB value under a 4 MiB bound: %v", err)
	}
}

// A collection's RENAME, COPY or MOVE builds a copy of every member: that counts against maxBuilt, so a batch of
// several COPYs of a big hash is refused whole (it took gigabytes), while one COPY alone still applies.
func TestCollectionCopiesCountAsBuilt(t *testing.T) {
	defer func(old int) { maxBuilt = old }(maxBuilt)
	maxBuilt = 4 << 20
	v := uint64(0)
	next := func() uint64 { v++; return v }
	w := rangeMap{mapReader{}} // members are read by range
	var fields []Mutation
	for i := range 4 { // a hash of 4 fields of 512 KiB: 2 MiB
		fields = append(fields, Mutation{Op: OpMemberSet, Table: "t", Key: []byte("h"),
			Coll: CollArgs{Kind: KindHash, Member: []byte{'f', byte('0' + i)}}, Value: bytes.Repeat([]byte("v"), 512<<10)})
	}
	writes, _, err := Resolve(w, &Batch{Now: 1, Muts: fields}, next)
	if err != nil {
		t.Fatal(err)
	}
	w.commit(writes)
	copyTo := func(dst string) Mutation {
		return Mutation{Op: OpCopy, Table: "t", Key: []byte("h"), Target: Target{Table: "t", Key: []byte(dst)}}
	}
	if _, res, err := Resolve(w, &Batch{Now: 1, Muts: []Mutation{copyTo("c0")}}, next); err != nil || res[0].Err != nil {
		t.Fatalf("one COPY of a 2 MiB hash under a 4 MiB bound: %v, %v", err, res)
	}
	writes, _, err = Resolve(w, &Batch{Now: 1, Muts: []Mutation{copyTo("c1"), copyTo("c2"), copyTo("c3")}}, next)
	if !errors.Is(err, ErrBatchTooBig) || writes != nil {
		t.Fatalf("three COPYs of a 2 MiB hash under a 4 MiB bound: %d writes, %v; want ErrBatchTooBig", len(writes), err)
	}

	// Each copied member's key holds the target's key: 100 one-byte fields copied to a 32 KiB name build 3.2 MiB
	// (a review: they counted 100 bytes, and a MULTI of such COPYs built gigabytes).
	var small []Mutation
	for i := range 100 {
		small = append(small, Mutation{Op: OpMemberSet, Table: "t", Key: []byte("s"),
			Coll: CollArgs{Kind: KindHash, Member: []byte{byte(i)}}, Value: []byte("v")})
	}
	writes, _, err = Resolve(w, &Batch{Now: 1, Muts: small}, next)
	if err != nil {
		t.Fatal(err)
	}
	w.commit(writes)
	long := func(c byte) Mutation {
		return Mutation{Op: OpCopy, Table: "t", Key: []byte("s"), Target: Target{Table: "t", Key: bytes.Repeat([]byte{c}, 32<<10)}}
	}
	writes, _, err = Resolve(w, &Batch{Now: 1, Muts: []Mutation{long('a'), long('b'), long('c')}}, next)
	if !errors.Is(err, ErrBatchTooBig) || writes != nil {
		t.Fatalf("three COPYs of 100 fields to 32 KiB names under a 4 MiB bound: %d writes, %v; want ErrBatchTooBig", len(writes), err)
	}
}
