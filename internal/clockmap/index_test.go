package clockmap

import (
	"math/rand/v2"
	"testing"
)

// TestIndexAgreesWithAMap runs random puts, deletions and lookups against a Go map, with hashes drawn so that
// many share a home slot and probes wrap around the table's end, and checks every slot's invariant after each
// step: an entry sits at or after its home with no empty slot between.
func TestIndexAgreesWithAMap(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		var x index[int]
		ref := map[uint64]*Entry[int]{}
		// Few distinct top bits (the home), and low bits to tell hashes apart: runs of colliding homes.
		hash := func() uint64 { return r.Uint64N(8)<<61 | r.Uint64N(1<<8) }
		for step := 0; step < 3000; step++ {
			h := hash()
			switch op := r.IntN(10); {
			case op < 5:
				if ref[h] == nil {
					e := &Entry[int]{hash: h}
					x.put(h, e)
					ref[h] = e
				}
			case op < 8:
				x.del(h)
				delete(ref, h)
			default:
				if got, want := x.get(h), ref[h]; got != want {
					t.Fatalf("seed %d step %d: get(%#x) = %p, want %p", seed, step, h, got, want)
				}
			}
			if step%8 == 0 || x.n < 32 { // every step while small; a full walk of every slot after each step took 14 s under -race
				checkIndex(t, &x, ref)
			}
		}
		checkIndex(t, &x, ref)
		for h := range ref {
			x.del(h)
		}
		if x.n != 0 || x.get(hash()) != nil {
			t.Fatalf("seed %d: %d entries left after deleting all", seed, x.n)
		}
	}
}

func checkIndex(t *testing.T, x *index[int], ref map[uint64]*Entry[int]) {
	t.Helper()
	if x.n != len(ref) {
		t.Fatalf("n = %d, want %d", x.n, len(ref))
	}
	if x.n > 0 && x.n*4 > len(x.slots)*3 {
		t.Fatalf("%d entries in %d slots: over 3/4", x.n, len(x.slots))
	}
	mask := len(x.slots) - 1
	held := 0
	for i, s := range x.slots {
		if s.e == nil {
			continue
		}
		held++
		if ref[s.h] != s.e {
			t.Fatalf("slot %d holds %#x, not the reference's entry", i, s.h)
		}
		for j := x.home(s.h); j != i; j = (j + 1) & mask {
			if x.slots[j].e == nil {
				t.Fatalf("slot %d holds %#x whose home %d is before an empty slot %d", i, s.h, x.home(s.h), j)
			}
		}
	}
	if held != x.n {
		t.Fatalf("%d slots used, n = %d", held, x.n)
	}
}

// BenchmarkIndexGet: lookups of present hashes in an index of 10,000 entries.
func BenchmarkIndexGet(b *testing.B) {
	var x index[int]
	hs := make([]uint64, 10000)
	for i := range hs {
		hs[i] = rand.Uint64()
		x.put(hs[i], &Entry[int]{hash: hs[i]})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if x.get(hs[i%len(hs)]) == nil {
			b.Fatal("missing")
		}
	}
}
