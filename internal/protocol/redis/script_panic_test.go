package redis

import (
	"strings"
	"sync"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

var registerPanicking sync.Once

// withPanickingCommand adds, for the test, a command R2PANIC key whose engine function writes its key and then
// panics, as a defect reachable from a client's arguments would (an unchecked index), in the middle of a batch.
func withPanickingCommand(t *testing.T) {
	registerPanicking.Do(func() {
		engine.RegisterFunc("redistest.panics", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
			tx.Put(tx.Table(), tx.Key(), engine.Item{Value: []byte("half")})
			var b []byte
			_ = b[len(args)+1] // index out of range
			return engine.Result{}, nil
		})
	})
	commands["r2panic"] = &command{name: "r2panic", arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1,
		id: commands["set"].id, data: func(s *session, args [][]byte) {
			s.add(engine.CallMutation(s.table(), args[1], "redistest.panics"))
			s.plan(func(w *resp.Writer, res []engine.Result) { w.SimpleString("OK") })
		}}
	t.Cleanup(func() { delete(commands, "r2panic") }) // after the server's own cleanup: registered before it
}

// TestPanicInAScriptsCommandRefusesItsBatch: a panic inside a command a script calls (a defect of anykv's, in the
// engine's batch) refuses the script's whole batch, nothing of it applied, as a panic in any batch does
// (engine.Resolve). gopher-lua's PCall turned it into a Lua error: the script failed (or, under pcall, went on
// and succeeded) and its batch was committed with the write the panicking function had half made.
func TestPanicInAScriptsCommandRefusesItsBatch(t *testing.T) {
	withPanickingCommand(t)
	c := startServer(t, Options{}, 0).client(t, nil)
	for _, script := range []string{
		"redis.call('set', KEYS[1], '1') redis.call('r2panic', KEYS[2]) return 'done'",
		"redis.call('set', KEYS[1], '1') local ok = pcall(redis.call, 'r2panic', KEYS[2]) return 'done'",
		"redis.call('set', KEYS[1], '1') redis.pcall('r2panic', KEYS[2]) return 'done'",
	} {
		err := c.Eval(ctx, script, []string{"before", "victim"}).Err()
		if err == nil || !strings.Contains(err.Error(), "internal error") {
			t.Errorf("%s: %v, want the batch's internal error", script, err)
		}
		if n := c.Exists(ctx, "before", "victim").Val(); n != 0 {
			t.Errorf("%s: %d of its keys written, want none (nothing of a panicking batch applies)", script, n)
		}
	}
	if err := c.Eval(ctx, "return redis.call('set', KEYS[1], 'ok')", []string{"after"}).Err(); err != nil {
		t.Errorf("a script after them: %v", err)
	}
}
