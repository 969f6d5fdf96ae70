package redis

import (
	"fmt"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestBlockingPops: a BLPOP with nothing to pop waits and is answered by a push from another connection; BRPOP
// times out with a null; BLMOVE and BZPOPMIN are woken the same way; inside MULTI a blocking pop answers at once.
func TestBlockingPops(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waiter := ts.client(t, &goredis.Options{ReadTimeout: -1})
	other := ts.client(t, nil)

	got := make(chan []string, 1)
	go func() {
		v, err := waiter.BLPop(ctx, 0, "q1", "q2").Result()
		if err != nil {
			v = []string{"error", err.Error()}
		}
		got <- v
	}()
	waitBlocked(t, ts, 1)
	other.RPush(ctx, "q2", "job")
	if v := <-got; len(v) != 2 || v[0] != "q2" || v[1] != "job" {
		t.Fatalf("BLPOP = %v", v)
	}
	if other.Exists(ctx, "q2").Val() != 0 {
		t.Fatal("the popped list still exists")
	}

	if _, err := waiter.BRPop(ctx, time.Second, "empty").Result(); err != goredis.Nil {
		t.Fatalf("BRPOP on an empty list: %v, want a null", err)
	}

	moved := make(chan string, 1)
	go func() { moved <- waiter.BLMove(ctx, "src", "dst", "LEFT", "RIGHT", 0).Val() }()
	waitBlocked(t, ts, 1)
	other.LPush(ctx, "src", "x")
	if v := <-moved; v != "x" || other.LIndex(ctx, "dst", 0).Val() != "x" {
		t.Fatalf("BLMOVE = %q, dst %v", v, other.LRange(ctx, "dst", 0, -1).Val())
	}

	zgot := make(chan *goredis.ZWithKey, 1)
	go func() { zgot <- waiter.BZPopMin(ctx, 0, "z").Val() }()
	waitBlocked(t, ts, 1)
	other.ZAdd(ctx, "z", goredis.Z{Score: 2, Member: "b"}, goredis.Z{Score: 1, Member: "a"})
	if v := <-zgot; v == nil || v.Key != "z" || v.Member != "a" || v.Score != 1 {
		t.Fatalf("BZPOPMIN = %+v", v)
	}

	cmds, err := other.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.BLPop(ctx, 0, "never")
		return nil
	})
	if err != nil && err != goredis.Nil || len(cmds) != 1 || cmds[0].Err() != goredis.Nil {
		t.Fatalf("BLPOP in MULTI: %v %v", cmds, err)
	}
}

// waitBlocked waits until n connections are blocked: their first try found nothing and they wait.
func waitBlocked(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	// Counted in blocked_clients once its first try found nothing: a registration alone (waiters.n) comes
	// before that try, and a test that changes the key then races the try.
	for ts.h.waiters.clients.Load() < n {
		if time.Now().After(deadline) {
			t.Fatal("no connection blocked")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitUnregistered waits until no client is registered as waiting for a key, failing with what after 5 s.
func waitUnregistered(t *testing.T, ts *testServer, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.h.waiters.n.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBlockedClientThatLeavesIsForgotten: a client that disconnects while blocked forever stops waiting (its
// registration goes) instead of holding a goroutine until the server stops.
func TestBlockedClientThatLeavesIsForgotten(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("BLPOP gone 0\r\n"))
	waitBlocked(t, ts, 1)
	c.Close()
	waitUnregistered(t, ts, "the departed client is still registered as blocked")
}

// TestPushToABlockedClientThatLeftKeepsTheElement: a client blocks in BLPOP (or BZPOPMIN) and closes its
// connection; a push right after must stay in the list, not be popped for a client that is gone (lost in 10 of
// 10 trials in the audit, where the departure was noticed only at the next 200 ms tick; Redis loses none).
func TestPushToABlockedClientThatLeftKeepsTheElement(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	for i, block := range []string{"BLPOP q 0", "BZPOPMIN z 0"} {
		b, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write([]byte(block + "\r\n"))
		waitBlocked(t, ts, 1)
		b.Close()
		time.Sleep(10 * time.Millisecond) // the FIN reaches the server; its tick comes much later
		if i == 0 {
			c.LPush(ctx, "q", "job")
			time.Sleep(50 * time.Millisecond) // a pop for the departed client would have happened by now
			if n := c.LLen(ctx, "q").Val(); n != 1 {
				t.Fatalf("after a push to a departed BLPOP client the list holds %d elements, want 1", n)
			}
		} else {
			c.ZAdd(ctx, "z", goredis.Z{Score: 1, Member: "job"})
			time.Sleep(50 * time.Millisecond)
			if n := c.ZCard(ctx, "z").Val(); n != 1 {
				t.Fatalf("after a ZADD to a departed BZPOPMIN client the set holds %d members, want 1", n)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for ts.h.waiters.n.Load() != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

// TestInfoCountsBlockedClients: INFO's blocked_clients counts the connections waiting in a blocking pop (what
// Redis's own tests and monitoring poll to know a client blocked), and drops back once they are served.
func TestInfoCountsBlockedClients(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waiter := ts.client(t, &goredis.Options{ReadTimeout: -1})
	other := ts.client(t, nil)
	if v := infoField(t, other, "clients", "blocked_clients"); v != "0" {
		t.Fatalf("blocked_clients before = %q", v)
	}
	other.RPush(ctx, "ready", "x")
	if v := waiter.BLPop(ctx, 0, "ready").Val(); len(v) != 2 || infoField(t, other, "clients", "blocked_clients") != "0" {
		t.Fatalf("a pop that did not wait: %v, blocked_clients %s", v, infoField(t, other, "clients", "blocked_clients"))
	}
	got := make(chan []string, 1)
	go func() { got <- waiter.BLPop(ctx, 0, "q").Val() }()
	deadline := time.Now().Add(5 * time.Second)
	for infoField(t, other, "clients", "blocked_clients") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("blocked_clients never became 1")
		}
		time.Sleep(time.Millisecond)
	}
	other.RPush(ctx, "q", "job")
	<-got
	if v := infoField(t, other, "clients", "blocked_clients"); v != "0" {
		t.Fatalf("blocked_clients after = %q", v)
	}
}

// TestBlockedPopSkipsKeyOfOtherType: a BLPOP already waiting is not answered WRONGTYPE when its key briefly
// becomes a string (Redis serves blocked clients only from lists); it waits on and pops the next push.
func TestBlockedPopSkipsKeyOfOtherType(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waiter := ts.client(t, &goredis.Options{ReadTimeout: -1})
	other := ts.client(t, nil)
	got := make(chan []string, 1)
	go func() {
		v, err := waiter.BLPop(ctx, 0, "q").Result()
		if err != nil {
			v = []string{"error", err.Error()}
		}
		got <- v
	}()
	waitBlocked(t, ts, 1)
	if _, err := other.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.LPush(ctx, "q", "a")
		p.Del(ctx, "q")
		p.Set(ctx, "q", "foo", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	other.Del(ctx, "q")
	other.LPush(ctx, "q", "b")
	if v := <-got; len(v) != 2 || v[0] != "q" || v[1] != "b" {
		t.Fatalf("BLPOP = %v, want [q b]", v)
	}
}

// TestBlockedXReadSkipsKeyOfOtherType: as BLPOP, a waiting XREAD BLOCK passes over its key while it holds
// another type, and answers once a stream is back with new entries.
func TestBlockedXReadSkipsKeyOfOtherType(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	waiter := ts.client(t, &goredis.Options{ReadTimeout: -1})
	other := ts.client(t, nil)
	got := make(chan string, 1)
	go func() {
		v, err := waiter.XRead(ctx, &goredis.XReadArgs{Streams: []string{"s", "0-0"}, Block: 0}).Result()
		switch {
		case err != nil:
			got <- "error " + err.Error()
		case len(v) != 1 || len(v[0].Messages) != 1:
			got <- fmt.Sprint(v)
		default:
			got <- v[0].Messages[0].ID
		}
	}()
	waitBlocked(t, ts, 1)
	if _, err := other.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.XAdd(ctx, &goredis.XAddArgs{Stream: "s", ID: "1-0", Values: []string{"f", "v"}})
		p.Del(ctx, "s")
		p.Set(ctx, "s", "foo", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	other.Del(ctx, "s")
	other.XAdd(ctx, &goredis.XAddArgs{Stream: "s", ID: "2-0", Values: []string{"f", "v"}})
	if v := <-got; v != "2-0" {
		t.Fatalf("XREAD BLOCK = %s, want the entry 2-0", v)
	}
}

// waitParked waits until n blocked connections wait for a wake (not trying).
func waitParked(t *testing.T, ts *testServer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w := &ts.h.waiters
		w.mu.Lock()
		parked := map[*blocked]bool{}
		for _, bs := range w.m {
			for b := range bs {
				if b.parked {
					parked[b] = true
				}
			}
		}
		w.mu.Unlock()
		if len(parked) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections parked, want %d", len(parked), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPushServesBlockedChainFirst: as in Redis ("Linked LMOVEs" in its list tests), a push that serves a
// blocked BLMOVE, whose own push serves another, is answered only after both were served: right after RPUSH the
// element has moved through list2 to list3. Before, the blocked clients were served after the push's reply, and
// list1 or list2 still held it. A woken connection sleeps 20 ms before it tries again, so that the old order
// loses every time rather than only a race.
func TestPushServesBlockedChainFirst(t *testing.T) {
	beforeRetry = func() { time.Sleep(20 * time.Millisecond) }
	t.Cleanup(func() { beforeRetry = func() {} })
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for i := 0; i < 5; i++ {
		rd1 := ts.client(t, &goredis.Options{ReadTimeout: -1})
		rd2 := ts.client(t, &goredis.Options{ReadTimeout: -1})
		done := make(chan string, 2)
		go func() { done <- rd1.BLMove(ctx, "list1", "list2", "RIGHT", "LEFT", 0).Val() }()
		waitParked(t, ts, 1)
		go func() { done <- rd2.BLMove(ctx, "list2", "list3", "LEFT", "RIGHT", 0).Val() }()
		waitParked(t, ts, 2)
		c.RPush(ctx, "list1", "foo")
		l1, l2, l3 := c.LRange(ctx, "list1", 0, -1).Val(), c.LRange(ctx, "list2", 0, -1).Val(), c.LRange(ctx, "list3", 0, -1).Val()
		if len(l1) != 0 || len(l2) != 0 || fmt.Sprint(l3) != "[foo]" {
			t.Fatalf("round %d, right after RPUSH: list1 %v, list2 %v, list3 %v; want [] [] [foo]", i, l1, l2, l3)
		}
		if a, b := <-done, <-done; a != "foo" || b != "foo" {
			t.Fatalf("round %d: BLMOVEs answered %q and %q", i, a, b)
		}
		c.Del(ctx, "list3")
	}
}

// TestBlockedMoveCycleDoesNotDeadlock: BLMOVE a→b and BLMOVE b→a are both blocked; a push to a serves the first,
// whose push to b serves the second, whose push to a finds the first trying already and does not wait for it.
// With the wait bound raised to a minute, a wait in a cycle would hold RPUSH for that minute.
func TestBlockedMoveCycleDoesNotDeadlock(t *testing.T) {
	old := wakeWait
	wakeWait = time.Minute
	t.Cleanup(func() { wakeWait = old })
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	rd1 := ts.client(t, &goredis.Options{ReadTimeout: -1})
	rd2 := ts.client(t, &goredis.Options{ReadTimeout: -1})
	done := make(chan string, 2)
	go func() { done <- rd1.BLMove(ctx, "a", "b", "LEFT", "LEFT", 0).Val() }()
	waitParked(t, ts, 1)
	go func() { done <- rd2.BLMove(ctx, "b", "a", "LEFT", "LEFT", 0).Val() }()
	waitParked(t, ts, 2)
	began := time.Now()
	c.RPush(ctx, "a", "x")
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("RPUSH took %v: a wake waited in a cycle", took)
	}
	if a, b := <-done, <-done; a != "x" || b != "x" {
		t.Fatalf("BLMOVEs answered %q and %q", a, b)
	}
	if l := c.LRange(ctx, "a", 0, -1).Val(); fmt.Sprint(l) != "[x]" || c.Exists(ctx, "b").Val() != 0 {
		t.Fatalf("a = %v, b exists %d; want [x] and gone", l, c.Exists(ctx, "b").Val())
	}
}

// TestBlockedClientsServedInOrder: clients blocked on one list are served first come, first served, one element
// each, as Redis serves them; the one left over stays blocked until the next push. Woken all at once they would
// race for the elements (each round has a 1 in 6 chance of the right order by luck: ten rounds).
func TestBlockedClientsServedInOrder(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for round := 0; round < 10; round++ {
		got := make([]chan string, 3)
		for i := range got {
			got[i] = make(chan string, 1)
			w := ts.client(t, &goredis.Options{ReadTimeout: -1})
			go func() {
				v, err := w.BLPop(ctx, 0, "q").Result()
				if err != nil {
					got[i] <- err.Error()
					return
				}
				got[i] <- v[1]
			}()
			waitParked(t, ts, i+1)
		}
		c.RPush(ctx, "q", "a", "b")
		recv := func(i int) string {
			select {
			case v := <-got[i]:
				return v
			case <-time.After(5 * time.Second):
				return "nothing"
			}
		}
		if a, b := recv(0), recv(1); a != "a" || b != "b" {
			t.Fatalf("round %d: first two blocked got %q and %q, want a and b", round, a, b)
		}
		select {
		case v := <-got[2]:
			t.Fatalf("round %d: the third was served %q with the list empty", round, v)
		default:
		}
		c.RPush(ctx, "q", "c")
		if v := recv(2); v != "c" {
			t.Fatalf("round %d: third got %q, want c", round, v)
		}
	}
}

// TestRepliesBeforeABlockedCommandGoOut: the replies of the commands pipelined before a blocking one go out when
// it blocks, as Redis sends them, and a served blocking command's reply goes out when the next one blocks: bee-
// queue sends two BRPOPLPUSHes on one connection, and its delayed job waited for the next push (about 5 s) with
// the first one served and its reply held back.
func TestRepliesBeforeABlockedCommandGoOut(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	a, b, c := ts.raw(t), ts.raw(t), ts.raw(t)
	a.send("PING\r\nBLPOP nokey 5\r\n")
	start := time.Now()
	if got := a.reply(); got != "+PONG\r\n" || time.Since(start) > 2*time.Second {
		t.Fatalf("PING before a blocked BLPOP: %q after %v, want +PONG at once", got, time.Since(start))
	}
	c.send("BRPOPLPUSH src dst 0\r\nBRPOPLPUSH src dst 0\r\n")
	time.Sleep(100 * time.Millisecond) // both arrived: the first blocks
	b.send("LPUSH src x\r\n")
	b.reply()
	start = time.Now()
	if got := c.reply(); got != "$1\r\nx\r\n" || time.Since(start) > 2*time.Second {
		t.Fatalf("the served BRPOPLPUSH: %q after %v, want x at once", got, time.Since(start))
	}
	b.send("LPUSH src y\r\n")
	b.reply()
	if got := c.reply(); got != "$1\r\ny\r\n" {
		t.Fatalf("the second BRPOPLPUSH: %q", got)
	}
}
