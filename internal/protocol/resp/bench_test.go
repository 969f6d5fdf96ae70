package resp

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParsePipelinedSet parses batches of 16 pipelined
// `SET key:NNNN <100 bytes>`, as one read of a pipelining client delivers.
func BenchmarkParsePipelinedSet(b *testing.B) {
	var batch []byte
	val := strings.Repeat("x", 100)
	for i := range 16 {
		batch = append(batch, multibulk("SET", fmt.Sprintf("key:%04d", i), val)...)
	}
	p := NewParser(DefaultLimits())
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		p.Feed(batch)
		for {
			args, err := p.Next()
			if err != nil {
				b.Fatal(err)
			}
			if args == nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/cmd")
}

// BenchmarkParseInline parses batches of 16 inline `SET key:NNNN value`.
func BenchmarkParseInline(b *testing.B) {
	var batch []byte
	for i := range 16 {
		batch = fmt.Appendf(batch, "SET key:%04d %s\r\n", i, strings.Repeat("x", 100))
	}
	p := NewParser(DefaultLimits())
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		p.Feed(batch)
		for {
			args, err := p.Next()
			if err != nil {
				b.Fatal(err)
			}
			if args == nil {
				break
			}
		}
	}
}

// BenchmarkWriterBulk writes the replies to a batch of 16 GETs of 100-byte
// values, then resets as a flush would.
func BenchmarkWriterBulk(b *testing.B) {
	val := []byte(strings.Repeat("x", 100))
	w := NewWriter(2)
	b.SetBytes(int64(16 * (len(val) + 8)))
	b.ReportAllocs()
	for b.Loop() {
		for range 16 {
			w.Bulk(val)
		}
		w.Reset()
	}
}
