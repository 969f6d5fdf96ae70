package redis

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestExecOfAFailedBatchIsOneError: a transaction whose batch fails whole answers EXEC with one error, not an
// array of it in every command's place, which a client reads as each command's own error (Redis's runtime
// errors, the others applied): an unknown outcome (the datastore under anykv failed mid-commit) with its own
// text, since it may have been applied, a batch refused before it applied anything with Redis's EXECABORT and
// the reason, and one over two slots with Redis Cluster's CROSSSLOT (not EXECABORT because of it). Before, each
// was `*3` of the error three times, and a kill test over an etcd cluster that took EXEC's reply for the
// transaction's counted lost transactions as acknowledged.
func TestExecOfAFailedBatchIsOneError(t *testing.T) {
	e := &failNextApply{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	rc := ts.raw(t)
	rc.do("ZADD", "z", "1", "a")
	for _, tc := range []struct {
		fail error
		want string
	}{
		{fmt.Errorf("etcd: commit outcome unknown: %w", engine.ErrUnknownOutcome), "-ERR etcd: commit outcome unknown"},
		{fmt.Errorf("etcd: %w", engine.ErrUnavailable), "-EXECABORT Transaction discarded because of: ERR etcd: "},
		// Keys in two slots of a namespace spread over slots: Redis Cluster's own answer to such an EXEC (it
		// discards the transaction and answers CROSSSLOT), which a client tells by its code.
		{fmt.Errorf("%w (the transaction's keys)", engine.ErrCrossSlot), "-CROSSSLOT Keys in request don't hash to the same slot"},
	} {
		e.fail.Store(&tc.fail)
		rc.send(respCmd("MULTI") + respCmd("ZPOPMIN", "z") + respCmd("HINCRBY", "h", "f", "5") + respCmd("LPUSH", "l", "a") + respCmd("EXEC"))
		for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n"} {
			if r := rc.reply(); r != want {
				t.Fatalf("%q, want %q", r, want)
			}
		}
		if r := rc.reply(); !strings.HasPrefix(r, tc.want) || strings.Count(r, "\r\n") != 1 {
			t.Errorf("EXEC of a batch failing with %v: %q, want one error %q...", tc.fail, r, tc.want)
		}
	}
	// Nothing was applied (the engine refused both batches), and the connection goes on.
	if r := rc.do("ZCARD", "z"); r != ":1\r\n" {
		t.Errorf("ZCARD z after the failed transactions: %q", r)
	}
	rc.send(respCmd("MULTI") + respCmd("HINCRBY", "h", "f", "5") + respCmd("EXEC"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "*1\r\n:5\r\n"} {
		if r := rc.reply(); r != want {
			t.Errorf("a transaction after them: %q, want %q", r, want)
		}
	}
}

// failNextApply fails the next Apply, once, with the error fail holds, applying nothing.
type failNextApply struct {
	engine.Engine
	fail atomic.Pointer[error]
}

func (e *failNextApply) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if err := e.fail.Swap(nil); err != nil {
		return nil, *err
	}
	return e.Engine.Apply(ctx, b)
}

// TestExecNotRunKeepsTheDatabase: a SELECT queued in a transaction that does not run (aborted by a WATCH, or
// answered with one error because its batch failed whole) does not change the connection's database, as in
// Redis, where the queued commands of such an EXEC never run. SELECT takes effect as EXEC compiles the
// transaction, so that the commands after it write there; it stayed in effect, and the commands the client sent
// after the failed EXEC, taking the transaction for discarded, went to the other database.
func TestExecNotRunKeepsTheDatabase(t *testing.T) {
	e := &failNextApply{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	rc := ts.raw(t)
	other := ts.raw(t)
	for _, tc := range []struct {
		name string
		fail error
		want string
	}{
		{"aborted by a WATCH", nil, "*-1\r\n"},
		{"unavailable", fmt.Errorf("etcd: %w", engine.ErrUnavailable), "-EXECABORT"},
		{"unknown outcome", fmt.Errorf("etcd: %w", engine.ErrUnknownOutcome), "-ERR etcd"},
	} {
		rc.do("SELECT", "0")
		if tc.fail == nil {
			rc.do("WATCH", "w")
			other.do("SET", "w", tc.name)
		} else {
			e.fail.Store(&tc.fail)
		}
		rc.send(respCmd("MULTI") + respCmd("SELECT", "1") + respCmd("SET", "k", "v") + respCmd("EXEC"))
		for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", tc.want} {
			if r := rc.reply(); !strings.HasPrefix(r, want) {
				t.Fatalf("%s: %q, want %q", tc.name, r, want)
			}
		}
		rc.do("SET", "after", tc.name)
		if r := other.do("GET", "after"); r != fmt.Sprintf("$%d\r\n%s\r\n", len(tc.name), tc.name) {
			t.Errorf("%s: the SET after the EXEC not run went to another database than 0 (GET in 0: %q)", tc.name, r)
		}
	}
}

// TestPipelineOfAFailedBatchIsErrors: the commands of a pipeline applied as one batch that fails whole each
// answer the batch's error, whatever their reply would have been (+OK, a count, a script's value): a client
// takes a reply that is not an error for its command's success.
func TestPipelineOfAFailedBatchIsErrors(t *testing.T) {
	e := &failNextApply{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	rc := ts.raw(t)
	rc.do("SET", "a", "1")
	cmds := [][]string{{"SET", "a", "2"}, {"MSET", "b", "1", "c", "2"}, {"MSETNX", "d", "1", "e", "2"}, {"INCR", "a"},
		{"LPUSH", "l", "x"}, {"HSET", "h", "f", "v"}, {"EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "s"},
		{"SET", "a", "3", "GET"}, {"DEL", "a"}, {"RENAME", "a", "r"}}
	for _, fail := range []error{fmt.Errorf("etcd: %w: the member was lost", engine.ErrUnknownOutcome),
		fmt.Errorf("etcd: %w", engine.ErrUnavailable)} {
		e.fail.Store(&fail)
		var b strings.Builder
		for _, c := range cmds {
			b.WriteString(respCmd(c...))
		}
		rc.send(b.String())
		want := "-" + errText(fail) + "\r\n"
		for _, c := range cmds {
			if r := rc.reply(); r != want {
				t.Errorf("%v in a pipeline whose batch failed with %v: %q, want %q", c, fail, r, want)
			}
		}
	}
	if r := rc.do("MGET", "a", "b", "d", "s"); r != "*4\r\n$1\r\n1\r\n$-1\r\n$-1\r\n$-1\r\n" {
		t.Errorf("after the failed batches: %q", r)
	}
}

// applyThenDoubt applies the next batch, then reports its commit's outcome as unknown, as a remote engine does
// when its datastore applied a commit and the answer was lost.
type applyThenDoubt struct {
	engine.Engine
	doubt atomic.Bool
}

func (e *applyThenDoubt) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	res, err := e.Engine.Apply(ctx, b)
	if err == nil && e.doubt.Swap(false) {
		return nil, fmt.Errorf("etcd: commit outcome unknown: %w", engine.ErrUnknownOutcome)
	}
	return res, err
}

// TestWriteOfUnknownOutcomeAbortsWatchers: a batch whose outcome is unknown may have written its keys, so an EXEC
// that WATCHed one of them aborts. The version a WATCH read cannot see a write that landed and left the key as it
// was (a transaction that created and deleted it, or a script that did so with a key it did not declare).
func TestWriteOfUnknownOutcomeAbortsWatchers(t *testing.T) {
	e := &applyThenDoubt{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	watcher, writer := ts.raw(t), ts.raw(t)
	for _, tc := range []struct {
		name string
		cmds [][]string
	}{
		{"a transaction", [][]string{{"MULTI"}, {"SET", "k", "1"}, {"DEL", "k"}, {"EXEC"}}},
		{"a script's undeclared key", [][]string{{"EVAL", "redis.call('SET', 'k', '1') redis.call('DEL', 'k')", "0"}}},
	} {
		if r := watcher.do("WATCH", "k"); r != "+OK\r\n" {
			t.Fatalf("WATCH: %q", r)
		}
		e.doubt.Store(true)
		var last string
		for _, c := range tc.cmds {
			last = writer.do(c...)
		}
		if !strings.Contains(last, "outcome unknown") {
			t.Fatalf("%s: %q, want the error of unknown outcome", tc.name, last)
		}
		watcher.send(respCmd("MULTI") + respCmd("SET", "k", "2") + respCmd("EXEC"))
		for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "*-1\r\n"} {
			if r := watcher.reply(); r != want {
				t.Errorf("%s: the watcher's transaction: %q, want %q", tc.name, r, want)
			}
		}
		watcher.do("DEL", "k")
	}
}

// TestWriteOfUnknownOutcomeWakesBlockedPops: a push whose outcome is unknown may have landed, so a client blocked
// on its key looks, and takes what it finds, rather than waiting for another write or its timeout.
func TestWriteOfUnknownOutcomeWakesBlockedPops(t *testing.T) {
	e := &applyThenDoubt{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	popper, pusher := ts.raw(t), ts.raw(t)
	popper.send(respCmd("BLPOP", "l", "8"))
	time.Sleep(200 * time.Millisecond) // parked
	e.doubt.Store(true)
	if r := pusher.do("LPUSH", "l", "x"); !strings.Contains(r, "outcome unknown") {
		t.Fatalf("LPUSH: %q, want the error of unknown outcome", r)
	}
	start := time.Now()
	if r := popper.reply(); r != "*2\r\n$1\r\nl\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP: %q", r)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("BLPOP took %v to see a push of unknown outcome that landed", took)
	}
}
