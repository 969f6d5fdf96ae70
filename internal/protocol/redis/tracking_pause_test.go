package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// TestTrackingInvalidatesAPausedClient: a tracking client whose command waits in CLIENT PAUSE gets the
// invalidation of a write that is not paused (memcached's, HTTP's: they write through the store) at once, as a
// client blocked in BLPOP does, not when the pause ends: the writer has its answer, and a client-side cache kept
// serving the old value for as long as the pause lasted.
func TestTrackingInvalidatesAPausedClient(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	t3, w := ts.raw(t), ts.raw(t)
	do := func(rc *rawConn, cmd string) string { rc.send(cmd + "\r\n"); return rc.reply() }
	do(t3, "HELLO 3")
	do(t3, "CLIENT TRACKING ON")
	if r := do(t3, "GET k"); r != "_\r\n" {
		t.Fatalf("GET k: %q", r)
	}
	do(w, "CLIENT PAUSE 20000 WRITE")
	t3.send("SET x 1\r\n") // waits for the pause
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(do(w, "INFO clients"), "blocked_clients:1\r\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("SET x is not paused")
		}
	}
	// A memcached client's set of k: it is not paused, and it is answered.
	if r := ts.store.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: kv.DefaultTable, Key: []byte("k"), Value: []byte("v")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := t3.replyWithin(2 * time.Second); r != push("k")+"\r\n" {
		t.Fatalf("while paused: %q, want the invalidation of k", r)
	}
	do(w, "CLIENT UNPAUSE")
	if r := t3.reply(); r != "+OK\r\n" {
		t.Fatalf("SET x after the pause: %q", r)
	}
}
