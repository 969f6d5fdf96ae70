package redis

import (
	"testing"
	"time"
)

// TestIdleTimeout: CONFIG SET timeout closes a client idle in a read for longer than it, as Redis does, and not a
// subscriber or a client blocked in BLPOP; 0 closes none (redis-py's own suite sets it: it was refused as
// immutable).
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin, idle, sub, blocked := ts.raw(t), ts.raw(t), ts.raw(t), ts.raw(t)
	admin.send("CONFIG SET timeout 10\r\nCONFIG GET timeout\r\n")
	if got := admin.reply() + admin.reply(); got != "+OK\r\n*2\r\n$7\r\ntimeout\r\n$2\r\n10\r\n" {
		t.Fatalf("CONFIG SET/GET timeout: %q", got)
	}
	idle.send("PING\r\n")
	idle.reply()
	sub.send("SUBSCRIBE ch\r\n")
	sub.reply()
	blocked.send("BLPOP k 0\r\n")
	ts.advance(5e9) // 5 s: idle for less than the timeout
	admin.send("CONFIG SET timeout 10\r\n")
	admin.reply()
	sleepSweep()
	idle.send("PING\r\n")
	if got := idle.reply(); got != "+PONG\r\n" {
		t.Fatalf("a client idle for 5 s of 10: %q", got)
	}
	ts.advance(11e9)
	sleepSweep()
	if !idle.closed() {
		t.Fatal("a client idle for 11 s of 10 is still open")
	}
	if !admin.closed() {
		t.Fatal("the admin, idle for 11 s of 10 too, is still open")
	}
	admin = ts.raw(t)
	admin.send("CONFIG SET timeout 0\r\n") // no timeout: the rest stay
	if got := admin.reply(); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout 0: %q", got)
	}
	sub.send("PING\r\n")
	if got := sub.reply(); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
		t.Fatalf("the subscriber: %q", got)
	}
	admin.send("RPUSH k v\r\n")
	admin.reply()
	if got := blocked.reply(); got != "*2\r\n$1\r\nk\r\n$1\r\nv\r\n" {
		t.Fatalf("the blocked client: %q", got)
	}
	ts.advance(100e9)
	sleepSweep()
	admin.send("PING\r\n")
	if got := admin.reply(); got != "+PONG\r\n" {
		t.Fatalf("with timeout 0, an idle client: %q", got)
	}
}

// sleepSweep waits for two sweeps of the idle clients.
func sleepSweep() { time.Sleep(2*idleSweepEvery + 100*time.Millisecond) }
