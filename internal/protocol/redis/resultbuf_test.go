package redis

import (
	"strings"
	"testing"
	"unsafe"

	"anykv/internal/engine"
)

// TestBigReadsResultsAreNotKept: one big read (an MGET of 50,000 keys, alone and split around a write) leaves an
// idle connection no results array of its size (the review found 19.5 MiB kept until the connection closed).
func TestBigReadsResultsAreNotKept(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	const n = 50000
	var b strings.Builder
	b.WriteString("*" + itoa(n+1) + "\r\n$4\r\nMGET\r\n")
	for range n {
		b.WriteString("$1\r\nk\r\n")
	}
	b.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n") // the same read, split around a write
	rc.send(b.String())
	rc.reply()
	rc.reply()
	rc.send(b.String()[:strings.Index(b.String(), "*3\r\n$3\r\nSET")]) // MGET alone: readDirect
	rc.reply()
	rc.send("PING\r\n")
	rc.reply()
	ts.h.mu.Lock()
	defer ts.h.mu.Unlock()
	for _, s := range ts.h.sessions {
		d, sp := cap(s.direct.buf), cap(s.split.buf)
		sz := int(unsafe.Sizeof(engine.Result{}))
		t.Logf("idle connection keeps direct=%d split=%d results (%d bytes each): %d KiB", d, sp, sz, (d+sp)*sz/1024)
		if (d+sp)*sz > 1<<20 {
			t.Errorf("an idle connection keeps %d KiB of result arrays", (d+sp)*sz/1024)
		}
	}
}
