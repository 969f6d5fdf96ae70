package redis

import (
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/cache"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestScriptWritesUndeclaredKeys: as Redis does outside cluster mode, a script may write keys it does not declare
// in KEYS (BullMQ's addJob INCRs an ID and writes the job's hash under a name built from it). The write is seen
// by every reader, also through the read cache that had the key cached as absent; a WATCH of such a key aborts
// the transaction; a client blocked on such a key is woken. A script that stays within its KEYS is not marked as
// one that strays, so it never costs the cache anything.
func TestScriptWritesUndeclaredKeys(t *testing.T) {
	ts := startServerOver(t, cache.New(memstore.New(), 1<<20), kv.Options{}, Options{}, 0)
	c := ts.client(t, nil)
	const addJob = `local id = redis.call('INCR', KEYS[1])
redis.call('HSET', 'job:' .. id, 'data', ARGV[1])
redis.call('SET', 'job:' .. id .. ':state', 'waiting')
redis.call('RPUSH', 'wait', id)
return id`
	if v := c.Get(ctx, "job:1:state").Val(); v != "" { // its absence is now cached
		t.Fatalf("job:1:state before the script: %q", v)
	}
	if v, err := c.Eval(ctx, addJob, []string{"id"}, "first").Result(); err != nil || v != int64(1) {
		t.Fatalf("addJob = %v, %v", v, err)
	}
	if v, st := c.HGet(ctx, "job:1", "data").Val(), c.Get(ctx, "job:1:state").Val(); v != "first" || st != "waiting" {
		t.Fatalf("job:1 after the script: %q, state %q; want first, waiting", v, st)
	}
	if v := c.LRange(ctx, "wait", 0, -1).Val(); len(v) != 1 || v[0] != "1" {
		t.Fatalf("wait = %v", v)
	}
	sha := sha1hex([]byte(addJob))
	if !ts.h.scripts.isWide(sha) {
		t.Fatal("the script is not remembered as one that writes undeclared keys")
	}
	if v, err := c.EvalSha(ctx, sha, []string{"id"}, "second").Result(); err != nil || v != int64(2) ||
		c.HGet(ctx, "job:2", "data").Val() != "second" {
		t.Fatalf("EVALSHA of the remembered script = %v, %v; job:2 = %q", v, err, c.HGet(ctx, "job:2", "data").Val())
	}
	const within = "return redis.call('SET', KEYS[1], ARGV[1])"
	if err := c.Eval(ctx, within, []string{"k"}, "v").Err(); err != nil || ts.h.scripts.isWide(sha1hex([]byte(within))) {
		t.Fatalf("a script within its KEYS: %v, wide %v", err, ts.h.scripts.isWide(sha1hex([]byte(within))))
	}

	// WATCH of a key only a script's run names: the transaction aborts, even though the script deleted the key
	// it created, so that its version tells nothing.
	w := ts.client(t, nil)
	err := w.Watch(ctx, func(tx *goredis.Tx) error {
		tx.Get(ctx, "tmp")
		c.Eval(ctx, "redis.call('SET', 'tmp', 1); return redis.call('DEL', 'tmp')", []string{"k"})
		_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { p.Set(ctx, "after", "x", 0); return nil })
		return err
	}, "tmp")
	if !errors.Is(err, goredis.TxFailedErr) || c.Exists(ctx, "after").Val() != 0 {
		t.Fatalf("EXEC after a script wrote the watched key: %v", err)
	}

	// A client blocked on a key only the script's run names is woken at once, not at its timeout.
	rd := ts.client(t, &goredis.Options{ReadTimeout: -1})
	got := make(chan []string, 1)
	start := time.Now()
	go func() { got <- rd.BLPop(ctx, 3*time.Second, "ready").Val() }()
	waitParked(t, ts, 1)
	if err := c.Eval(ctx, "redis.call('SET', KEYS[1], 1); return redis.call('RPUSH', 'ready', 'go')", []string{"k"}).Err(); err != nil {
		t.Fatal(err)
	}
	if v := <-got; len(v) != 2 || v[1] != "go" || time.Since(start) > 2*time.Second {
		t.Fatalf("BLPOP on a key the script pushed to = %v after %v", v, time.Since(start))
	}

	// What a script still may not do, write another database, is an error reply of that command, with nothing
	// of it applied; as after any error a script raises, what it wrote before stays (Redis has no rollback).
	err = c.Eval(ctx, "redis.call('SET', KEYS[1], 'x'); return redis.call('COPY', KEYS[1], 'y', 'DB', 1)", []string{"copied"}).Err()
	if err == nil || !strings.Contains(err.Error(), "own database") || c.Get(ctx, "copied").Val() != "x" {
		t.Fatalf("a script writing another database: %v, copied = %q", err, c.Get(ctx, "copied").Val())
	}
	// SELECT is allowed (Redis 7): the script reads the database it selected, but writing it is refused too.
	err = c.Do(ctx, "EVAL", "redis.call('SELECT', 1); return redis.call('SET', 'y', 1)", 0).Err()
	if err == nil || !strings.Contains(err.Error(), "own database") {
		t.Fatalf("a script writing the database it selected: %v", err)
	}
	c1 := ts.client(t, &goredis.Options{DB: 1})
	if c1.Exists(ctx, "y").Val() != 0 {
		t.Fatal("the refused COPY or SET wrote db 1")
	}
}

// TestScriptWakesClientsOnEveryDeclaredKey: a client blocked on a script's second key is woken when the script
// fills it (BullMQ's worker waits in BZPOPMIN on the queue's marker, KEYS[9] of addJob). Only the first key was
// woken before, so the worker took a new job only when its BZPOPMIN timed out, seconds later.
func TestScriptWakesClientsOnEveryDeclaredKey(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	rd := ts.client(t, &goredis.Options{ReadTimeout: -1})
	got := make(chan *goredis.ZWithKey, 1)
	start := time.Now()
	go func() { got <- rd.BZPopMin(ctx, 3*time.Second, "marker").Val() }()
	waitParked(t, ts, 1)
	if err := c.Eval(ctx, "redis.call('RPUSH', KEYS[1], 'job'); return redis.call('ZADD', KEYS[2], 0, '0')",
		[]string{"wait", "marker"}).Err(); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v == nil || v.Member != "0" || time.Since(start) > 2*time.Second {
		t.Fatalf("BZPOPMIN on the script's second key = %+v after %v", v, time.Since(start))
	}
}

// TestScriptRefusedForOtherReasonsIsNotWide: a script refused for something other than writing an undeclared key
// (here a flush, which no script may do; the FLUSHDB fails and the script with it) is not rerun and not remembered as one that writes any key: only
// ErrUndeclaredWrite costs a script the read cache.
func TestScriptRefusedForOtherReasonsIsNotWide(t *testing.T) {
	ts := startServerOver(t, cache.New(memstore.New(), 1<<20), kv.Options{}, Options{}, 0)
	c := ts.client(t, nil)
	const flush = `redis.call('SET', KEYS[1], 'x') redis.call('FLUSHDB') return 1`
	if err := c.Eval(ctx, flush, []string{"k"}).Err(); err == nil {
		t.Fatal("a script that flushes ran")
	}
	if ts.h.scripts.isWide(sha1hex([]byte(flush))) {
		t.Fatal("a script refused for flushing is remembered as writing undeclared keys")
	}
	if v := c.Get(ctx, "k").Val(); v != "x" { // the FLUSHDB alone is refused; what came before it stays, as in Redis
		t.Fatalf("the SET before the refused FLUSHDB: k = %q", v)
	}
}
