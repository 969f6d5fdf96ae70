package redis

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/readyield"

	goredis "github.com/redis/go-redis/v9"
)

// forceYield keeps readyield's latest wake-up fresh, so every connection yields before each read, until stop.
func forceYield(t *testing.T) {
	prev := runtime.GOMAXPROCS(1) // readyield acts on one core only
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			readyield.Read(0, readyield.Now(), 0) // a "read" that lasted since the epoch: a wake-up now
			time.Sleep(50 * time.Microsecond)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	time.Sleep(150 * time.Millisecond) // readyield reads the core count again at most every 100 ms
}

// TestYieldBeforeEveryReadKeepsSessionsWorking: with every read preceded by a yield, request-reply, blocking
// pops, pub/sub, MONITOR, CLIENT PAUSE, QUIT and a client's EOF behave as without.
func TestYieldBeforeEveryReadKeepsSessionsWorking(t *testing.T) {
	forceYield(t)
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 4})
	for i := 0; i < 200; i++ {
		if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, "k").Int(); err != nil || v != i {
			t.Fatalf("GET after SET %d: %d %v", i, v, err)
		}
	}
	// BLPOP woken by a push of another connection.
	got := make(chan []string, 1)
	go func() { r, _ := c.BLPop(ctx, 5*time.Second, "l").Result(); got <- r }()
	time.Sleep(20 * time.Millisecond)
	c.RPush(ctx, "l", "x")
	select {
	case r := <-got:
		if len(r) != 2 || r[1] != "x" {
			t.Fatalf("BLPOP: %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("BLPOP not woken")
	}
	// pub/sub
	sub := c.Subscribe(ctx, "ch")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		c.Publish(ctx, "ch", "m")
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if m, err := sub.ReceiveMessage(cctx); err != nil || m.Payload != "m" {
			t.Fatalf("message %d: %v %v", i, m, err)
		}
		cancel()
	}
	// MONITOR
	mon := ts.raw(t)
	mon.expect("+OK\r\n", "MONITOR")
	c.Set(ctx, "mk", "mv", 0)
	if line := mon.reply(); !containsAll(strings.ToLower(line), "\"set\"", "\"mk\"") {
		t.Fatalf("monitor line %q", line)
	}
	// CLIENT PAUSE WRITE: the write waits, then runs.
	p := ts.raw(t)
	p.expect("+OK\r\n", "CLIENT", "PAUSE", "100", "WRITE")
	start := time.Now()
	p.expect("+OK\r\n", "SET", "pk", "pv")
	if time.Since(start) < 50*time.Millisecond {
		t.Fatalf("SET during a WRITE pause answered after %v", time.Since(start))
	}
	// QUIT and EOF close the connections.
	q := ts.raw(t)
	q.expect("+OK\r\n", "QUIT")
	if !q.closed() {
		t.Fatal("QUIT did not close")
	}
	e := ts.raw(t)
	e.expect("+PONG\r\n", "PING")
	e.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.h.mu.Lock()
		n := len(ts.h.sessions)
		ts.h.mu.Unlock()
		if n <= 6 || time.Now().After(deadline) { // the pool, the subscriber, mon, p
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
