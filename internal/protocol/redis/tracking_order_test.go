package redis

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// Client-side caching's ordering: a cached value never outlives a write without an invalidation.

// TestTrackedCacheStaysFresh: a RESP3 client that caches its GETs as client-side caching does (a value from a
// reply, dropped at its key's invalidation) never keeps a stale value while other clients write the key: once
// they stop, what it has cached is what the server has. Both as a plain GET and as rueidis reads in OPTIN mode
// (CLIENT CACHING YES, then GET in a transaction). This fails if an invalidation can overtake the reply of a
// read that saw the older value (TestTrackingRegistersBeforeTheRead covers the registration's side).
func TestTrackedCacheStaysFresh(t *testing.T) {
	for _, mode := range []struct{ on, read string }{
		{"CLIENT TRACKING ON", "GET k"},
		{"CLIENT TRACKING ON OPTIN", "CLIENT CACHING YES\r\nMULTI\r\nGET k\r\nEXEC"},
	} {
		t.Run(mode.on, func(t *testing.T) { trackedCacheStaysFresh(t, mode.on, mode.read) })
	}
}

func trackedCacheStaysFresh(t *testing.T, on, read string) {
	ts := startServer(t, Options{}, 0)
	rc, check := ts.raw(t), ts.raw(t)
	rc.send("HELLO 3\r\n" + on + "\r\n")
	rc.reply()
	rc.reply()
	replies := strings.Count(read, "\r\n") + 1
	valid, val := false, ""
	// next reads until a reply that is not a push, dropping the cached value at each invalidation of k.
	next := func() string {
		for {
			r := rc.reply()
			if !strings.HasPrefix(r, ">") {
				return r
			}
			valid = false
		}
	}
	for round := 0; round < 4; round++ {
		done := make(chan struct{})
		var writers sync.WaitGroup
		for i := 0; i < 2; i++ {
			wc := ts.raw(t)
			writers.Add(1)
			go func() {
				defer writers.Done()
				for j := 0; j < 300; j++ {
					wc.c.Write([]byte("INCR k\r\n"))
					if _, err := wc.r.ReadString('\n'); err != nil {
						return
					}
				}
			}()
		}
		go func() { writers.Wait(); close(done) }()
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			default:
			}
			if valid {
				rc.send("PING\r\n") // the invalidations that came meanwhile
				next()
				continue
			}
			rc.send(read + "\r\n")
			var r string
			for i := 0; i < replies; i++ {
				r = next()
			}
			valid, val = true, strings.TrimPrefix(r, "*1\r\n")
		}
		rc.send("PING\r\n")
		next()
		check.send("GET k\r\n")
		if now := check.reply(); valid && val != now {
			t.Fatalf("round %d: the cache holds %q, the server %q", round, val, now)
		}
	}
}

// pausingEngine holds the next Get, once armed, after it read and before it returns, until told to go on.
type pausingEngine struct {
	engine.Engine
	armed        atomic.Bool
	read, resume chan struct{}
}

func (p *pausingEngine) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := p.Engine.Get(ctx, table, key, now)
	if p.armed.CompareAndSwap(true, false) {
		p.read <- struct{}{}
		<-p.resume
	}
	return it, err
}

// TestTrackingRegistersBeforeTheRead: a write that lands after a tracked GET read the old value, but before the
// GET answered, still sends the invalidation, after the GET's reply. (Registering the key once the read is done
// would miss that write, and the client would keep the old value.)
func TestTrackingRegistersBeforeTheRead(t *testing.T) {
	e := &pausingEngine{Engine: memstore.New(), read: make(chan struct{}), resume: make(chan struct{})}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	rc, w := ts.raw(t), ts.raw(t)
	w.send("SET k old\r\n")
	w.reply()
	rc.send("HELLO 3\r\nCLIENT TRACKING ON\r\n")
	rc.reply()
	rc.reply()
	e.armed.Store(true)
	rc.send("GET k\r\n")
	<-e.read
	w.send("SET k new\r\n")
	if r := w.reply(); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	close(e.resume)
	if r := rc.reply(); r != "$3\r\nold\r\n" {
		t.Fatalf("GET: %q", r)
	}
	if r := rc.reply(); r != push("k")+"\r\n" {
		t.Fatalf("after the GET: %q, want the invalidation of k", r)
	}
}
