package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/rdb"
	"anykv/internal/servertest"
)

// lzfString is a DUMP payload of a string of 1+264×k bytes of 'a', LZF-compressed: 3 bytes of payload per 264
// bytes of value, LZF's most (Redis's DUMP compresses repeated bytes the same way).
func lzfString(k int) []byte {
	c := []byte{0, 'a'} // a literal 'a', then back references of 264 bytes at distance 1
	for range k {
		c = append(c, 0xe0, 255, 0)
	}
	b := rdb.AppendLen([]byte{rdb.TypeString, 0xc3}, uint64(len(c)))
	b = rdb.AppendLen(b, uint64(1+264*k))
	return rdb.Finish(append(b, c...))
}

// TestRESPRestoresStayWithinBudget: 20 connections each pipeline 16 RESTOREs of a 380 KB payload that decodes to
// a 32 MiB string (6 MB of request, 512 MiB decoded, each connection). A batch holds what its RESTOREs decoded
// until it runs, and those values count against --maxmemory-clients: RSS stays within the bound of the other
// hostile-client tests, another client is served meanwhile, and the memory goes back after. The key exists, so
// every RESTORE that runs answers BUSYKEY and nothing is written: only what the batches hold is measured. Without
// the accounting the decoded values counted nowhere, only against the 256 MiB per batch, and 20 connections held
// gigabytes.
func TestRESPRestoresStayWithinBudget(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: budgetArgs(testBudget)})
	other, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	roundTrip(t, other, "SET small v\r\n", "+OK\r\n")
	roundTrip(t, other, "SET busy v\r\n", "+OK\r\n")

	const pipelined = 16
	p := lzfString(32 * mib / 264)
	var pipe bytes.Buffer
	for range pipelined {
		fmt.Fprintf(&pipe, "*4\r\n$7\r\nRESTORE\r\n$4\r\nbusy\r\n$1\r\n0\r\n$%d\r\n%s\r\n", len(p), p)
	}

	base := rss(t, s.PID())
	stop := make(chan struct{})
	peak := watchRSS(t, s.PID(), stop)
	var wg sync.WaitGroup
	replies := make([]string, hogs)
	conns := make([]net.Conn, hogs)
	for i := range conns {
		c, err := net.Dial("tcp", s.RESP)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	for i, c := range conns {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Write(pipe.Bytes())
		}()
		go func() { // every reply, or until the server closes the connection
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			var got []byte
			buf := make([]byte, 4096)
			for strings.Count(string(got), "\r\n") < pipelined {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			replies[i] = string(got)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	serveWhile(t, done, other, "GET small\r\n", "$1\r\nv\r\n")
	close(stop)
	pk := peak()
	busy, refused := 0, 0
	for _, r := range replies {
		busy += strings.Count(r, "BUSYKEY")
		if strings.Contains(r, "maxmemory-clients") {
			refused++
		}
	}
	t.Logf("RSS peak %d MiB from %d MiB; %d RESTOREs ran (BUSYKEY), %d of %d clients refused", pk/mib, base/mib,
		busy, refused, hogs)
	if pk > base+testBudget+rssHeadroom {
		t.Fatalf("RSS reached %d MiB from %d MiB with a %d MiB budget", pk/mib, base/mib, testBudget/mib)
	}
	if busy == 0 {
		t.Fatal("no RESTORE ran")
	}
	for _, c := range conns {
		c.Close()
	}
	waitRSSBelow(t, s, base+rssRecovered)
	roundTrip(t, other, "GET small\r\n", "$1\r\nv\r\n")
}
