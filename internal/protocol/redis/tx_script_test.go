package redis

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// TestScriptInTransactionRunsInItsPlace: EVAL queued in MULTI runs where it was queued, in the batch of the
// transaction: it sees the writes before it and not those after, and the writes after it win. It ran after the
// whole batch (the script read 2 and its SET of b outlived the transaction's own).
func TestScriptInTransactionRunsInItsPlace(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	cmds, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Eval(ctx, "return redis.call('get', 'a')", nil)
		p.Set(ctx, "a", "2", 0)
		p.Eval(ctx, "return redis.call('set', 'b', 'from-script')", nil) // b is not in KEYS: allowed, as in Redis
		p.Set(ctx, "b", "final", 0)
		p.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"b"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cmds[1].(*goredis.Cmd).Text(); err != nil || v != "1" {
		t.Errorf("the script after SET a 1 read %q, %v", v, err)
	}
	if v, err := cmds[5].(*goredis.Cmd).Text(); err != nil || v != "final" {
		t.Errorf("the read-only script at the end read %q, %v", v, err)
	}
	if v := c.Get(ctx, "b").Val(); v != "final" {
		t.Errorf("b after the transaction: %q, want final", v)
	}
	// A script's error reply is that command's reply; the rest of the transaction applies, as in Redis.
	cmds, _ = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Eval(ctx, "return redis.error_reply('MYERR nope')", nil)
		p.Set(ctx, "after", "x", 0)
		return nil
	})
	if err := cmds[0].Err(); err == nil || err.Error() != "MYERR nope" {
		t.Errorf("error reply: %v", err)
	}
	if v := c.Get(ctx, "after").Val(); v != "x" {
		t.Errorf("the SET after a failing script: %q", v)
	}
	// A script's command that writes another database is refused with an error reply, as the script's own
	// error; the transaction goes on.
	cmds, _ = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "m", "1", 0)
		p.Eval(ctx, "return redis.call('move', 'm', '1')", nil)
		p.Eval(ctx, "local r = redis.pcall('flushdb'); redis.call('set', 'p', 'x'); return r", nil)
		p.Incr(ctx, "m")
		return nil
	})
	if err := cmds[1].Err(); err == nil || !strings.Contains(err.Error(), "own database") {
		t.Errorf("MOVE to another database in a queued script: %v", err)
	}
	if err := cmds[2].Err(); err == nil || !strings.Contains(err.Error(), "may not flush") {
		t.Errorf("FLUSHDB under pcall in a queued script: %v", err)
	}
	if v := c.Get(ctx, "m").Val(); v != "2" || cmds[3].(*goredis.IntCmd).Val() != 2 || c.Get(ctx, "p").Val() != "x" {
		t.Errorf("after the refused MOVE: m = %q, INCR %v, p = %q", v, cmds[3], c.Get(ctx, "p").Val())
	}
	// EVALSHA of an unknown script answers NOSCRIPT in its place, as Redis does at EXEC; the rest applies.
	cmds, _ = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.EvalSha(ctx, "0000000000000000000000000000000000000000", nil)
		p.Set(ctx, "x", "1", 0)
		return nil
	})
	if err := cmds[0].Err(); err == nil || err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
		t.Errorf("EVALSHA of an unknown script in MULTI: %v", err)
	}
	if v := c.Get(ctx, "x").Val(); v != "1" {
		t.Errorf("the SET after an unknown EVALSHA: %q", v)
	}
}

// TestScriptInTransactionIsIsolated: no reader sees a transaction's INCR without the INCR of the script queued
// after it (both ran in one batch); with the script run after the batch, readers saw odd values.
func TestScriptInTransactionIsIsolated(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	w := ts.client(t, &goredis.Options{PoolSize: 1})
	r := ts.client(t, &goredis.Options{PoolSize: 1})
	stop := make(chan struct{})
	var odd, reads int
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
			if n, err := r.Get(context.Background(), "counter").Int(); err == nil {
				reads++
				if n%2 != 0 {
					odd++
				}
			}
		}
	}()
	for range 300 {
		if _, err := w.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Incr(ctx, "counter")
			p.Eval(ctx, "return redis.call('incr', 'counter')", nil)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if odd > 0 || reads == 0 {
		t.Errorf("%d of %d reads saw half a transaction", odd, reads)
	}
}

// TestTransactionCommandsRunInTheirDatabase: commands queued after a SELECT in MULTI run in the database it
// selected, those run after the batch (LMPOP, KEYS) included, and a script writes there.
func TestTransactionCommandsRunInTheirDatabase(t *testing.T) {
	ts := startServer(t, Options{Databases: 4}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.RPush(ctx, "q", "job-db0")
	c.Do(ctx, "select", "1")
	c.RPush(ctx, "q", "job-db1", "second-db1")
	c.Do(ctx, "select", "0")
	cmds, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Select(ctx, 1)
		p.Eval(ctx, "return redis.call('set', 'written', 'by-script')", nil)
		p.LMPop(ctx, "left", 1, "q")
		p.Keys(ctx, "*")
		p.Select(ctx, 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, vals, err := cmds[2].(*goredis.KeyValuesCmd).Result(); err != nil || fmt.Sprint(vals) != "[job-db1]" {
		t.Errorf("LMPOP after SELECT 1: %v, %v; want db 1's job", vals, err)
	}
	if keys, err := cmds[3].(*goredis.StringSliceCmd).Result(); err != nil || len(keys) != 2 {
		t.Errorf("KEYS after SELECT 1: %v, %v; want db 1's q and written", keys, err)
	}
	if n := c.Exists(ctx, "written").Val(); n != 0 {
		t.Errorf("the script wrote into db 0")
	}
	if v := c.LRange(ctx, "q", 0, -1).Val(); fmt.Sprint(v) != "[job-db0]" {
		t.Errorf("db 0's list: %v, want untouched", v)
	}
	c.Do(ctx, "select", "1")
	if v := c.Get(ctx, "written").Val(); v != "by-script" {
		t.Errorf("db 1's written: %q", v)
	}
}

// TestFailedTransactionRunsNoDeferredCommand: when a transaction's batch fails whole (here its reads pass
// engine.MaxBatchRead), the commands that run after the batch (LMPOP) do not run either: nothing of it applied.
func TestFailedTransactionRunsNoDeferredCommand(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 4 << 20
	ts := startPebbleServer(t) // memstore's reads are views, which MaxBatchRead does not count
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.RPush(ctx, "q", "a", "b")
	c.Set(ctx, "big", strings.Repeat("v", 512<<10), 0)
	cmds, _ := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "x", "1", 0)
		for range 16 { // 8 MiB
			p.Get(ctx, "big")
		}
		p.LMPop(ctx, "left", 1, "q")
		return nil
	})
	for i, cmd := range cmds {
		if cmd.Err() == nil {
			t.Errorf("command %d of the failed transaction (%s) did not fail", i, cmd.Name())
		}
	}
	if v := c.LRange(ctx, "q", 0, -1).Val(); fmt.Sprint(v) != "[a b]" {
		t.Errorf("the list after the failed transaction: %v; LMPOP ran", v)
	}
	if n := c.Exists(ctx, "x").Val(); n != 0 {
		t.Errorf("the failed transaction's SET applied")
	}
}

// TestFailingScriptWakesWaiters: a script that pushes and then fails keeps its push (as in Redis) and wakes a
// client blocked on the list; it waited out its timeout.
func TestFailingScriptWakesWaiters(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	waiter := ts.client(t, &goredis.Options{PoolSize: 1})
	got := make(chan []string, 1)
	go func() { v, _ := waiter.BLPop(context.Background(), 5*time.Second, "bq").Result(); got <- v }()
	time.Sleep(100 * time.Millisecond) // the waiter blocks first
	start := time.Now()
	err := c.Eval(ctx, "redis.call('lpush', KEYS[1], 'x') return redis.call('incr', KEYS[1])", []string{"bq"}).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("the script's INCR of a list: %v", err)
	}
	if v := <-got; fmt.Sprint(v) != "[bq x]" || time.Since(start) > 2*time.Second {
		t.Errorf("the blocked BLPOP got %v after %v", v, time.Since(start))
	}
}

// TestTransactionScriptsShareTheTimeLimit: the scripts of one transaction run in one batch, holding up every
// other write, so they share one time limit; each had its own, and 20 endless scripts held writes for 20 limits.
func TestTransactionScriptsShareTheTimeLimit(t *testing.T) {
	c := withTimeLimit(t, 300*time.Millisecond)
	start := time.Now()
	cmds, _ := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for range 6 {
			p.Eval(ctx, "while true do end", nil)
		}
		return nil
	})
	took := time.Since(start)
	for i, cmd := range cmds {
		if err := cmd.Err(); err == nil || !strings.Contains(err.Error(), "Script killed") {
			t.Errorf("script %d: %v, want the time limit's error", i, err)
		}
	}
	if took > 1200*time.Millisecond { // 6 limits would be 1.8 s
		t.Errorf("a transaction of 6 endless scripts took %v under a 300 ms limit", took)
	}
	// A script on its own gets a limit of its own (one that inherited the transaction's would be stopped at once).
	if got, err := c.Eval(ctx, "local n = 0 for i = 1, 1000 do n = n + 1 end return n", nil).Int(); err != nil || got != 1000 {
		t.Errorf("a script after the transaction: %d, %v", got, err)
	}
}
