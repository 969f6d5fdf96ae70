package redis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"anykv/internal/membudget"
)

// usedSettles waits up to d for the budget's bytes to fall to want, and returns them.
func usedSettles(b *membudget.Budget, want int64, d time.Duration) int64 {
	deadline := time.Now().Add(d)
	for b.Used() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return b.Used()
}

// TestImmediateReadsLetGoOnceAnswered: what an immediate command's batch read (EXEC's, MIGRATE's) counts against
// maxmemory-clients goes back once its reply is written, as a pipeline's batch's does. Before, only a flush of a
// batch gave it back: a connection idle after MULTI HGETALL EXEC of a 2 MiB hash held 4 MiB of the budget until
// its next data command, through any number of PINGs, and other clients' reads waited for that room.
func TestImmediateReadsLetGoOnceAnswered(t *testing.T) {
	budget := membudget.New(64<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	rc := ts.raw(t)
	bigHash(rc.do, "h", 32) // 2 MiB
	rc.do("SET", "big", strings.Repeat("v", 1<<20))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().(*net.TCPAddr)
	l.Close() // MIGRATE reads its keys, then finds no one there
	for _, c := range [][]string{{"HGETALL", "h"}, {"GET", "big"}} {
		rc.send(respCmd("MULTI") + respCmd(c...) + respCmd("EXEC"))
		rc.reply()
		rc.reply()
		if r := rc.reply(); !strings.HasPrefix(r, "*1\r\n") {
			t.Fatalf("EXEC of %s: %.40q", c[0], r)
		}
		if used := usedSettles(budget, 0, time.Second); used != 0 {
			t.Fatalf("idle after MULTI %s EXEC, the budget holds %d bytes", c[0], used)
		}
	}
	for _, key := range []string{"h", "big"} {
		if r := rc.do("MIGRATE", "127.0.0.1", fmt.Sprint(dead.Port), key, "0", "100"); !strings.HasPrefix(r, "-IOERR") {
			t.Fatalf("MIGRATE to no one: %q", r)
		}
		if used := usedSettles(budget, 0, time.Second); used != 0 {
			t.Fatalf("idle after MIGRATE of %s, the budget holds %d bytes", key, used)
		}
	}
}

// TestRetriedScriptRestoresOnce: a script whose batch the budget refused for its reads, and that runs again once
// there is room, holds what its RESTORE decodes once: the refused run's is given back before the connection
// waits. Before, the refused run's 1 MiB stayed reserved through the wait and the second run reserved it again,
// so that its RESTORE was refused where it fitted (the script answered the maxmemory-clients error).
func TestRetriedScriptRestoresOnce(t *testing.T) {
	budget := membudget.New(4<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := callerSession(t, ts)
	_, run := pipelineOn(s)
	bigHash(run, "h", 20)                // 1.25 MiB
	others := budget.Open("others", nil) // replies of other clients being written
	if err := others.Reserve(2 << 20); err != nil {
		t.Fatal(err)
	}
	defer others.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		others.Release(2 << 20)
	}()
	const script = "local r = redis.pcall('RESTORE', KEYS[1], 0, ARGV[1]) " +
		"if type(r) == 'table' and r.err then return r end return #redis.call('HVALS', KEYS[2])"
	if got := run("EVAL", script, "2", "k", "h", restoreMiB()); got != ":20\r\n" {
		t.Fatalf("a script restoring 1 MiB and reading 1.25 MiB under a 4 MiB budget, 2 MiB of it others': %.100q", got)
	}
	if h := s.acct.Held(); h != 0 {
		t.Fatalf("after the script's reply the connection holds %d bytes", h)
	}
}

// TestSplitReadsDoNotWaitOnAnotherWaiter: a pipeline's last reads, run after its writes (runSplit) while its first
// reads' reservation is held for their replies, do not wait for room that only another connection waiting the same
// way holds: they read uncounted, as before, and the other gets its room once these replies are written. Before,
// each waited for the other until readWait (30 s) ended it, and its GETs answered the maxmemory-clients error.
func TestSplitReadsDoNotWaitOnAnotherWaiter(t *testing.T) {
	budget := membudget.New(5<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	s := budgetSession(t, ts)
	send, run := pipelineOn(s)
	run("SET", "big1", strings.Repeat("a", 1<<20))
	run("SET", "big2", strings.Repeat("b", 1<<20))

	writing := budget.Open("writing", nil) // a third connection's reply being written, for 300 ms
	defer writing.Close()
	if err := writing.Reserve(1 << 20); err != nil {
		t.Fatal(err)
	}
	other := budget.Open("other", nil) // another connection: its pipeline's first reads held, its last ones waiting
	defer other.Close()
	if err := other.Reserve(2 << 20); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- other.ReserveWait(context.Background(), 5<<19, 10*time.Second) }() // 5.5 MiB: it waits
	go func() {
		time.Sleep(300 * time.Millisecond)
		writing.Release(1 << 20) // now 4 MiB are held by the two pipelines, each waiting for 2 or 2.5 more
	}()
	time.Sleep(50 * time.Millisecond)

	s.w.Reset()
	s.runOut = 0
	start := time.Now()
	send("GET", "big1")
	send("SET", "x", "1")
	send("GET", "big2")
	s.flush()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("GET, SET, GET of 1 MiB values took %v", took)
	}
	if sent := s.runOut + s.w.Len(); sent < 2<<20 { // the replies past replyChunk went out as they came
		t.Fatalf("GET, SET, GET of 1 MiB values answered %d bytes: %.100q", sent, s.w.Bytes())
	}
	if got := run("GET", "x"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET x after the pipeline: %q", got)
	}
	if err := <-waited; err != nil {
		t.Fatalf("the other connection's wait once the pipeline's replies were written: %v", err)
	}
	if h := s.acct.Held(); h != 0 {
		t.Fatalf("after its replies the pipeline's connection holds %d", h)
	}
}
