package memcache

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"anykv/internal/engine"
)

// TestCachedumpCopiesNoValues: `stats cachedump 1 1` lists one key and its size, yet it scans pages of 128
// items with their values copied (kv.Query without KeysOnly). Values written over HTTP or RESP may be 64 MiB
// each, so one such line costs up to 128 x 64 MiB = 8 GiB: on the real server 32 items of 64 MiB took the process
// from 0.1 GB to 2.2 GB for a one-line answer. What the dump allocates should not depend on the values' size.
func TestCachedumpCopiesNoValues(t *testing.T) {
	ts := startServer(t)
	value := bytes.Repeat([]byte{'v'}, 4<<20)
	for i := range 16 { // 64 MiB in all
		res := ts.store.Apply1(t.Context(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: fmt.Appendf(nil, "k%02d", i), Value: value})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	value = nil
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c.Write([]byte("stats cachedump 1 1\r\n"))
	var reply []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		reply = append(reply, line)
		if line == "END\r\n" {
			break
		}
	}
	runtime.ReadMemStats(&after)
	if want := "ITEM k00 [4194304 b; 0 s]\r\n"; len(reply) != 2 || reply[0] != want {
		t.Fatalf("reply %q, want %q and END", strings.Join(reply, ""), want)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 8<<20 {
		t.Fatalf("a one-line cachedump allocated %d MiB (the table holds 64 MiB of values)", allocated>>20)
	}
}
