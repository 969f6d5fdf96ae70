package redis

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// errCorrupt stands for what a corrupt sstable block answers a read.
var errCorrupt = errors.New("pebble: checksum mismatch in block 42")

// startFaulty serves RESP over memstore behind a Faulty decorator; the test sets its faults.
func startFaulty(t *testing.T) (*enginetest.Faulty, *goredis.Client) {
	t.Helper()
	f, e := enginetest.NewFaulty(memstore.New(), errCorrupt)
	return f, serveEngine(t, e)
}

// serveEngine serves RESP over e and returns a client that does not retry.
func serveEngine(t *testing.T, e engine.Engine) *goredis.Client {
	t.Helper()
	store := kv.New(e, kv.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := New(store, Options{Logger: log, Settings: map[string]string{"engine": "memory", "maxclients": "100"}})
	srv := server.New(log)
	addr, _, err := srv.Listen("resp", "127.0.0.1:0", h, 10)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr.String(), MaxRetries: -1})
	t.Cleanup(func() {
		c.Close()
		srv.Shutdown(context.Background())
		store.Close()
	})
	return c
}

// badKeys fails every key that begins with "bad".
func badKeys(table string, key []byte) bool { return strings.HasPrefix(string(key), "bad") }

// wholeTable fails every read of RESP database 0, its listing included.
func wholeTable(table string, key []byte) bool { return table == "default" }

func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.HasPrefix(err.Error(), "ERR ") {
		t.Errorf("%s: got error %v, want -ERR with the engine's error", what, err)
	}
}

// Every read command answers the engine's read error as an error, never as "absent" (issue 10).
func TestReadErrorsAreErrors(t *testing.T) {
	ctx := context.Background()
	f, c := startFaulty(t)
	if err := c.MSet(ctx, "good", "v", "bad", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expire(ctx, "bad", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	f.Fail(badKeys)

	cmds := []struct {
		name string
		args []any
	}{
		{"GET", []any{"get", "bad"}},
		{"MGET", []any{"mget", "good", "bad"}},
		{"EXISTS", []any{"exists", "good", "bad"}},
		{"TYPE", []any{"type", "bad"}},
		{"TTL", []any{"ttl", "bad"}},
		{"PTTL", []any{"pttl", "bad"}},
		{"EXPIRETIME", []any{"expiretime", "bad"}},
		{"PEXPIRETIME", []any{"pexpiretime", "bad"}},
		{"STRLEN", []any{"strlen", "bad"}},
		{"GETRANGE", []any{"getrange", "bad", "0", "-1"}},
		{"SUBSTR", []any{"substr", "bad", "0", "-1"}},
		{"GETEX", []any{"getex", "bad"}},
		{"GETEX PERSIST", []any{"getex", "bad", "persist"}},
		{"GETDEL", []any{"getdel", "bad"}},
		{"GETSET", []any{"getset", "bad", "x"}},
		{"SET GET", []any{"set", "bad", "x", "get"}},
		{"DEL", []any{"del", "good", "bad"}},
		{"COPY from", []any{"copy", "bad", "x"}},
		{"COPY to", []any{"copy", "good", "bad2"}},
		{"RENAME", []any{"rename", "bad", "x"}},
		{"RENAMENX", []any{"renamenx", "bad", "x"}},
		{"EXPIRE", []any{"expire", "bad", "10"}},
		{"PERSIST", []any{"persist", "bad"}},
		{"INCR", []any{"incr", "bad"}},
		{"WATCH", []any{"watch", "good", "bad"}},
	}
	for _, tc := range cmds {
		wantCorrupt(t, tc.name, c.Do(ctx, tc.args...).Err())
	}

	// The same reads in a pipeline with a write (one engine batch: OpGet results carry the error) and in MULTI.
	for _, tx := range []bool{false, true} {
		var cmds []goredis.Cmder
		fn := func(p goredis.Pipeliner) error {
			p.Get(ctx, "bad")
			p.MGet(ctx, "good", "bad")
			p.Exists(ctx, "bad")
			p.Type(ctx, "bad")
			p.TTL(ctx, "bad")
			p.StrLen(ctx, "bad")
			p.GetRange(ctx, "bad", 0, -1)
			p.Set(ctx, "other", "x", 0)
			return nil
		}
		var err error
		if tx {
			cmds, err = c.TxPipelined(ctx, fn)
		} else {
			cmds, err = c.Pipelined(ctx, fn)
		}
		if err == nil {
			t.Errorf("tx=%v: the pipeline reported no error", tx)
		}
		for _, cmd := range cmds {
			if cmd.Name() == "set" {
				if cmd.Err() != nil {
					t.Errorf("tx=%v: SET beside the failed reads: %v", tx, cmd.Err())
				}
				continue
			}
			wantCorrupt(t, "tx="+map[bool]string{false: "no", true: "yes"}[tx]+" "+cmd.Name(), cmd.Err())
		}
	}

	// Absent stays absent, and the connection is usable.
	f.Fail(nil)
	if v, err := c.MGet(ctx, "good", "missing").Result(); err != nil || v[0] != "v" || v[1] != nil {
		t.Fatalf("MGET after healing: %v, %v", v, err)
	}
	if n, err := c.Exists(ctx, "good", "missing").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS after healing: %d, %v", n, err)
	}

	// Commands that scan the keyspace.
	f.Fail(wholeTable)
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"SCAN", []any{"scan", "0"}},
		{"KEYS", []any{"keys", "*"}},
		{"DBSIZE", []any{"dbsize"}},
		{"RANDOMKEY", []any{"randomkey"}},
		{"INFO keyspace", []any{"info", "keyspace"}},
		{"INFO", []any{"info"}},
	} {
		wantCorrupt(t, tc.name, c.Do(ctx, tc.args...).Err())
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the errors: %v", err)
	}
}

// An engine without scans still answers INFO, with an empty keyspace section, as before.
func TestInfoWithoutScanner(t *testing.T) {
	c := serveEngine(t, struct{ engine.Engine }{memstore.New()})
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx).Result()
	if err != nil || !strings.Contains(info, "# Keyspace") || strings.Contains(info, "db0:") {
		t.Fatalf("INFO without a scanner: %v\n%s", err, info)
	}
}
