package memcache

import (
	"bytes"
	"strings"
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

// FuzzSession feeds an arbitrary text-protocol stream to a connection, then a line end and "mn", and requires
// the connection to be still answering: a malformed request gets its error and the next request its reply. The
// inputs that may legitimately leave the connection unable to answer "mn" are only checked not to panic: a
// storage command (its data block may swallow "mn"), quit, an HTTP request line, a binary-protocol stream, and a
// line over memcached's limit, all of which close the connection or wait for more.
func FuzzSession(f *testing.F) {
	for _, s := range []string{
		"get a b c\r\ngets a\r\ngat 10 a\r\ngats -1 a b\r\n",
		"mg k v c f t k O123 q\r\nmd k q\r\nma n N0 J5 D2 MI\r\nme k\r\nmn\r\n",
		"mg a2V5 b v\r\nmg !!!! b\r\nma k M+ MI\r\nmg k T-1 N99999999999999999999\r\n",
		"incr n 18446744073709551615\r\ndecr n -1\r\ntouch k 10 noreply\r\ndelete k 0\r\n",
		"flush_all 10\r\nflush_all noreply\r\nverbosity 1\r\nversion\r\nstats slabs\r\nstats detail on\r\n",
		"\x00get a\r\nget \x00\r\n\r\n \r\nGET a\r\nmg\r\nmg  k\r\n",
		"mg k k k\r\nmg k vv\r\nmg k O" + strings.Repeat("x", 40) + "\r\nmd k C1 I T30 x\r\n",
		"cache_memlimit 100\r\nlru_crawler metadump all\r\nwatch\r\nmisbehave\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte("stats"), []byte("statz"))
		out := serveScript(data, []byte("\r\nmn\r\n"))
		if len(data) > 0 && data[0] == binaryRequestMagic {
			return
		}
		for _, s := range []string{"set", "add", "replace", "append", "prepend", "cas", "ms", "quit", "HTTP/"} {
			if bytes.Contains(data, []byte(s)) {
				return
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) > maxLineLen {
				return
			}
		}
		if !bytes.HasSuffix(out, []byte("MN\r\n")) {
			t.Fatalf("input %q: the connection did not answer mn after it; replies %q", data, out)
		}
	})
}
