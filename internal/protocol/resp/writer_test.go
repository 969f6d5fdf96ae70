package resp

import (
	"math"
	"strconv"
	"testing"
)

func TestWriterProto(t *testing.T) {
	var w Writer
	if w.Proto() != 2 {
		t.Fatalf("zero Writer speaks RESP%d", w.Proto())
	}
	w.Null()
	w.SetProto(3)
	w.Null()
	w.SetProto(7)
	w.NullArray()
	if got := string(w.Bytes()); got != "$-1\r\n_\r\n*-1\r\n" || w.Len() != len(got) || w.Proto() != 2 {
		t.Fatalf("got %q (proto %d)", got, w.Proto())
	}
	w.Reset()
	if w.Len() != 0 || len(w.Bytes()) != 0 {
		t.Fatal("Reset left bytes")
	}
}

func TestWriterDropsHugeBuffer(t *testing.T) {
	w := NewWriter(2)
	w.Bulk(make([]byte, 2<<20))
	w.Reset()
	if cap(w.Bytes()) > dropAbove {
		t.Fatalf("kept %d bytes", cap(w.Bytes()))
	}
}

func TestWriterDoesNotAllocate(t *testing.T) {
	val := []byte("value")
	for _, proto := range []int{2, 3} {
		w := NewWriter(proto)
		run := func() {
			w.Reset()
			w.ArrayHeader(3)
			w.Bulk(val)
			w.BulkString("s")
			w.Int(-1234567)
			w.MapHeader(1)
			w.SimpleString("OK")
			w.Double(math.Pi)
			w.Double(math.Inf(-1))
			w.Bool(true)
			w.Null()
			w.Error("ERR x\r\ny")
			w.Verbatim("txt", "hello")
		}
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Fatalf("RESP%d: %v allocations", proto, n)
		}
	}
}

// TestDoubleRoundTrips checks the text of a double reads back as the same
// value, for values across the whole range.
func TestDoubleRoundTrips(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1.0 / 3, math.Pi * 1e16, math.Pi * 1e17, 1e-4, 9.99e-5,
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, 123456789012345678} {
		txt := string(appendDouble(nil, f))
		back, err := strconv.ParseFloat(txt, 64)
		if err != nil || back != f {
			t.Fatalf("%v formatted as %q reads back as %v (%v)", f, txt, back, err)
		}
	}
}
