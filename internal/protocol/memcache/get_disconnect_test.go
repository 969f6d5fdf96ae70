package memcache

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestGetStopsWhenClientLeaves: a get whose key list names one large item many times is answered value by
// value (spill); once the client has gone, writing fails, and the rest of the key list must not be read and
// copied anyway. Before, the loop went on to the last key: a 2 MiB line ("get b b b ...", a million keys of a
// 1 MiB item) kept a core busy for minutes after the client disconnected, held its connection slot, and kept
// SIGTERM from stopping the server (Shutdown waits for the handler past --shutdown-timeout).
func TestGetStopsWhenClientLeaves(t *testing.T) {
	ts := startServer(t)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	value := bytes.Repeat([]byte{'x'}, 1<<20)
	c.Write([]byte("set b 0 0 1048576\r\n"))
	c.Write(value)
	c.Write([]byte("\r\n"))
	if line, _ := bufio.NewReader(c).ReadString('\n'); line != "STORED\r\n" {
		t.Fatalf("set: %q", line)
	}

	const keys = 1000
	g, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	line := append([]byte("get"), bytes.Repeat([]byte(" b"), keys)...)
	g.Write(append(line, '\r', '\n'))
	io.ReadFull(g, make([]byte, 1<<20)) // the reply has begun
	g.(*net.TCPConn).SetLinger(0)       // reset: the server's next writes fail at once
	g.Close()
	left := time.Now()

	counts := ts.h.conns.Load()
	for counts.Current.Load() > 1 { // the first connection is still open
		if time.Since(left) > time.Minute {
			t.Fatal("the get's connection did not end within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The finished connection has published its counters: how many of the keys were read and copied.
	if hits := ts.h.stats[sGetHits].Load(); hits > keys/4 {
		t.Fatalf("%d of the %d keys were read after the client had gone (the get ended %v after it left)",
			hits, keys, time.Since(left).Round(time.Millisecond))
	}
}
