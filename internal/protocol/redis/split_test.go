package redis

import (
	"bufio"
	"context"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

func TestSplitReadsAreThoseBeforeTheFirstWriteAndAfterTheLast(t *testing.T) {
	get := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpGet, Table: "default", Key: []byte(k)}
	}
	set := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(k)}
	}
	cases := []struct {
		name        string
		muts        []engine.Mutation
		first, last int
	}{
		{"reads around a write", []engine.Mutation{get("a"), set("b"), get("a"), get("c")}, 1, 2},
		{"reads between writes stay", []engine.Mutation{set("a"), get("x"), set("b"), get("y")}, 0, 1},
		{"writes alone", []engine.Mutation{set("a"), set("b")}, 0, 0},
		{"reads alone", []engine.Mutation{get("a"), get("b")}, 2, 0},
		{"GETEX writes", []engine.Mutation{{Op: engine.OpGet, Table: "default", Key: []byte("a"), Touch: true}, get("a")}, 0, 1},
	}
	for _, c := range cases {
		if first, last := splitReads(c.muts); first != c.first || last != c.last {
			t.Errorf("%s: splitReads = %d, %d; want %d, %d", c.name, first, last, c.first, c.last)
		}
	}
}

// meetingEngine holds each Apply until two have arrived (or a second passed): two connections' batches are
// then both in the engine at once.
type meetingEngine struct {
	engine.Engine
	arrived chan struct{}
}

func (e *meetingEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	select {
	case e.arrived <- struct{}{}:
	default:
	}
	deadline := time.After(time.Second)
	for len(e.arrived) < cap(e.arrived) {
		select {
		case <-deadline:
			return e.Engine.Apply(ctx, b)
		case <-time.After(time.Millisecond):
		}
	}
	return e.Engine.Apply(ctx, b)
}

// TestPipelinesKeepTheirOrderAcrossKeys: two clients pipeline [SET x 1, GET y] and [SET y 1, GET x] at once.
// Redis runs each connection's commands in order, so whichever SET runs first, the other client's GET sees it:
// both GETs answering nil is impossible. Answering a GET before the SET ahead of it on its connection (as when
// every read of a key not written earlier in the pipeline was answered first) gave exactly that.
func TestPipelinesKeepTheirOrderAcrossKeys(t *testing.T) {
	e := &meetingEngine{Engine: memstore.New(), arrived: make(chan struct{}, 2)}
	ts := startServerOver(t, e, kv.Options{SweepInterval: -1}, Options{}, 0)
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, keys := range [][2]string{{"x", "y"}, {"y", "x"}} {
		c := ts.client(t, &goredis.Options{PoolSize: 1})
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := c.Pipeline()
			p.Set(ctx, keys[0], "1", 0)
			g := p.Get(ctx, keys[1])
			_, _ = p.Exec(ctx)
			got[i] = g.Val()
		}()
	}
	wg.Wait()
	if got[0] == "" && got[1] == "" {
		t.Fatal("both pipelines read the other's key as missing after setting their own")
	}
}

// TestMixedPipelineReadsInOrder: in a pipeline of reads and writes, each read sees exactly the writes before it
// on its connection, whether it is answered directly or by the engine.
func TestMixedPipelineReadsInOrder(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "a", "a0", 0)
	c.Set(ctx, "b", "b0", 0)
	p := c.Pipeline()
	g1 := p.Get(ctx, "a")
	p.Set(ctx, "a", "a1", 0)
	g2 := p.Get(ctx, "a")
	g3 := p.Get(ctx, "b")
	p.Rename(ctx, "b", "c")
	g4 := p.Get(ctx, "c")
	g5 := p.Get(ctx, "b")
	p.LPush(ctx, "l", "x")
	g6 := p.Get(ctx, "l")
	if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
		t.Logf("pipeline: %v", err)
	}
	got := []string{g1.Val(), g2.Val(), g3.Val(), g4.Val(), g5.Val(), errString(g6.Err())}
	want := []string{"a0", "a1", "b0", "b0", "", "WRONGTYPE Operation against a key holding the wrong kind of value"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pipeline reads %q, want %q", got, want)
	}
}

// countingGets counts the engine's point reads (Get), to tell a read answered directly from one read in a batch.
type countingGets struct {
	engine.Engine
	gets atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	c.gets.Add(1)
	return c.Engine.Get(ctx, table, key, now)
}

// TestRemoteEngineKeepsReadsInTheBatch: over a local engine a mixed pipeline's reads are answered directly (one
// engine Get each); over a remote one (where each Get is a round trip) they stay in the batch.
func TestRemoteEngineKeepsReadsInTheBatch(t *testing.T) {
	for _, remote := range []bool{false, true} {
		e := &countingGets{Engine: memstore.New()}
		ts := startServerOver(t, e, kv.Options{SweepInterval: -1}, Options{RemoteEngine: remote}, 0)
		c := ts.client(t, &goredis.Options{PoolSize: 1})
		p := c.Pipeline()
		p.Get(ctx, "a")
		p.Set(ctx, "b", "1", 0)
		p.Get(ctx, "c")
		if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		if got, want := e.gets.Load(), map[bool]int64{false: 2, true: 0}[remote]; got != want {
			t.Errorf("RemoteEngine %v: %d engine Gets for a pipeline of GET, SET, GET; want %d", remote, got, want)
		}
		// A pipeline of reads alone: one batch over a remote engine (one round trip), Gets over a local one.
		e.gets.Store(0)
		p = c.Pipeline()
		get := p.Get(ctx, "b")
		p.Get(ctx, "a")
		p.MGet(ctx, "b", "c")
		if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		if get.Val() != "1" {
			t.Errorf("RemoteEngine %v: GET b in a pipeline of reads = %q", remote, get.Val())
		}
		if got, want := e.gets.Load(), map[bool]int64{false: 4, true: 0}[remote]; got != want {
			t.Errorf("RemoteEngine %v: %d engine Gets for a pipeline of GET, GET, MGET of 2; want %d", remote, got, want)
		}
	}
}

// With serializable reads as the server's default (--consistency), a pipeline of reads over a remote engine is
// read key by key (Gets), as READONLY's are: one batch would read them linearizably, dearer than asked.
func TestRemoteEngineReadsAtTheDefaultLevel(t *testing.T) {
	e := &countingGets{Engine: memstore.New()}
	ts := startServerOver(t, e, kv.Options{SweepInterval: -1, Consistency: engine.Serializable}, Options{RemoteEngine: true}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	p := c.Pipeline()
	p.Get(ctx, "a")
	p.Get(ctx, "b")
	if _, err := p.Exec(ctx); err != nil && err != goredis.Nil {
		t.Fatal(err)
	}
	if got := e.gets.Load(); got != 2 {
		t.Errorf("%d engine Gets for a pipeline of two GETs at the serializable default, want 2", got)
	}
}

// TestPipelineReadsStayLinearizableUnderReadonly: under READONLY a plain read may be served at the serializable
// level, but one in a pipeline that also writes is read linearizably, inside the batch, so a connection sees its
// own write even on an engine whose serializable reads may lag ([SET x 1, GET x] went to a direct serializable
// Get once reads after the last write were answered outside the batch).
func TestPipelineReadsStayLinearizableUnderReadonly(t *testing.T) {
	rec, e := enginetest.NewLevels(memstore.New(), engine.Linearizable, engine.Serializable)
	ts := startServerOver(t, e, kv.Options{SweepInterval: -1}, Options{}, 10)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	c.Write([]byte("READONLY\r\n"))
	if l, _ := r.ReadString('\n'); l != "+OK\r\n" {
		t.Fatalf("READONLY: %q", l)
	}
	rec.Asked()
	c.Write([]byte("SET x 1\r\nGET x\r\n")) // one read of the socket: one batch
	var got []string
	for i := 0; i < 3; i++ {
		l, _ := r.ReadString('\n')
		got = append(got, l)
	}
	if got[2] != "1\r\n" {
		t.Fatalf("replies %q", got)
	}
	for _, a := range rec.Asked() {
		if a != "get none" {
			t.Fatalf("a read of the pipeline was served at %q; want every read linearizable", a)
		}
	}
}

// TestDirectReadsKeepNothingOfEarlierBatches: plain reads, and the reads a mixed pipeline answers around its
// writes, answer from result buffers the connection reuses; no reply may carry anything of another batch's or
// another part's results (a value, a kind), whatever the mix of hits, misses and wrong types.
func TestDirectReadsKeepNothingOfEarlierBatches(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	rc.send("SET a va\r\nRPUSH l x\r\n")
	rc.reply()
	rc.reply()
	for _, round := range []struct{ send, want string }{
		{"GET a\r\nGET a\r\nGET a\r\n", "$2\r\nva\r\n$2\r\nva\r\n$2\r\nva\r\n"},
		{"GET nosuch\r\nGET l\r\n", "$-1\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"GET a\r\nGET nosuch\r\n", "$2\r\nva\r\n$-1\r\n"},
		{"GET nosuch\r\n", "$-1\r\n"},
		{"GET l\r\nGET a\r\nGET nosuch\r\nGET a\r\n", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$2\r\nva\r\n$-1\r\n$2\r\nva\r\n"},
		// A mixed pipeline: its reads before the write and after it are answered from two buffers' results.
		{"GET a\r\nGET nosuch\r\nSET b vb\r\nGET b\r\n", "$2\r\nva\r\n$-1\r\n+OK\r\n$2\r\nvb\r\n"},
		{"GET b\r\nSET c vc\r\nGET nosuch\r\nGET a\r\nGET c\r\n", "$2\r\nvb\r\n+OK\r\n$-1\r\n$2\r\nva\r\n$2\r\nvc\r\n"},
	} {
		rc.send(round.send)
		var got string
		for range strings.Count(round.send, "\r\n") {
			got += rc.reply()
		}
		if got != round.want {
			t.Fatalf("%q answered %q, want %q", round.send, got, round.want)
		}
	}
}
