package redis

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/engine/pebblestore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/rdb"
)

// restoreMiB is a DUMP payload of 12 KB that decodes to a string of 1 MiB (1 + 264 × 3971 bytes, LZF).
func restoreMiB() string {
	return string(rdb.Finish(append([]byte{rdb.TypeString}, lzfBomb(3971)...)))
}

// budgetSession is a session of ts's handler over one end of a pipe whose replies are discarded, so that a test
// can dispatch commands and see what its account holds between them.
func budgetSession(t *testing.T, ts *testServer) *session {
	t.Helper()
	c, peer := net.Pipe()
	t.Cleanup(func() { c.Close(); peer.Close() })
	go io.Copy(io.Discard, peer)
	s := newSession(ts.h, c)
	t.Cleanup(s.releaseBuffers)
	return s
}

// TestRestoredValuesReserveTheBudget: the values a batch's RESTOREs decoded are reserved from the connection's
// maxmemory-clients account while the batch holds them, and given back once it ran: after a pipeline's batch, an
// EXEC, a DISCARD, and when the connection closes. A pipeline past the budget runs its batch so far and goes on;
// a transaction's RESTORE past it, or one value bigger than the budget, is refused (the connection stays), and
// nothing of it is written. Before, the decoded values counted nowhere: 20 connections pipelining a few MB of
// LZF payloads each held 5 GB past the budget.
func TestRestoredValuesReserveTheBudget(t *testing.T) {
	budget := membudget.New(3<<20+1<<19, nil) // 3.5 MiB: three values of 1 MiB fit
	ts := startServer(t, Options{Budget: budget}, 0)
	p, size := restoreMiB(), restoredMiB
	s := budgetSession(t, ts)
	send, run := pipelineOn(s)

	// A pipeline: held while the batch waits, given back when it runs.
	send("RESTORE", "a", "0", p)
	if held := s.acct.Held(); held != size {
		t.Fatalf("a batch holding a restored value of %d bytes reserved %d", size, held)
	}
	send("RESTORE", "b", "0", p)
	send("RESTORE", "c", "0", p)
	if held := s.acct.Held(); held != 3*size {
		t.Fatalf("3 restored values of %d bytes waiting reserved %d", size, held)
	}
	send("RESTORE", "d", "0", p) // over the budget: the batch so far runs first
	if held := s.acct.Held(); held != size {
		t.Fatalf("after its batch ran, one more restored value reserved %d bytes in all", held)
	}
	s.flush()
	if held := s.acct.Held(); held != 0 {
		t.Fatalf("after the batch ran the connection holds %d bytes", held)
	}
	if got := string(s.w.Bytes()); got != strings.Repeat("+OK\r\n", 4) {
		t.Fatalf("4 pipelined RESTOREs answered %q", got)
	}
	if got := run("EXISTS", "a", "b", "c", "d"); got != ":4\r\n" {
		t.Fatalf("EXISTS of the 4 restored keys: %q", got)
	}

	// EXEC: the transaction is one batch; its RESTORE past the budget fails, the others run.
	run("MULTI")
	for _, k := range []string{"m1", "m2", "m3", "m4"} {
		run("RESTORE", k, "0", p)
	}
	want := "*4\r\n+OK\r\n+OK\r\n+OK\r\n-" + errRestoreMemory[:len("ERR client memory")]
	if got := run("EXEC"); !strings.HasPrefix(got, want) {
		t.Fatalf("EXEC of 4 RESTOREs of 1 MiB under a 3.5 MiB budget: %q", got)
	}
	if held := s.acct.Held(); held != 0 {
		t.Fatalf("after EXEC the connection holds %d bytes", held)
	}
	if got := run("EXISTS", "m4"); got != ":0\r\n" {
		t.Fatalf("the refused RESTORE wrote its key: %q", got)
	}

	// DISCARD: nothing was decoded, and the queue is given back.
	run("MULTI")
	run("RESTORE", "x", "0", p)
	run("DISCARD")
	if held := s.acct.Held(); held != 0 {
		t.Fatalf("after DISCARD the connection holds %d bytes", held)
	}

	// One value bigger than the whole budget: refused, the connection goes on, nothing written.
	body := append([]byte{rdb.TypeListQuicklist2}, rdb.AppendLen(nil, 4)...) // 4 plain nodes of 1 MiB
	for range 4 {
		body = append(append(body, 1), lzfBomb(3971)...)
	}
	if got := run("RESTORE", "big", "0", string(rdb.Finish(body))); !strings.Contains(got, "maxmemory-clients") {
		t.Fatalf("RESTORE of a 4 MiB list under a 3.5 MiB budget: %q", got)
	}
	if got := run("EXISTS", "big"); got != ":0\r\n" || s.closing {
		t.Fatalf("after the refused RESTORE: %q (closing %v)", got, s.closing)
	}
	if held := s.acct.Held(); held != 0 {
		t.Fatalf("after a refused RESTORE the connection holds %d bytes", held)
	}

	// A connection that closes: what it held is given back.
	rc := ts.raw(t)
	rc.send(respCmd("RESTORE", "z1", "0", p) + respCmd("RESTORE", "z2", "0", p))
	rc.c.Close()
	waitReleased(t, budget)
}

// TestScriptRestoresAreBounded (the fourth value of 1 MiB passes 3 MiB): what a script's RESTOREs decoded stays in its batch until the script is done, so
// all of them together are bounded as one batch's (restoreMaxTotal): each call compiles in a batch of its own,
// and before, each started the count again (a script looping over a 3 MB payload held gigabytes).
func TestScriptRestoresAreBounded(t *testing.T) {
	defer func(n int) { restoreMaxTotal = n }(restoreMaxTotal)
	restoreMaxTotal = 3 << 20
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	script := `for i = 1, 5 do
		local r = redis.pcall('RESTORE', 'k' .. i, 0, ARGV[1])
		if type(r) == 'table' and r.err then return {i, r.err} end
	end
	return 'all'`
	got := rc.do("EVAL", script, "0", restoreMiB())
	want := "*2\r\n:4\r\n$95\r\nERR the script's restored values, with those of its pipeline or transaction, would exceed 3 MiB\r\n"
	if got != want {
		t.Fatalf("a script restoring 5 × 1 MiB under a 3 MiB bound: %q, want %q", got, want)
	}
	if r := rc.do("EVAL", "return redis.call('RESTORE', 'one', 0, ARGV[1])", "0", restoreMiB()); r != "+OK\r\n" {
		t.Fatalf("the next script's RESTORE: %q", r)
	}
}

// heldAtApply is an engine that records, as each batch it applied returns, the most the budget held: what a
// batch's scripts restored is reserved while the engine holds it.
type heldAtApply struct {
	engine.Engine
	budget *membudget.Budget
	peak   atomic.Int64
}

func (e *heldAtApply) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := e.Engine.Apply(ctx, b)
	if used := e.budget.Used(); used > e.peak.Load() {
		e.peak.Store(used)
	}
	return res, err
}

// callerSession is budgetSession registered with its handler, as ServeConn registers a connection: a script
// finds the connection that ran it by its id.
func callerSession(t *testing.T, ts *testServer) *session {
	s := budgetSession(t, ts)
	ts.h.mu.Lock()
	ts.h.sessions[s.id] = s
	ts.h.mu.Unlock()
	return s
}

// TestScriptRestoresReserveTheCallersBudget: what a script's RESTOREs decoded is reserved from the calling
// connection's maxmemory-clients account while the batch holds it, together with what the other scripts of its
// pipeline or transaction restored, and given back once the batch ran. Past the budget the script's RESTORE is
// refused as a command error (redis.pcall returns it, redis.call raises it) and writes nothing. Before, a script
// ran with an account of its own: a pipeline of 20 EVALs held 20 × 256 MiB whatever the budget. Over memstore,
// and over pebblestore, whose writer goroutine runs the scripts while the connection waits.
func TestScriptRestoresReserveTheCallersBudget(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testScriptRestoresReserve(t, memstore.New()) })
	t.Run("pebblestore", func(t *testing.T) {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		e, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir(), Logger: quiet, CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		testScriptRestoresReserve(t, e)
	})
}

func testScriptRestoresReserve(t *testing.T, e engine.Engine) {
	budget := membudget.New(3<<20+1<<19, nil) // 3.5 MiB: three values of 1 MiB fit
	eng := &heldAtApply{Engine: e, budget: budget}
	ts := startServerOver(t, eng, kv.Options{}, Options{Budget: budget}, 0)
	p, size := restoreMiB(), restoredMiB
	s := callerSession(t, ts)
	send, run := pipelineOn(s)
	const one = "return redis.pcall('RESTORE', KEYS[1], 0, ARGV[1])"
	refused := "-" + errRestoreMemory + "\r\n"

	// A pipeline of 5 scripts is one batch: the first three values are held until it ran, the other two refused.
	s.w.Reset()
	for i := range 5 {
		send("EVAL", one, "1", "p"+strconv.Itoa(i), p)
	}
	s.flush()
	if got, want := string(s.w.Bytes()), strings.Repeat("+OK\r\n", 3)+strings.Repeat(refused, 2); got != want {
		t.Fatalf("5 pipelined scripts each restoring 1 MiB under a 3.5 MiB budget: %q, want %q", got, want)
	}
	if pk := eng.peak.Load(); pk != 3*size {
		t.Errorf("the batch of 5 scripts held %d bytes of the budget as it ran, want %d", pk, 3*size)
	}
	if used := budget.Used(); used != 0 {
		t.Fatalf("after the batch ran the budget holds %d bytes", used)
	}
	if got := run("EXISTS", "p0", "p1", "p2", "p3", "p4"); got != ":3\r\n" {
		t.Fatalf("EXISTS of the 5 keys (2 refused): %q", got)
	}

	// Scripts not yet known to write keys they do not declare: the batch fails at the first such write, nothing
	// applied, and its scripts run again one at a time; what the failed run reserved is not counted again.
	const wide = "local r = redis.call('RESTORE', KEYS[1], 0, ARGV[1]) redis.call('SET', 'w:' .. KEYS[1], 1) return r"
	s.w.Reset()
	for i := range 3 {
		send("EVAL", wide, "1", "w"+strconv.Itoa(i), p)
	}
	s.flush()
	if got := string(s.w.Bytes()); got != strings.Repeat("+OK\r\n", 3) {
		t.Fatalf("3 pipelined scripts restoring 1 MiB each and writing an undeclared key: %q", got)
	}
	if used := budget.Used(); used != 0 {
		t.Fatalf("after the batch ran again the budget holds %d bytes", used)
	}

	// One script: redis.call raises the refusal; what it restored before is kept (a script keeps its writes).
	loop := "for i = 1, 5 do redis.call('RESTORE', 'c' .. i, 0, ARGV[1]) end return 'all'"
	if got := run("EVAL", loop, "0", p); !strings.HasPrefix(got, strings.TrimSuffix(refused, "\r\n")+" script: ") {
		t.Fatalf("a script restoring 5 × 1 MiB with redis.call under a 3.5 MiB budget: %q", got)
	}
	if got := run("EXISTS", "c1", "c2", "c3", "c4", "c5"); got != ":3\r\n" {
		t.Fatalf("EXISTS of the script's 5 keys: %q", got)
	}

	// A transaction's scripts: one batch too.
	run("MULTI")
	for i := range 4 {
		run("EVAL", one, "1", "m"+strconv.Itoa(i), p)
	}
	if got, want := run("EXEC"), "*4\r\n"+strings.Repeat("+OK\r\n", 3)+refused; got != want {
		t.Fatalf("EXEC of 4 scripts each restoring 1 MiB: %q, want %q", got, want)
	}
	if used := budget.Used(); used != 0 {
		t.Fatalf("after EXEC the budget holds %d bytes", used)
	}

	// Over a connection, which may close before it reads its replies: nothing stays reserved.
	rc := ts.raw(t)
	rc.do("DEL", "c1", "c2", "c3")
	if got := rc.do("EVAL", loop, "0", p); !strings.HasPrefix(got, strings.TrimSuffix(refused, "\r\n")+" script: ") {
		t.Fatalf("over a connection, a script restoring 5 × 1 MiB: %q", got)
	}
	rc.send(respCmd("EVAL", one, "1", "z1", p) + respCmd("EVAL", one, "1", "z2", p))
	rc.c.Close()
	waitReleased(t, budget)
}

// TestScriptRestoresShareTheBatchBound: the values a batch's RESTOREs decoded are bounded together
// (restoreMaxTotal), a script's among them: those of the plain RESTOREs and of the other scripts of its
// pipeline or transaction count. Before, each script counted from zero: a pipeline of 20 EVALs held 20 × 256 MiB
// until its batch ran.
func TestScriptRestoresShareTheBatchBound(t *testing.T) {
	defer func(n int) { restoreMaxTotal = n }(restoreMaxTotal)
	restoreMaxTotal = 3 << 20 // three values of 1 MiB
	ts := startServer(t, Options{}, 0)
	p := restoreMiB()
	s := callerSession(t, ts)
	send := func(args ...string) {
		a := make([][]byte, len(args))
		for i := range args {
			a[i] = []byte(args[i])
		}
		s.dispatch(a)
	}
	batch := func(cmds ...[]string) string {
		s.w.Reset()
		for _, c := range cmds {
			send(c...)
		}
		s.flush()
		return string(s.w.Bytes())
	}
	const one = "return redis.pcall('RESTORE', KEYS[1], 0, ARGV[1])"
	over := "-ERR the script's restored values, with those of its pipeline or transaction, would exceed 3 MiB\r\n"

	got := batch([]string{"RESTORE", "a", "0", p}, []string{"RESTORE", "b", "0", p},
		[]string{"EVAL", one, "1", "c", p}, []string{"EVAL", one, "1", "d", p})
	if want := strings.Repeat("+OK\r\n", 3) + over; got != want {
		t.Fatalf("2 RESTOREs and 2 scripts restoring 1 MiB each, in one pipeline: %q, want %q", got, want)
	}
	var evals [][]string
	for i := range 4 {
		evals = append(evals, []string{"EVAL", one, "1", "e" + strconv.Itoa(i), p})
	}
	if got, want := batch(evals...), strings.Repeat("+OK\r\n", 3)+over; got != want {
		t.Fatalf("4 pipelined scripts restoring 1 MiB each: %q, want %q", got, want)
	}
	got = batch([]string{"MULTI"}, []string{"RESTORE", "m1", "0", p}, []string{"EVAL", one, "1", "m2", p},
		[]string{"EVAL", one, "1", "m3", p}, []string{"EVAL", one, "1", "m4", p}, []string{"EXEC"})
	if want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 4) + "*4\r\n" + strings.Repeat("+OK\r\n", 3) + over; got != want {
		t.Fatalf("a transaction of a RESTORE and 3 scripts restoring 1 MiB each: %q, want %q", got, want)
	}
	if got := batch([]string{"EXISTS", "d", "e3", "m4"}); got != ":0\r\n" {
		t.Fatalf("the refused RESTOREs wrote keys: %q", got)
	}
}

// waitReleased waits (5 s at most) for budget to hold nothing once a connection closed.
func waitReleased(t *testing.T, budget *membudget.Budget) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for budget.Used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the budget still holds %d bytes after the connection closed", budget.Used())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restoredMiB is what one of restoreMiB's values reserves once decoded.
const restoredMiB = int64(1 + 264*3971 + restoreElemOverhead)

// pipelineOn gives a session's commands as a pipeline sends them: send joins the batch, run joins it and runs it,
// returning the replies written since.
func pipelineOn(s *session) (send func(args ...string), run func(args ...string) string) {
	send = func(args ...string) {
		a := make([][]byte, len(args))
		for i := range args {
			a[i] = []byte(args[i])
		}
		s.dispatch(a)
	}
	run = func(args ...string) string {
		s.w.Reset()
		send(args...)
		s.flush()
		out := string(s.w.Bytes())
		s.w.Reset()
		s.unhold(&s.held.read) // as ServeConn does once out has written the replies
		return out
	}
	return send, run
}
