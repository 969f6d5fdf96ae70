package redis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// writeCounter counts the writes a session makes to its connection.
type writeCounter struct {
	net.Conn
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) { c.writes++; return c.Conn.Write(p) }

// The replies of one batch are sent as they pass replyChunk, as runParsed's are: a pipeline of GETEX on a big
// value (writes, so answered together once the batch is applied) held every reply until the last, a gigabyte
// for a thousand GETEX of a 1 MiB value.
func TestBatchRepliesStream(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	client, srv := net.Pipe()
	counted := &writeCounter{Conn: srv}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeConn(context.Background(), counted)
		srv.Close()
	}()
	value := bytes.Repeat([]byte("v"), 700_000)
	var in bytes.Buffer
	fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(value), value)
	for range 4 {
		in.WriteString("*4\r\n$5\r\nGETEX\r\n$1\r\nk\r\n$2\r\nEX\r\n$3\r\n100\r\n")
	}
	client.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { client.Write(in.Bytes()); client.Write([]byte("*1\r\n$4\r\nQUIT\r\n")) }()
	out, _ := io.ReadAll(client)
	<-done
	if n := bytes.Count(out, value); n != 4 {
		t.Fatalf("%d of 4 GETEX answered the value", n)
	}
	if counted.writes < 3 {
		t.Fatalf("the batch's 2.8 MB of replies went out in %d writes: held whole", counted.writes)
	}
}

// A script's redis.call answers from the same writer, with no connection to stream to: a reply over replyChunk
// must still come back to the script whole (the review: a nil connection's Write failed the script).
func TestScriptCallOfABigValue(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	ctx := context.Background()
	if err := c.Set(ctx, "big", strings.Repeat("v", 1<<20), 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"return string.len(redis.call('GET', KEYS[1]))",
		"return string.len(redis.call('GETEX', KEYS[1], 'EX', 100))"} {
		if v, err := c.Eval(ctx, script, []string{"big"}).Result(); err != nil || v != int64(1<<20) {
			t.Fatalf("%s: %v, %v; want %d", script, v, err, 1<<20)
		}
	}
}

// A pipeline's batch is this server's cut of independent commands: refused whole for its size, its commands are
// applied one by one, so only a command too big by itself fails (the review: every reply of the pipeline was the
// error).
func TestPipelineRefusedForItsSizeRunsCommandByCommand(t *testing.T) {
	ts := startServerOver(t, enginetest.SoloOnly{Engine: memstore.New()}, kv.Options{}, Options{}, 0)
	rc := ts.raw(t)
	rc.send("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*3\r\n$6\r\nAPPEND\r\n$1\r\na\r\n$1\r\n2\r\n" +
		"*5\r\n$4\r\nMSET\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n")
	for i, want := range []string{"+OK", ":2", "-ERR the pipeline or transaction is too big", ":13"} {
		if got := rc.reply(); !strings.HasPrefix(got, want) {
			t.Fatalf("reply %d = %q, want %q...", i, got, want)
		}
	}
}

// TestCopyLeavesAWatchOfItsSourceAndStreamEncoding: COPY changes its target only, so an EXEC watching the source
// commits, as in Redis (it aborted: COPY's source was marked as written); OBJECT ENCODING of a stream is
// "stream" (it was "skiplist"). Both found by an audit against redis-server 7.
func TestCopyLeavesAWatchOfItsSourceAndStreamEncoding(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	a := ts.client(t, &goredis.Options{PoolSize: 1})
	b := ts.client(t, nil)
	a.HSet(ctx, "k", "a", "1")
	err := a.Watch(ctx, func(tx *goredis.Tx) error {
		if err := b.Copy(ctx, "k", "j", 0, false).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { p.Set(ctx, "res", "x", 0); return nil })
		return err
	}, "k")
	if err != nil || a.Get(ctx, "res").Val() != "x" {
		t.Fatalf("EXEC after a COPY of the watched key: %v", err)
	}
	// A write of the target does abort a watch of it.
	err = a.Watch(ctx, func(tx *goredis.Tx) error {
		b.Copy(ctx, "k", "j", 0, true)
		_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { p.Set(ctx, "res", "y", 0); return nil })
		return err
	}, "j")
	if err != goredis.TxFailedErr {
		t.Fatalf("EXEC after a COPY onto the watched key: %v, want it aborted", err)
	}
	b.XAdd(ctx, &goredis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"a", "1"}})
	if enc := b.ObjectEncoding(ctx, "s").Val(); enc != "stream" {
		t.Fatalf("OBJECT ENCODING of a stream: %q", enc)
	}
}
