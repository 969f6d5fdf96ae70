package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"anykv/internal/engine"
)

// RangeReverse lists what Range lists, backwards: committed items merged with the group's overlay (earlier
// batches' puts and deletes, which Pebble has not got yet), for ranges bounded or open at the end.
func TestRangeReverseIsRangeBackwards(t *testing.T) {
	s := open(t, nil, SyncAlways)
	for i := 0; i < 30; i += 2 {
		mustApply(t, s, set("t", fmt.Sprintf("k%02d", i), "v"))
	}
	mustApply(t, s, set("other", "k05", "v")) // another table: never listed
	rng := rand.New(rand.NewPCG(5, 1))
	prefix := appendTablePrefix(nil, "t")
	for round := 0; round < 200; round++ {
		w := &writer{s: s, keys: map[string]ovEntry{}}
		for i := rng.IntN(8); i > 0; i-- {
			k := string(prefix) + fmt.Sprintf("k%02d", rng.IntN(30))
			w.keys[k] = ovEntry{item: engine.Item{Value: []byte("o")}, deleted: rng.IntN(2) == 0}
		}
		r := engine.Range{Start: []byte(fmt.Sprintf("k%02d", rng.IntN(30)))}
		if rng.IntN(3) > 0 {
			r.End = []byte(fmt.Sprintf("k%02d", rng.IntN(31)))
		}
		list := func(read func(string, engine.Range, func([]byte, engine.Item) bool) error) (out []string) {
			if err := read("t", r, func(k []byte, it engine.Item) bool {
				out = append(out, string(k)+"="+string(it.Value))
				return true
			}); err != nil {
				t.Fatal(err)
			}
			return out
		}
		fwd, back := list(w.Range), list(w.RangeReverse)
		slices.Reverse(back)
		if !slices.Equal(fwd, back) {
			t.Fatalf("round %d, range %q-%q, overlay %v: forward %v, reverse (turned) %v", round, r.Start, r.End, w.keys, fwd, back)
		}
		if !slices.IsSortedFunc(fwd, strings.Compare) {
			t.Fatalf("round %d: forward not in order: %v", round, fwd)
		}
	}
}
