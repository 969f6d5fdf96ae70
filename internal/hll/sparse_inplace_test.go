package hll

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
)

// TestSparseSetOfSameLengthIsInPlace: a change of the sparse encoding that keeps its length (an XZERO of two
// registers becoming ZERO and VAL, or VAL and ZERO) is made in place, as Redis's hllSparseSet makes it. sparseSet
// built a new value each time: a crafted sparse string of 8192 such XZEROs followed by megabytes that no register
// reaches (Check reads only the header) cost a copy of the whole value per element PFADD added, 200 MiB of copying
// for 200 elements of a 1 MiB value, all inside the engine's writer.
func TestSparseSetOfSameLengthIsInPlace(t *testing.T) {
	v := make([]byte, HeaderSize, HeaderSize+2*Registers/2+1<<20)
	copy(v, "HYLL")
	v[4] = Sparse
	v[15] = 0x80
	for range Registers / 2 {
		v = append(v, xzero(2)...)
	}
	body := len(v)
	v = append(v, make([]byte, 1<<20)...) // never reached: the XZEROs cover every register
	if err := Check(v); err != nil {
		t.Fatal(err)
	}
	var elems [][]byte
	for i := range 200 {
		elems = append(elems, []byte("e"+strconv.Itoa(i)))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, updated, err := Add(v, elems, SparseMaxBytes)
	runtime.ReadMemStats(&after)
	if err != nil || !updated {
		t.Fatalf("Add: updated %v, %v", updated, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4*uint64(len(v)) {
		t.Errorf("Add of %d elements to a %d-byte sparse value allocated %d bytes; want about one copy of it", len(elems), len(v), n)
	}
	// The same registers as the same elements give on the value without its tail, and the tail as it was.
	want, _, err := Add(v[:body], elems, SparseMaxBytes)
	if err != nil || len(got) != len(want)+len(v)-body || !bytes.Equal(got[:len(want)], want) || !bytes.Equal(got[len(want):], v[body:]) {
		t.Errorf("%d bytes, %v; want the %d bytes of the value without its tail, then the tail", len(got), err, len(want))
	}
}
