package hll

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
)

// The hashes are those of Redis's own MurmurHash64A (hyperloglog.c, compiled with gcc) with the HLL seed; the
// registers and counts are what redis-server 7.0.15's PFDEBUG DECODE shows after PFADD of the one element.
var hashes = []struct {
	in    string
	hash  uint64
	index int
	count uint8
}{
	{"", 0xd8dfea6585bc9732, 5938, 2},
	{"a", 0x53d2470a9b43b1a7, 12711, 2},
	{"hello", 0x0f656f01eecfe400, 9216, 1},
	{"foo-1", 0x52949767c444d298, 4760, 1},
	{"0123456789abcdef", 0x9f8565428eaa573d, 5949, 1},
	{"the quick brown fox", 0xa9b9ed93197d7db3, 15795, 1},
}

func TestMurmurHash64AAndPatLen(t *testing.T) {
	for _, c := range hashes {
		if h := MurmurHash64A([]byte(c.in), seed); h != c.hash {
			t.Errorf("MurmurHash64A(%q) = %#x, want %#x", c.in, h, c.hash)
		}
		if i, n := PatLen([]byte(c.in)); i != c.index || n != c.count {
			t.Errorf("PatLen(%q) = %d, %d, want %d, %d", c.in, i, n, c.index, c.count)
		}
		v, _, err := Add(nil, [][]byte{[]byte(c.in)}, SparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Z:%d v:%d,1 Z:%d", c.index, c.count, Registers-1-c.index)
		if got := Decode(v); got != want {
			t.Errorf("Decode after adding %q = %q, want %q", c.in, got, want)
		}
	}
}

// TestPatLenRange: the run of zeros is counted over the Q bits above the index, ending at the forced bit Q.
func TestPatLenRange(t *testing.T) {
	seen := map[uint8]bool{}
	for i := 0; i < 200000; i++ {
		_, n := PatLen([]byte(strconv.Itoa(i)))
		if n < 1 || n > Q+1 {
			t.Fatalf("count %d out of 1..%d", n, Q+1)
		}
		seen[n] = true
	}
	for n := uint8(1); n <= 12; n++ {
		if !seen[n] {
			t.Errorf("no element of 200000 had count %d", n)
		}
	}
}

func TestDenseRegisters(t *testing.T) {
	regs := make([]byte, DenseSize-HeaderSize)
	for i := 0; i < Registers; i++ {
		denseSet(regs, i, uint8((i*7+3)%64))
	}
	for i := 0; i < Registers; i++ {
		if got := denseGet(regs, i); got != uint8((i*7+3)%64) {
			t.Fatalf("register %d = %d, want %d", i, got, (i*7+3)%64)
		}
	}
	// Redis's layout: register 0 in the low 6 bits of byte 0, register 1 in its top 2 bits and the next byte's low 4.
	regs = make([]byte, 3)
	denseSet(regs, 1, 0x3f)
	if !bytes.Equal(regs, []byte{0xc0, 0x0f, 0}) {
		t.Errorf("register 1 = 63 packs as % x", regs)
	}
}

func elems(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(prefix + strconv.Itoa(i))
	}
	return out
}

func TestEmptyAndNew(t *testing.T) {
	v := New()
	if len(v) != 18 || Check(v) != nil || !IsSparse(v) || Decode(v) != "Z:16384" {
		t.Fatalf("New() = % x", v)
	}
	if n, err := Count(v); err != nil || n != 0 {
		t.Fatalf("Count(New()) = %d, %v", n, err)
	}
	v, updated, err := Add(nil, nil, SparseMaxBytes)
	if err != nil || !updated {
		t.Fatalf("Add(nil, nil) = %v, %v", updated, err)
	}
	if _, ok := Cached(v); ok {
		t.Error("a created value's cache is valid")
	}
	if n, _ := Count(v); n != 0 {
		t.Errorf("empty count %d", n)
	}
}

func TestAccuracy(t *testing.T) {
	const n = 100000
	v, _, err := Add(nil, elems("e", n), SparseMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if IsSparse(v) || len(v) != DenseSize {
		t.Fatalf("100000 elements left the value sparse (%d bytes)", len(v))
	}
	c, err := Count(v)
	if err != nil {
		t.Fatal(err)
	}
	if e := math.Abs(float64(c)-n) / n; e > 0.02 {
		t.Errorf("count %d of %d distinct: error %.2f%%", c, n, 100*e)
	}
	for _, small := range []int{1, 10, 100, 1000} {
		v, _, _ := Add(nil, elems("s", small), SparseMaxBytes)
		c, _ := Count(v)
		if e := math.Abs(float64(c)-float64(small)) / float64(small); e > 0.05 {
			t.Errorf("count %d of %d distinct", c, small)
		}
	}
}

// TestSparseMatchesDense: the same elements in a sparse and a dense value give the same registers and count,
// and the sparse value turns dense once it passes SparseMaxBytes.
func TestSparseMatchesDense(t *testing.T) {
	for _, n := range []int{0, 1, 5, 50, 300, 1000, 3000} {
		s, _, err := Add(nil, elems("x", n), SparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := ToDense(New())
		d, _, err = Add(d, elems("x", n), SparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		cs, err1 := Count(s)
		cd, err2 := Count(d)
		if err1 != nil || err2 != nil || cs != cd {
			t.Errorf("%d elements: sparse count %d (%v), dense %d (%v)", n, cs, err1, cd, err2)
		}
		sd, _, err := ToDense(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sd[HeaderSize:], d[HeaderSize:]) {
			t.Errorf("%d elements: sparse registers differ from dense", n)
		}
		if IsSparse(s) && len(s) > SparseMaxBytes {
			t.Errorf("%d elements: sparse value of %d bytes", n, len(s))
		}
		if n <= 300 && !IsSparse(s) {
			t.Errorf("%d elements: already dense", n)
		}
		if n == 3000 && IsSparse(s) {
			t.Errorf("3000 elements: still sparse (%d bytes)", len(s))
		}
		// The union with itself and with nothing is itself.
		var m Max
		if err := m.Merge(s); err != nil {
			t.Fatal(err)
		}
		if err := m.Merge(d); err != nil {
			t.Fatal(err)
		}
		if m.Count() != cd {
			t.Errorf("%d elements: union count %d, want %d", n, m.Count(), cd)
		}
		st, err := m.Store(nil, false, SparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := Count(st); c != cd {
			t.Errorf("%d elements: stored union counts %d, want %d", n, c, cd)
		}
	}
}

// TestSmallMaxPromotes: a sparse value turns dense as soon as a split would take it past maxBytes.
func TestSmallMaxPromotes(t *testing.T) {
	v, _, _ := Add(nil, elems("a", 11), 3000)
	if !IsSparse(v) {
		t.Fatal("dense after 11 elements")
	}
	v, _, _ = Add(v, [][]byte{[]byte("new_element")}, 30)
	if IsSparse(v) {
		t.Fatal("still sparse past 30 bytes")
	}
}

// TestBigRegisterPromotes: a register above 32 does not fit a VAL opcode: the value turns dense.
func TestBigRegisterPromotes(t *testing.T) {
	v := New()
	v, changed, err := sparseSet(v, 100, 33, SparseMaxBytes)
	if err != nil || !changed || IsSparse(v) || RegisterValues(v)[100] != 33 {
		t.Fatalf("sparseSet 33: changed %v, err %v, sparse %v", changed, err, IsSparse(v))
	}
}

// TestSparseSetCases walks Redis's hllSparseSet cases by hand: XZERO and ZERO splits (a run over 64 zeros stays
// XZERO), a VAL split, a ZERO of one replaced, a lower count ignored, and adjacent equal VALs merged.
func TestSparseSetCases(t *testing.T) {
	v := New()
	steps := []struct {
		index int
		count uint8
		want  string
	}{
		{0, 3, "v:3,1 Z:16383"},
		{1, 3, "v:3,2 Z:16382"},
		{100, 2, "v:3,2 Z:98 v:2,1 Z:16283"},
		{50, 5, "v:3,2 z:48 v:5,1 z:49 v:2,1 Z:16283"},
		{1, 2, "v:3,2 z:48 v:5,1 z:49 v:2,1 Z:16283"},
		{2, 3, "v:3,3 z:47 v:5,1 z:49 v:2,1 Z:16283"},
		{1, 4, "v:3,1 v:4,1 v:3,1 z:47 v:5,1 z:49 v:2,1 Z:16283"},
		{5, 1, "v:3,1 v:4,1 v:3,1 z:2 v:1,1 z:44 v:5,1 z:49 v:2,1 Z:16283"},
		{4, 1, "v:3,1 v:4,1 v:3,1 z:1 v:1,2 z:44 v:5,1 z:49 v:2,1 Z:16283"},
		{3, 1, "v:3,1 v:4,1 v:3,1 v:1,3 z:44 v:5,1 z:49 v:2,1 Z:16283"},
	}
	for _, s := range steps {
		var err error
		v, _, err = sparseSet(v, s.index, s.count, SparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := Decode(v); got != s.want {
			t.Fatalf("after register %d = %d: %q, want %q", s.index, s.count, got, s.want)
		}
		if _, err := sparseHisto(v); err != nil {
			t.Fatalf("after %+v: %v", s, err)
		}
	}
}

func mustDense(t *testing.T, v []byte) []byte {
	t.Helper()
	d, _, err := ToDense(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCheck(t *testing.T) {
	good, _, _ := Add(nil, elems("c", 10), SparseMaxBytes)
	dense := mustDense(t, good)
	bad := map[string][]byte{
		"empty":       {},
		"short":       good[:15],
		"magic":       append([]byte("HYLX"), good[4:]...),
		"encoding 2":  append(append([]byte("HYLL"), 2), good[5:]...),
		"dense short": dense[:DenseSize-1],
		"dense long":  append(append([]byte(nil), dense...), 0),
		"sparse as dense": func() []byte {
			b := append([]byte(nil), good...)
			b[4] = Dense
			return b
		}(),
	}
	for name, v := range bad {
		if err := Check(v); !errors.Is(err, ErrNotHLL) {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
	for _, v := range [][]byte{good, dense, New()} {
		if err := Check(v); err != nil {
			t.Errorf("Check(% x...) = %v", v[:8], err)
		}
	}
}

func TestCorruptSparse(t *testing.T) {
	good, _, _ := Add(nil, elems("c", 3), SparseMaxBytes)
	cases := map[string][]byte{
		"tail":      append(append([]byte(nil), good...), "hello"...),
		"truncated": good[:len(good)-1],
		"no ops":    good[:HeaderSize],
		"short run": append(append([]byte(nil), good[:HeaderSize]...), 0x40, 0x00),
		"val past end": append(append(append([]byte(nil), good[:HeaderSize]...), xzero(Registers-1)...),
			valOp(3, 4)),
	}
	for name, v := range cases {
		if _, err := Count(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Count = %v", name, err)
		}
		var m Max
		if err := m.Merge(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Merge = %v", name, err)
		}
		if _, _, err := ToDense(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ToDense = %v", name, err)
		}
	}
	// Adding to the corrupt tail: the element's register is past the opcodes' end (Redis's hllSparseSet error).
	v := append(append([]byte(nil), good[:HeaderSize]...), xzero(100)...)
	if _, _, err := Add(v, [][]byte{[]byte("a")}, SparseMaxBytes); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Add past the opcodes: %v", err)
	}
}

func TestCache(t *testing.T) {
	v, _, _ := Add(nil, elems("k", 5), SparseMaxBytes)
	if _, ok := Cached(v); ok {
		t.Fatal("cache valid after PFADD")
	}
	c, _ := Count(v)
	w := SetCached(v, 12345)
	if n, _ := Count(w); n != 12345 {
		t.Errorf("a valid cache is answered: %d", n)
	}
	w, updated, _ := Add(w, elems("k", 5), SparseMaxBytes)
	if updated {
		t.Error("re-adding changed registers")
	}
	if n, _ := Count(w); n != 12345 {
		t.Error("an add that changed nothing invalidated the cache")
	}
	w, updated, _ = Add(w, [][]byte{[]byte("new")}, SparseMaxBytes)
	if n, _ := Count(w); !updated || n != c+1 {
		t.Errorf("after a new element: updated %v, count %d, want %d", updated, n, c+1)
	}
}

func TestDecode(t *testing.T) {
	v := append(append([]byte(nil), New()[:HeaderSize]...), zeroOp(10), valOp(32, 4), valOp(1, 1))
	v = append(v, xzero(Registers-15)...)
	if got, want := Decode(v), "z:10 v:32,4 v:1,1 Z:16369"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
	if got, want := Decode(append(v, 0x40)), "z:10 v:32,4 v:1,1 Z:16369 Z:1"; got != want {
		t.Errorf("Decode with a cut XZERO = %q, want %q", got, want)
	}
}

// FuzzDecode feeds arbitrary values to every reader and writer: an error, never a panic, and what reads as valid
// stays consistent (its count, its dense form and its union agree).
func FuzzDecode(f *testing.F) {
	sparse, _, _ := Add(nil, elems("f", 40), SparseMaxBytes)
	f.Add(New())
	f.Add(sparse)
	f.Add(mustDenseF(sparse))
	f.Add(append(append([]byte(nil), sparse...), "hello"...))
	f.Add(append(append([]byte(nil), New()[:HeaderSize]...), 0x40))
	f.Add(append(append([]byte(nil), New()[:HeaderSize]...), 0x7f, 0xff, 0xff, 0x80))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00"))
	f.Add([]byte("not an hll"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if Check(v) != nil {
			return
		}
		_ = Decode(v)
		n, cerr := Count(SetStale(v))
		var m Max
		merr := m.Merge(v)
		d, _, derr := ToDense(v)
		if (merr == nil) != (derr == nil) {
			t.Fatalf("Merge %v, ToDense %v", merr, derr)
		}
		if cerr == nil && derr == nil {
			if c, _ := Count(SetStale(d)); c != n || m.Count() != n {
				t.Fatalf("count %d, dense %d, union %d", n, c, m.Count())
			}
		}
		if derr == nil {
			if _, err := m.Store(v, false, SparseMaxBytes); err != nil {
				t.Fatal(err)
			}
		}
		w, _, err := Add(v, [][]byte{[]byte("a"), []byte("b"), []byte("zz")}, SparseMaxBytes)
		if err == nil && Check(w) != nil {
			t.Fatalf("Add made an invalid value % x", w)
		}
		if err == nil && cerr == nil && derr == nil && !cutXZero(v) {
			if _, err := Count(w); err != nil {
				t.Fatalf("Add to a valid value made it corrupt: %v", err)
			}
		}
	})
}

// cutXZero reports whether the sparse value v ends in half an XZERO opcode (Redis reads the missing byte as 0,
// and a split of that opcode writes past the value's end: the result may well be corrupt, in Redis too).
func cutXZero(v []byte) bool {
	if v[4] != Sparse {
		return false
	}
	p := HeaderSize
	for p < len(v) {
		if isXZero(v[p]) {
			if p == len(v)-1 {
				return true
			}
			p += 2
		} else {
			p++
		}
	}
	return false
}

// SetStale returns a copy of v whose cached cardinality is invalid, so that Count computes it.
func SetStale(v []byte) []byte {
	out := append([]byte(nil), v...)
	invalidate(out)
	return out
}

func mustDenseF(v []byte) []byte {
	d, _, err := ToDense(v)
	if err != nil {
		panic(err)
	}
	return d
}
