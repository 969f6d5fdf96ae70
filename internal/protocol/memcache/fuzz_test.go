package memcache

import (
	"bytes"
	"testing"
)

// FuzzSplit feeds a session to a connection whole, then split at k, then in 7-byte reads, and requires the
// same replies byte for byte: the parser and the batching loop must not depend on how reads split the stream.
// "stats" is rewritten first, since its figures (CPU time, batch counts) legitimately differ between runs (a
// binary session that may hold a stat request is skipped for the same reason).
// Seeds live in testdata/fuzz/FuzzSplit; run `go test -fuzz FuzzSplit` to search further.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"set a 0 0 1\r\nx\r\nget a\r\n",
		"ms k 2 T0 F1 c\r\nhi\r\nmg k v c f t k\r\nmn\r\n",
		"set a 0 0 5000\r\nxx\r\nget a\r\n",
		"incr n 1\r\nset n 0 0 1\r\n9\r\nincr n 1\r\ndecr n 20\r\nma n v\r\n",
		"mg q q\r\nms q 1 q\r\nx\r\nmd q q\r\nmn\r\n",
		"gat 10 a b\r\ncas a 0 0 1 1\r\ny\r\ngets a\r\n",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, k uint16) {
		data = bytes.ReplaceAll(data, []byte("stats"), []byte("statz"))
		if len(data) > 0 && data[0] == binaryRequestMagic && bytes.IndexByte(data, opStat) >= 0 {
			t.Skip("may hold a binary stat request, whose figures differ between runs")
		}
		cut := int(k) % (len(data) + 1)
		whole := serveScript(data)
		split := serveScript(data[:cut], data[cut:])
		if !bytes.Equal(whole, split) {
			t.Fatalf("input %q split at %d:\nwhole %q\nsplit %q", data, cut, whole, split)
		}
		var chunks [][]byte
		for rest := data; len(rest) > 0; {
			n := min(7, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		if small := serveScript(chunks...); !bytes.Equal(whole, small) {
			t.Fatalf("input %q in 7-byte reads:\nwhole %q\nsmall %q", data, whole, small)
		}
	})
}
