package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
)

// TestBigValueIsNotCopiedBeforeItsRoom: a GET of a big value that finds no room in maxmemory-clients is refused by
// the engine before it copies the value out (engine.ValueGate), waits, and copies it once, with room. Before,
// every read copied its value first and only then found no room (30 GETs of a 60 MiB value: 1.8 GB copied while
// the budget held 1 GiB). MGET and memcached's get (TestBigGetIsNotCopiedBeforeItsRoom) go the same way.
func TestBigValueIsNotCopiedBeforeItsRoom(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	e := &enginetest.Copies{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	_, run := pipelineOn(s)
	run("SET", "big", strings.Repeat("v", 1<<20))
	for _, read := range [][]string{{"GET", "big"}, {"MGET", "big", "nothing"}} {
		e.N.Store(0)
		othersHold(t, budget, 3<<19, 300*time.Millisecond, nil) // 1.5 MiB free: less than the value and its reply
		start := time.Now()
		run(read...)
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Fatalf("%s ran in %v, before there was room", read[0], took)
		}
		if n := e.N.Load(); n != 1 {
			t.Errorf("%s copied the value %d times, want once (with room)", read[0], n)
		}
	}
	if h := s.acct.Held(); h != 0 {
		t.Fatalf("after the replies the reader holds %d bytes", h)
	}
}

// TestBigReadsWaitForRoomInTheBudget: a read of a big value reserves the value and its reply (twice its size)
// from maxmemory-clients until the reply is written, and while other clients' replies fill the budget it waits
// for them rather than holding the value uncounted or closing the connection. Before, each of 30 clients' GET of
// a 60 MiB string held its value and a copy in its reply outside the budget (3.9 GB RSS for a 1 GiB budget, 12
// clients closed when their replies found no room; 30 MGETs of four such values took 23 GB).
func TestBigReadsWaitForRoomInTheBudget(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	_, run := pipelineOn(s)
	run("SET", "big", strings.Repeat("v", 1<<20))

	const hold = 300 * time.Millisecond
	var heldWhileReading atomic.Int64
	othersHold(t, budget, 3<<19, hold, func() { heldWhileReading.Store(budget.Used()) })
	start := time.Now()
	run("GET", "big")
	if took := time.Since(start); took < hold {
		t.Fatalf("a GET of 1 MiB (2 MiB with its reply) ran in %v with 1.5 MiB of the budget free", took)
	}
	if heldWhileReading.Load() != 3<<19 {
		t.Fatalf("while it waited the budget held %d bytes, want only the others' 1.5 MiB", heldWhileReading.Load())
	}
	if s.closing {
		t.Fatal("the reader was closed instead of waiting")
	}
	if h := s.acct.Held(); h != 0 {
		t.Fatalf("after the reply the reader still holds %d bytes", h)
	}
	// Once there is room it reads at once, and gives the room back after its reply.
	start = time.Now()
	run("MGET", "big", "big", "big")
	if took := time.Since(start); took > time.Second || s.acct.Held() != 0 || budget.Used() != 0 {
		t.Fatalf("MGET with the budget free took %v and left %d bytes held", took, budget.Used())
	}
}

// TestCollectionReadsWaitForRoomInTheBudget: what a batch's reads of collections hold (HGETALL, LRANGE, a
// script's reads) counts against maxmemory-clients as big plain reads do, through the engine's Batch.Reserve: the
// read waits for room that other clients' replies hold rather than run outside the budget, and gives it back
// once its reply is written. Before, 20 clients' HGETALL of a 128 MiB hash peaked at 10.5 GB RSS for a 1 GiB
// budget, 11 of them closed when their replies found no room.
func TestCollectionReadsWaitForRoomInTheBudget(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	_, run := pipelineOn(s)
	bigHash(run, "h", 20) // 1.25 MiB each
	for range 20 {
		run("RPUSH", "l", strings.Repeat("f", 64<<10))
	}
	reads := [][]string{
		{"HGETALL", "h"},
		{"LRANGE", "l", "0", "-1"},
		{"EVAL", "return #redis.call('HVALS', KEYS[1])", "1", "h"},
	}
	for _, read := range reads {
		const hold = 300 * time.Millisecond
		var heldWhileReading atomic.Int64
		othersHold(t, budget, 3<<19, hold, func() { heldWhileReading.Store(budget.Used()) })
		start := time.Now()
		run(read...)
		if took := time.Since(start); took < hold {
			t.Fatalf("%s of 1.25 MiB (2.5 MiB with its reply) ran in %v with 1.5 MiB of the budget free", read[0], took)
		}
		if h := heldWhileReading.Load(); h != 3<<19 {
			t.Fatalf("while %s waited the budget held %d bytes, want only the others' 1.5 MiB", read[0], h)
		}
		if s.closing {
			t.Fatalf("%s's reader was closed instead of waiting", read[0])
		}
		if h := s.acct.Held(); h != 0 {
			t.Fatalf("after %s's reply the reader still holds %d bytes", read[0], h)
		}
	}
}

// TestPipelineWaitsOnlyForItsBigReads: a pipeline whose batch the budget refuses for its reads is answered one
// request at a time, so its writes apply in their turn while only the big read waits for room (before, the
// whole batch waited, its SETs unapplied until the room came, and all of it failed once readWait passed).
func TestPipelineWaitsOnlyForItsBigReads(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	send, run := pipelineOn(s)
	bigHash(run, "h", 20) // 1.25 MiB
	var seenWhileWaiting atomic.Value
	othersHold(t, budget, 3<<19, 300*time.Millisecond, func() {
		it, err := ts.store.Get(context.Background(), table(0), []byte("before"))
		seenWhileWaiting.Store(fmt.Sprintf("%q %v", it.Value, err))
	})
	s.w.Reset()
	send("SET", "before", "1")
	send("HGETALL", "h")
	send("SET", "after", "2")
	s.flush()
	if got := seenWhileWaiting.Load(); got != `"1" <nil>` {
		t.Fatalf("while the HGETALL waited, the SET before it read %v; want it applied", got)
	}
	if it, err := ts.store.Get(context.Background(), table(0), []byte("after")); err != nil || string(it.Value) != "2" {
		t.Fatalf("the SET after the HGETALL: %q, %v", it.Value, err)
	}
	if h := s.acct.Held(); h != 0 || s.closing {
		t.Fatalf("after the replies the connection holds %d bytes (closing %v)", h, s.closing)
	}
}

// othersHold reserves n bytes of budget as other clients' replies being written, and after d calls then (if not
// nil) and releases them; the account is closed when the test ends.
func othersHold(t *testing.T, budget *membudget.Budget, n int, d time.Duration, then func()) {
	t.Helper()
	others := budget.Open("others", nil)
	t.Cleanup(others.Close)
	if err := others.Reserve(n); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(d)
		if then != nil {
			then()
		}
		others.Release(n)
	}()
}

// bigHash fills the hash key with n fields of 64 KiB, through run.
func bigHash(run func(args ...string) string, key string, n int) {
	field := strings.Repeat("f", 64<<10)
	for i := range n {
		run("HSET", key, fmt.Sprint("f", i), field)
	}
}

// TestRepliesKeepTheirReadsRoomUntilWritten: once a batch's replies are built, what its reads reserved is given
// back but for the replies' bytes, which stay reserved until out writes them, so that out reserves nothing more.
// Given back whole, the room went to a client waiting for it, and out's reservation (which evicts) could then
// close that client (an independent review).
func TestRepliesKeepTheirReadsRoomUntilWritten(t *testing.T) {
	budget := membudget.New(64<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	send, run := pipelineOn(s)
	run("SET", "big", strings.Repeat("v", 512<<10)) // its reply stays buffered (under replyChunk)
	s.w.Reset()
	send("GET", "big")
	send("STRLEN", "big")
	s.flush()
	if n := s.w.Len(); n < 512<<10 || s.held.read != n || budget.Used() != int64(n) {
		t.Fatalf("after the batch: %d bytes of replies, %d held for reads, %d in the budget; want the replies' bytes held", n, s.held.read, budget.Used())
	}
	s.w.Reset()
	s.unhold(&s.held.read) // as ServeConn does once out has written them
	if budget.Used() != 0 {
		t.Fatalf("after the replies were written the budget holds %d bytes", budget.Used())
	}
}

// TestBigReadsGiveTheirRoomBack: what plain reads reserve for big values, through the engine's ValueGate or
// after the read, is all given back once their replies are written, whatever the path: an engine error after
// the gate admitted the value, an MGET whose second value is refused after its first was admitted (a wait, and
// the reads again), a pipelined batch answered a request at a time, a value deleted while its read waits; EXISTS,
// TYPE and TTL of a big value never wait. (An independent review's test of the ValueGate change.)
func TestBigReadsGiveTheirRoomBack(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	ts := startServerOver(t, enginetest.FailsAfterGet{Engine: memstore.New(), Key: "fail", Err: errors.New("durability wait failed")}, kv.Options{}, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	send, run := pipelineOn(s)
	mib := strings.Repeat("v", 1<<20)
	run("SET", "a", mib)
	run("SET", "b", mib[:512<<10])
	run("SET", "fail", mib)
	check := func(what string) {
		t.Helper()
		if h := s.acct.Held(); h != 0 {
			t.Fatalf("%s: reader holds %d after its reply", what, h)
		}
	}
	// Engine error after Admit.
	if out := run("GET", "fail"); !strings.HasPrefix(out, "-") {
		t.Fatalf("GET fail: %q", out[:min(len(out), 40)])
	}
	check("error after admit")
	// MGET: a admitted (2 MiB), b refused (1 MiB) with 0.5 MiB free past it... 3 MiB budget, others hold 0.75.
	othersHold(t, budget, 3<<18, 300*time.Millisecond, nil)
	start := time.Now()
	run("MGET", "a", "b", "a")
	if time.Since(start) < 300*time.Millisecond {
		t.Fatalf("MGET answered after %v", time.Since(start))
	}
	check("MGET second refused")
	// Pipelined.
	othersHold(t, budget, 3<<18, 300*time.Millisecond, nil)
	s.w.Reset()
	send("GET", "a")
	send("GET", "b")
	send("EXISTS", "a")
	send("STRLEN", "b")
	s.flush()
	s.w.Reset()
	s.unhold(&s.held.read)
	check("pipelined")
	// The value goes while the read waits.
	othersHold(t, budget, 3<<19, 300*time.Millisecond, func() {
		ts.store.Apply(context.Background(), []engine.Mutation{{Op: engine.OpDelete, Table: table(0), Key: []byte("a")}})
	})
	if out := run("GET", "a"); out != "$-1\r\n" {
		t.Fatalf("GET of a value gone meanwhile: %q", out[:min(len(out), 40)])
	}
	check("value gone")
	// EXISTS and TYPE of a big value never wait; STRLEN waits only for one copy.
	run("SET", "a", mib)
	othersHold(t, budget, 5<<19, 300*time.Millisecond, nil) // 0.5 MiB free
	start = time.Now()
	for _, c := range [][]string{{"EXISTS", "a"}, {"TYPE", "a"}, {"TTL", "a"}} {
		run(c...)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("EXISTS/TYPE/TTL waited %v", took)
	}
	check("novalue")
	time.Sleep(400 * time.Millisecond)
	if u := budget.Used(); u != 0 {
		t.Fatalf("budget used %d at the end", u)
	}
}

// TestConcurrentBigGetsGiveTheBudgetBack: many clients' GET and MGET of a big value under a small budget, each
// session's gate used from its own goroutine only (run under -race); the budget is back to 0 afterwards.
func TestConcurrentBigGetsGiveTheBudgetBack(t *testing.T) {
	budget := membudget.New(3<<20, nil)
	ts := startServerOver(t, memstore.New(), kv.Options{}, Options{Budget: budget}, 0)
	val := strings.Repeat("v", 1<<20)
	ts.raw(t).do("SET", "big", val)
	const clients = 6
	var rcs []*rawConn
	for range clients {
		rcs = append(rcs, ts.raw(t))
	}
	done := make(chan string, clients)
	for i, rc := range rcs {
		go func() {
			for j := range 4 {
				var got string
				if (i+j)%2 == 0 {
					got = rc.do("GET", "big")
				} else {
					got = rc.do("MGET", "big", "nothing")
				}
				if !strings.Contains(got, val) {
					done <- "bad reply: " + got[:min(len(got), 60)]
					return
				}
			}
			done <- ""
		}()
	}
	for range clients {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for budget.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if u := budget.Used(); u != 0 {
		t.Fatalf("budget holds %d after all replies", u)
	}
}
