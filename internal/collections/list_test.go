package collections

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// TestRangeValuesIsRange: LRANGE's packed reply (RangeValues) holds exactly the elements Range reads, in order,
// for random ranges over lists pushed at both ends with values of every length, empty ones included; a missing
// key reads nothing and another kind answers WRONGTYPE.
func TestRangeValuesIsRange(t *testing.T) {
	st := memstore.New()
	rng := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < 300; i++ {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, rng.IntN(300)) // up to 299 bytes: two-byte lengths too
		applyOne(t, st, Push("t", []byte("l"), rng.IntN(2) == 0, false, v))
	}
	for step := 0; step < 500; step++ {
		start, stop := int64(rng.IntN(700)-350), int64(rng.IntN(700)-350)
		key := []byte("l")
		if step%50 == 0 {
			key = []byte("missing")
		}
		want := applyOne(t, st, Range("t", key, start, stop))
		got := applyOne(t, st, RangeValues("t", key, start, stop))
		if want.Err != nil || got.Err != nil {
			t.Fatalf("LRANGE %d %d: %v / %v", start, stop, want.Err, got.Err)
		}
		var vs [][]byte
		for v, rest, ok := NextValue(got.New.Value); ok; v, rest, ok = NextValue(rest) {
			vs = append(vs, v)
		}
		if len(vs) != len(want.Members) || CountValues(got.New.Value) != len(vs) {
			t.Fatalf("LRANGE %s %d %d: %d packed, %d members", key, start, stop, len(vs), len(want.Members))
		}
		for i, m := range want.Members {
			if !bytes.Equal(vs[i], m.Item.Value) {
				t.Fatalf("LRANGE %d %d: element %d is %q, want %q", start, stop, i, vs[i], m.Item.Value)
			}
		}
	}
	applyOne(t, st, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("s"), Value: []byte("x")})
	if r := applyOne(t, st, RangeValues("t", []byte("s"), 0, -1)); r.Err != engine.ErrWrongType {
		t.Fatalf("LRANGE of a string: %v", r.Err)
	}
	if _, _, ok := NextValue([]byte{5, 'a'}); ok {
		t.Fatal("a length past the end read as an element")
	}
}
