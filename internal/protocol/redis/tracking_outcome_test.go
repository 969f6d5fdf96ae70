package redis

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/kv"
)

// TestTrackingInvalidatesAfterUnknownOutcome: over the Redis engine, an INCR whose commit ran but whose answer
// was lost is answered as an unknown outcome, and the key changed. A client that tracks the key (client-side
// caching) must be told, as for any write of it: no invalidation was sent, so the client kept serving the value
// from before the INCR for as long as it held the key.
func TestTrackingInvalidatesAfterUnknownOutcome(t *testing.T) {
	target := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	var armed atomic.Int32
	ran := make(chan struct{}, 1)
	// The second EVALSHA after arming is the INCR's commit (the first, its read): its answer is cut.
	addr := remotetest.Proxy(t, target, remotetest.CutAnswer(func(req []byte) bool {
		return bytes.Contains(bytes.ToLower(req), []byte("evalsha")) && armed.Load() > 0 && armed.Add(-1) == 0
	}, ran))
	e, err := redisstore.Open(context.Background(), "redis://"+addr+"/0?prefix=track:")
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOver(t, e, kv.Options{}, Options{RemoteEngine: true}, 100)
	w := ts.raw(t)
	w.send("SET n 1\r\n")
	if r := w.reply(); r != "+OK\r\n" {
		t.Fatal(r)
	}
	r3 := ts.raw(t)
	for _, cmd := range []string{"HELLO 3", "CLIENT TRACKING ON"} {
		r3.send(cmd + "\r\n")
		r3.reply()
	}
	r3.send("GET n\r\n")
	if r := r3.reply(); r != "$1\r\n1\r\n" {
		t.Fatalf("GET n = %q", r)
	}
	armed.Store(2)
	w.send("INCR n\r\n")
	reply := w.reply()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("the commit never reached the proxy armed to cut it (INCR: %q)", reply)
	}
	if !strings.HasPrefix(reply, "-") {
		t.Fatalf("INCR whose answer was lost replied %q, want an error", reply)
	}
	w.send("GET n\r\n")
	if r := w.reply(); r != "$1\r\n2\r\n" {
		t.Fatalf("after the INCR of unknown outcome GET n = %q, want 2 (the test relies on the commit having run)", r)
	}
	r3.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	if err := readValue(r3.r, &b); err != nil {
		t.Fatalf("INCR %q changed n (now 2) and the client tracking n was sent no invalidation (%v): its cache keeps 1",
			strings.TrimSpace(reply), err)
	}
	if want := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nn\r\n"; b.String() != want {
		t.Fatalf("tracking client got %q, want %q", b.String(), want)
	}
}
