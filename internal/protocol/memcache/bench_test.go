package memcache

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var benchAddr = flag.String("bench-addr", "", "run the benchmarks against this server (e.g. a memcached) "+
	"instead of an in-process anykv, to compare")

// benchServer returns the address to benchmark: an in-process anykv, or -bench-addr.
func benchServer(b *testing.B) string {
	if *benchAddr != "" {
		return *benchAddr
	}
	return startServer(b, realClock).addr
}

// The benchmarks talk to an in-process server (memstore) over a real loopback connection, so they measure
// the parser, the connection loop and the kv layer, not the disk. Allocations are counted process-wide, so
// allocs/op includes the server's.

func BenchmarkGet(b *testing.B)          { benchGet(b, 1, false) }
func BenchmarkGetPipelined(b *testing.B) { benchGet(b, 16, false) }

// BenchmarkMetaGet measures mg hits (mg <key> v f), which also read the item's stampede annotation.
func BenchmarkMetaGet(b *testing.B)          { benchGet(b, 1, true) }
func BenchmarkMetaGetPipelined(b *testing.B) { benchGet(b, 16, true) }
func BenchmarkSet(b *testing.B)              { benchSet(b, 1) }
func BenchmarkSetPipelined(b *testing.B)     { benchSet(b, 16) }

// benchGet reads depth keys per round trip, with get or (meta) with mg.
func benchGet(b *testing.B, depth int, meta bool) {
	c := benchConn(b, benchServer(b))
	value := bytes.Repeat([]byte("v"), 32)
	var load, req, reply bytes.Buffer
	for i := range depth {
		fmt.Fprintf(&load, "set key:%04d 0 0 %d noreply\r\n%s\r\n", i, len(value), value)
		if meta {
			fmt.Fprintf(&req, "mg key:%04d v f\r\n", i)
			fmt.Fprintf(&reply, "VA %d f0\r\n%s\r\n", len(value), value)
		} else {
			fmt.Fprintf(&req, "get key:%04d\r\n", i)
			fmt.Fprintf(&reply, "VALUE key:%04d 0 %d\r\n%s\r\nEND\r\n", i, len(value), value)
		}
	}
	load.WriteString("mn\r\n")
	roundTrip(b, c, load.Bytes(), 4)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += depth {
		got := roundTrip(b, c, req.Bytes(), reply.Len())
		if done == 0 && !bytes.Equal(got, reply.Bytes()) {
			b.Fatalf("reply %q", got)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func benchSet(b *testing.B, depth int) {
	c := benchConn(b, benchServer(b))
	value := bytes.Repeat([]byte("v"), 32)
	var req bytes.Buffer
	for i := range depth {
		fmt.Fprintf(&req, "set key:%04d 0 0 %d\r\n%s\r\n", i, len(value), value)
	}
	n := depth * len("STORED\r\n")
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += depth {
		roundTrip(b, c, req.Bytes(), n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func benchConn(b *testing.B, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

var replyBuf = make([]byte, 1<<20)

// roundTrip writes req and reads exactly n reply bytes.
func roundTrip(b *testing.B, c net.Conn, req []byte, n int) []byte {
	if _, err := c.Write(req); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, replyBuf[:n]); err != nil {
		b.Fatal(err)
	}
	return replyBuf[:n]
}

// BenchmarkMemcslap runs libmemcached's memcslap (get and set tests, 4 threads) against the server and reports
// its throughput.
func BenchmarkMemcslap(b *testing.B) {
	addr := benchServer(b)
	for _, test := range []string{"set", "get"} {
		b.Run(test, func(b *testing.B) {
			n := max(b.N, 1000)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			path, err := exec.LookPath("memcslap")
			if err != nil {
				b.Fatalf("memcslap not found: install the Debian package libmemcached-tools (%v)", err)
			}
			out, err := exec.CommandContext(ctx, path, "--servers="+addr, "--test="+test, "--concurrency=4",
				"--execute-number="+strconv.Itoa(n/4)).CombinedOutput()
			if err != nil {
				b.Fatalf("memcslap: %v\n%s", err, out)
			}
			m := regexp.MustCompile(`Time to (?:get|set) +(\d+) keys by +\d+ threads: +([0-9.]+) seconds`).FindSubmatch(out)
			if m == nil {
				b.Fatalf("memcslap output: %s", out)
			}
			keys, _ := strconv.Atoi(string(m[1]))
			secs, _ := strconv.ParseFloat(string(m[2]), 64)
			b.ReportMetric(float64(keys)/secs, "ops/s")
		})
	}
}
