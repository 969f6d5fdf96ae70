package memcache

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
	"anykv/internal/server"
)

// TestPipelineIsOneBatch checks the promise behind the durable engine's fsync sharing: consecutive writes of
// one read become one kv.Store.Apply, a read first applies the writes before it, and all replies of the read
// go out in one Write.
func TestPipelineIsOneBatch(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	var in bytes.Buffer
	for i := range 16 {
		fmt.Fprintf(&in, "set k%d 0 0 2\r\nv%d\r\n", i, i%10)
	}
	in.WriteString("get k3\r\nms q 1 q\r\nx\r\nmd k1 q\r\nincr nope 1\r\nmn\r\n")
	sc := &countingConn{scriptConn: scriptConn{chunks: [][]byte{in.Bytes()}}}
	h.ServeConn(context.Background(), sc)
	want := strings.Repeat("STORED\r\n", 16) + "VALUE k3 0 2\r\nv3\r\nEND\r\nNOT_FOUND\r\nMN\r\n"
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if st := store.Stats(); st.Batches != 2 || st.Mutations != 19 {
		t.Fatalf("%d batches of %d mutations, want 2 batches (16 sets; ms, md, incr) of 19", st.Batches, st.Mutations)
	}
	if sc.writes != 1 {
		t.Fatalf("%d writes, want 1", sc.writes)
	}
}

type countingConn struct {
	scriptConn
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) { c.writes++; return c.scriptConn.Write(p) }

// TestLargePipelineSplitsBatches checks that a pipeline longer than maxPipeline is applied in several batches
// and answered completely and in order.
func TestLargePipelineSplitsBatches(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	var in, want bytes.Buffer
	n := 2*maxPipeline + 10
	for i := range n {
		fmt.Fprintf(&in, "incr c 1\r\n")
		if i == 0 {
			in.WriteString("set c 0 0 1\r\n0\r\n")
			want.WriteString("NOT_FOUND\r\nSTORED\r\n")
		} else {
			fmt.Fprintf(&want, "%d\r\n", i)
		}
	}
	sc := &scriptConn{chunks: [][]byte{in.Bytes()}}
	h.ServeConn(context.Background(), sc)
	if sc.out.String() != want.String() {
		t.Fatalf("replies differ: got %d bytes, want %d", sc.out.Len(), want.Len())
	}
	if b := store.Stats().Batches; b != 3 {
		t.Fatalf("%d batches, want 3", b)
	}
}

// TestWritesAnsweringValuesAreBatchedFew: gat and mg with T are writes whose results hold their items' values
// until the batch is answered. A gat of many keys, or a pipeline of them, is applied maxValueWrites keys at a
// time (the audit's 3,000-key gat of a 1 MiB item held 3 GB), and still answered as one reply in key order.
func TestWritesAnsweringValuesAreBatchedFew(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	var in, want bytes.Buffer
	keys := ""
	for i := range 40 {
		if i != 5 {
			fmt.Fprintf(&in, "set k%d 0 0 2 noreply\r\nv%d\r\n", i, i%10)
			fmt.Fprintf(&want, "VALUE k%d 0 2\r\nv%d\r\n", i, i%10)
		}
		keys += fmt.Sprintf(" k%d", i)
	}
	in.WriteString("mn\r\n")
	h.ServeConn(context.Background(), &scriptConn{chunks: [][]byte{in.Bytes()}})
	before := store.Stats().Batches
	sc := &scriptConn{chunks: [][]byte{[]byte("gat 100" + keys + "\r\n" + strings.Repeat("mg k1 T100 v\r\n", 20) + "mn\r\n")}}
	h.ServeConn(context.Background(), sc)
	wantOut := want.String() + "END\r\n" + strings.Repeat("VA 2\r\nv1\r\n", 20) + "MN\r\n"
	if got := sc.out.String(); got != wantOut {
		t.Fatalf("replies\n%q\nwant\n%q", got, wantOut)
	}
	// 40 gat keys in parts of 16, 16 and 8; the 8 share their batch with 8 mg, the other 12 mg take one more.
	if b := store.Stats().Batches - before; b != 4 {
		t.Fatalf("a gat of 40 keys and 20 mg with T took %d batches, want 4 of at most %d", b, maxValueWrites)
	}
}

// TestPipelineRefusedForItsSizeRunsRequestByRequest: a pipeline's batch refused whole for its size is applied
// one request at a time, so only a request too big by itself (a gat of two keys here) fails.
func TestPipelineRefusedForItsSizeRunsRequestByRequest(t *testing.T) {
	store := kv.New(enginetest.SoloOnly{Engine: memstore.New()}, kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	sc := &scriptConn{chunks: [][]byte{[]byte("set a 0 0 1\r\n1\r\nappend a 0 0 1\r\n2\r\ngat 0 a a\r\nincr a 1\r\nmn\r\n")}}
	h.ServeConn(context.Background(), sc)
	want := "STORED\r\nSTORED\r\nSERVER_ERROR " + engine.ErrBatchTooBig.Error() + "\r\n13\r\nMN\r\n"
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
}

// TestStats checks the figures memcached tools read.
func TestStats(t *testing.T) {
	ts := startServer(t)
	cl := dial(t, ts.addr)
	cl.roundTrip([]byte("set a 0 0 1\r\nx\r\nget a b\r\ngets a\r\ndelete b\r\nincr a 1\r\ncas a 0 0 1 999\r\ny\r\ntouch a 5\r\n"))
	out := string(cl.roundTrip([]byte("stats\r\n")))
	// The first round trip's sentinel (an mg miss) counts as one more get and one more miss.
	for _, want := range []string{
		"STAT version 1.6.18-anykv", "STAT curr_connections 1", "STAT total_connections 1", "STAT cmd_get 4",
		"STAT cmd_set 2", "STAT get_hits 2", "STAT get_misses 2", "STAT delete_misses 1", "STAT cas_badval 1",
		"STAT touch_hits 1", "STAT curr_items 1", "STAT total_items 1", "STAT threads ", "STAT bytes_read ",
		"STAT time 1767225600\r\n", "STAT uptime 0\r\n", "STAT engine_keys 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lacks %q", want)
		}
	}
	if !strings.HasSuffix(out, "END\r\n") {
		t.Errorf("stats does not end with END: %q", out)
	}
	set := string(cl.roundTrip([]byte("stats settings\r\n")))
	if !strings.Contains(set, "STAT item_size_max 1048576\r\n") || !strings.Contains(set, "STAT evictions off\r\n") {
		t.Errorf("stats settings: %s", set)
	}
	if out := string(cl.roundTrip([]byte("stats reset\r\nstats\r\n"))); !strings.HasPrefix(out, "RESET\r\n") ||
		!regexp.MustCompile(`STAT cmd_get 0\r\n`).MatchString(out) {
		t.Errorf("after reset: %s", out)
	}
}

// TestReject checks the reply to a client over the connection limit and the stats that count it.
func TestReject(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	srv := server.New(slog.New(slog.DiscardHandler))
	addr, counts, err := srv.Listen("memcache", "127.0.0.1:0", h, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.SetConnCounts(counts)
	defer srv.Shutdown(context.Background())
	first := dial(t, addr.String())
	first.roundTrip([]byte("version\r\n")) // the first connection is being served
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(c)
	if string(got) != "SERVER_ERROR Too many open connections\r\n" {
		t.Fatalf("rejected connection read %q", got)
	}
	if out := string(first.roundTrip([]byte("stats\r\n"))); !strings.Contains(out, "STAT rejected_connections 1\r\n") {
		t.Fatalf("stats: %s", out)
	}
}

// gatedEngine holds every Apply until release is closed, telling entered when one arrives.
type gatedEngine struct {
	engine.Engine
	entered chan struct{}
	release chan struct{}
}

func (g *gatedEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Engine.Apply(ctx, b)
}

// TestShutdownAnswersWhatWasRead: a shutdown that begins while a connection's requests are read but not yet
// answered (its write is held inside the engine, and a read waits behind it) lets the connection execute and
// answer all of them before it is closed.
func TestShutdownAnswersWhatWasRead(t *testing.T) {
	gate := &gatedEngine{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	store := kv.New(gate, kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	srv := server.New(slog.New(slog.DiscardHandler))
	addr, _, err := srv.Listen("memcache", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("set a 0 0 1\r\nx\r\nget a\r\n")); err != nil {
		t.Fatal(err)
	}
	<-gate.entered // the set is inside the engine; the get was read with it and waits
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	for { // the shutdown has begun once the listener refuses new connections
		probe, err := net.Dial("tcp", addr.String())
		if err != nil {
			break
		}
		probe.Close()
		runtime.Gosched()
	}
	close(gate.release)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c) // the server closes the connection once it answered
	if want := "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n"; string(got) != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := store.Get(context.Background(), "default", []byte("a")); err != nil {
		t.Fatalf("item lost: %v", err)
	}
}

// TestStoreKeyLimit checks that a store key limit below memcached's 250 bytes is enforced per request, so
// one long key cannot fail the whole pipelined batch around it.
func TestStoreKeyLimit(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1, Limits: kv.Limits{MaxKey: 8}})
	defer store.Close()
	h := New(store, Options{})
	in := "set short 0 0 1\r\nx\r\nset toolongkey 0 0 1\r\ny\r\nms YWJjZGVmZ2hpams= 1 b\r\nz\r\nget short\r\n"
	sc := &scriptConn{chunks: [][]byte{[]byte(in)}}
	h.ServeConn(context.Background(), sc)
	want := "STORED\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n" +
		"VALUE short 0 1\r\nx\r\nEND\r\n" // the refused requests' data blocks are discarded
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
}

// TestLargeGetIsWrittenAsItGrows checks that a multi-get of large values is sent in pieces rather than held
// whole, and arrives intact.
func TestLargeGetIsWrittenAsItGrows(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	var in, want bytes.Buffer
	value := bytes.Repeat([]byte("0123456789"), 70_000) // 700 kB
	for _, k := range []string{"a", "b", "c"} {
		fmt.Fprintf(&in, "set %s 0 0 %d noreply\r\n%s\r\n", k, len(value), value)
		fmt.Fprintf(&want, "VALUE %s 0 %d\r\n%s\r\n", k, len(value), value)
	}
	in.WriteString("get a b c\r\n")
	want.WriteString("END\r\n")
	sc := &countingConn{scriptConn: scriptConn{chunks: [][]byte{in.Bytes()}}}
	h.ServeConn(context.Background(), sc)
	if !bytes.Equal(sc.out.Bytes(), want.Bytes()) {
		t.Fatalf("reply of %d bytes differs from the %d expected", sc.out.Len(), want.Len())
	}
	if sc.writes < 2 {
		t.Fatalf("%d writes: the reply was held whole", sc.writes)
	}
	// So are a gat's and a pipeline of mg's (the audit's pipeline of 3,000 mg of a 1 MiB item held 3 GB).
	for _, req := range []string{"gat 0 a b c\r\n", "mg a v\r\nmg b T0 v\r\nmg c v\r\n"} {
		sc := &countingConn{scriptConn: scriptConn{chunks: [][]byte{[]byte(req)}}}
		h.ServeConn(context.Background(), sc)
		if n := bytes.Count(sc.out.Bytes(), value); n != 3 || sc.writes < 2 {
			t.Fatalf("%q: %d values in %d writes; want 3 sent in pieces", req, n, sc.writes)
		}
	}
}

// TestStoreFailure checks that a failing store is reported as SERVER_ERROR to every request it concerns.
func TestStoreFailure(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	h := New(store, Options{})
	store.Close()
	// A gat of 40 keys is applied in three parts (TestWritesAnsweringValuesAreBatchedFew): still one error line.
	gat := "gat 0" + strings.Repeat(" k", 40) + "\r\n"
	sc := &scriptConn{chunks: [][]byte{[]byte("set a 0 0 1\r\nx\r\ndelete a noreply\r\nmn\r\nget a\r\nmg a v\r\nms a 1 q\r\nx\r\n" + gat + "mn\r\n")}}
	h.ServeConn(context.Background(), sc)
	want := "SERVER_ERROR engine closed\r\nMN\r\nSERVER_ERROR engine closed\r\nSERVER_ERROR engine closed\r\n" +
		"SERVER_ERROR engine closed\r\nSERVER_ERROR engine closed\r\nMN\r\n"
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
}

// TestMetrics checks that every request reaches its command's observer, with errors counted as failures.
func TestMetrics(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	m := metrics.New(store)
	h := New(store, Options{Metrics: m})
	in := "set a 0 0 1\r\nx\r\nget a\r\nget b\r\nincr a 1\r\nbogus\r\nmg a v\r\nms b 1 T5\r\ny\r\nmn\r\n"
	h.ServeConn(context.Background(), &scriptConn{chunks: [][]byte{[]byte(in)}})
	for _, tc := range []struct {
		cmd              string
		requests, errors uint64
	}{
		{"set", 1, 0}, {"get", 2, 0}, {"incr", 1, 1}, {"invalid", 1, 1}, {"mg", 1, 0}, {"ms", 1, 0}, {"mn", 1, 0},
		{"delete", 0, 0},
	} {
		o := m.Command("memcache", tc.cmd)
		if o.Requests() != tc.requests || o.Errors() != tc.errors {
			t.Errorf("%s: %d requests, %d errors; want %d, %d", tc.cmd, o.Requests(), o.Errors(), tc.requests, tc.errors)
		}
	}
}

// TestDelayedFlushReplaced checks that an old delayed flush_all whose timer fires after a newer flush_all
// replaced it does nothing, and that the newer one still runs.
func TestDelayedFlushReplaced(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	timers := &fakeTimers{}
	h.afterFunc = timers.afterFunc
	sc := &scriptConn{chunks: [][]byte{[]byte("set a 0 0 1\r\nx\r\nflush_all 10\r\nflush_all 20\r\n")}}
	h.ServeConn(context.Background(), sc)
	if len(timers.timers) != 2 || !timers.timers[0].stopped || timers.timers[1].stopped {
		t.Fatalf("timers %+v", timers.timers)
	}
	timers.timers[0].f() // fired late, after being replaced
	if _, err := store.Get(context.Background(), "default", []byte("a")); err != nil {
		t.Fatalf("the replaced flush ran: %v", err)
	}
	timers.timers[1].f()
	if _, err := store.Get(context.Background(), "default", []byte("a")); err == nil {
		t.Fatal("the pending flush did not run")
	}
}

// TestGetAllocations guards the get path: beyond the value copy the store returns, serving gets allocates
// nothing per key.
func TestGetAllocations(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	var load, req bytes.Buffer
	for i := range 16 {
		fmt.Fprintf(&load, "set key%d 0 0 5 noreply\r\nvalue\r\n", i)
		fmt.Fprintf(&req, "get key%d\r\nmg key%d v f\r\n", i, i)
	}
	h.ServeConn(context.Background(), &scriptConn{chunks: [][]byte{load.Bytes()}})
	sc := &scriptConn{}
	c := newConn(h, sc)
	serve := func() {
		sc.chunks = append(sc.chunks[:0], req.Bytes())
		sc.out.Reset()
		c.serve(context.Background())
	}
	serve() // grow the buffers once
	allocs := testing.AllocsPerRun(50, serve)
	t.Logf("%.1f allocations per run", allocs)
	if perKey := allocs / 32; perKey > 1.2 {
		t.Fatalf("%.1f allocations for 32 lookups (%.2f each); want about 1 each (the value copy)", allocs, perKey)
	}
}

// countingGets counts the engine's Gets.
type countingGets struct {
	engine.Engine
	gets int
}

func (c *countingGets) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	c.gets++
	return c.Engine.Get(ctx, table, key, now)
}

// TestRemoteMultiGetIsOneBatch: over a datastore (RemoteEngine) a get of several keys is one batch, one round
// trip, with the same replies as Gets one by one give over a local engine.
func TestRemoteMultiGetIsOneBatch(t *testing.T) {
	for _, remote := range []bool{false, true} {
		e := &countingGets{Engine: memstore.New()}
		store := kv.New(e, kv.Options{SweepInterval: -1})
		h := New(store, Options{RemoteEngine: remote})
		in := "set a 5 0 1\r\nx\r\nset c 0 0 2\r\nyz\r\nget a b c\r\ngets c\r\n"
		sc := &scriptConn{chunks: [][]byte{[]byte(in)}}
		h.ServeConn(context.Background(), sc)
		want := "STORED\r\nSTORED\r\nVALUE a 5 1\r\nx\r\nVALUE c 0 2\r\nyz\r\nEND\r\nVALUE c 0 2 "
		if got := sc.out.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "\r\nyz\r\nEND\r\n") {
			t.Errorf("remote %v: replies %q", remote, got)
		}
		if wantGets := map[bool]int{false: 4, true: 1}[remote]; e.gets != wantGets {
			t.Errorf("remote %v: %d engine Gets, want %d", remote, e.gets, wantGets)
		}
		store.Close()
	}
	// With serializable reads as the server's default (--consistency) the keys are read one by one: a batch's
	// reads would be linearizable, dearer than asked.
	e := &countingGets{Engine: memstore.New()}
	store := kv.New(e, kv.Options{SweepInterval: -1, Consistency: engine.Serializable})
	defer store.Close()
	sc := &scriptConn{chunks: [][]byte{[]byte("get a b c\r\n")}}
	New(store, Options{RemoteEngine: true}).ServeConn(context.Background(), sc)
	if sc.out.String() != "END\r\n" || e.gets != 3 {
		t.Errorf("serializable default: replies %q after %d engine Gets, want END after 3", sc.out.String(), e.gets)
	}
}

// TestDecodedKeysSurviveABatchSplit: a meta write with a base64 key (b) that arrives when the pending batch is
// full flushes that batch first; the key, decoded into the parser's arena, must still name the same key when
// its write joins the next batch. The arena was reset by that flush, and the next request's key was decoded
// over it: "ms YWFh" (aaa) was acknowledged and written to "bbb", the key of the mg that followed. The same
// held for every pipelined b write over an engine of one-item batches.
func TestDecodedKeysSurviveABatchSplit(t *testing.T) {
	for _, single := range []bool{false, true} {
		var e engine.Engine = memstore.New()
		if single {
			e = oneItemEngine{memstore.New()}
		}
		store := kv.New(e, kv.Options{SweepInterval: -1})
		h := New(store, Options{})
		var in bytes.Buffer
		for range min(maxPipeline, store.Limits().MaxBatch) {
			in.WriteString("ms z 1 q\r\nz\r\n") // fills the pending batch (quiet: no reply)
		}
		in.WriteString("ms YWFh 1 b\r\nA\r\nms YmI= 1 b\r\nB\r\nmg YmJi b v\r\nmn\r\n")
		in.WriteString("mg aaa v\r\nmg bb v\r\nmg bbb v\r\nmn\r\n")
		sc := &scriptConn{chunks: [][]byte{in.Bytes()}}
		h.ServeConn(context.Background(), sc)
		want := "HD\r\nHD\r\nEN\r\nMN\r\nVA 1\r\nA\r\nVA 1\r\nB\r\nEN\r\nMN\r\n"
		if got := sc.out.String(); got != want {
			t.Errorf("one-item batches %v: replies\n%q\nwant\n%q", single, got, want)
		}
		store.Close()
	}
}

// oneItemEngine is memstore declaring batches of one item, as the memcached engine does.
type oneItemEngine struct{ *memstore.Store }

func (oneItemEngine) SingleItemBatches() bool { return true }

// TestValueThatCannotFitIsRefused: a value of 64 KiB or more a get reads counts twice against --maxmemory-clients
// (the value and its reply) until its reply is written; one that could never fit answers SERVER_ERROR at once,
// and the replies after it go out in order on the same connection (before, the client was closed, as memcached
// closes a client whose output it cannot hold, which also closed readers that only had to wait their turn).
func TestValueThatCannotFitIsRefused(t *testing.T) {
	b := membudget.New(64<<20, nil)
	nc := dialBudget(t, b)
	val := strings.Repeat("v", 900<<10)
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\nset small 0 0 1\r\nS\r\n", len(val), val)
	want := "STORED\r\nSTORED\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(nc, got); err != nil || string(got) != want {
		t.Fatalf("sets: %q, %v", got, err)
	}
	b.SetLimit(512 << 10) // the value and its reply do not fit
	io.WriteString(nc, "get big\r\nget small\r\nversion\r\n")
	r := bufio.NewReader(nc)
	for _, want := range []string{"SERVER_ERROR client memory", "VALUE small 0 1", "S", "END", "VERSION"} {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("got %q, %v; want a line starting %q", line, err, want)
		}
	}
}

// TestBigGetsWaitForRoomInTheBudget: while other clients' replies fill the budget, a get of a big value waits for
// them rather than reading it uncounted or closing the connection, then answers, and gives the room back once its
// reply is written (20 clients' get of four 60 MiB items had peaked at 2.9 GB for a 1 GiB budget, 2 closed).
func TestBigGetsWaitForRoomInTheBudget(t *testing.T) {
	b := membudget.New(3<<20, nil)
	nc := dialBudget(t, b)
	val := strings.Repeat("v", 1<<20)
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\n", len(val), val)
	r := bufio.NewReader(nc)
	if line, err := r.ReadString('\n'); line != "STORED\r\n" {
		t.Fatalf("set: %q, %v", line, err)
	}
	others := b.Open("others", nil) // replies of other clients being written
	if err := others.Reserve(3 << 19); err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	var heldWhileReading atomic.Int64
	go func() {
		time.Sleep(hold)
		heldWhileReading.Store(b.Used())
		others.Release(3 << 19)
	}()
	start := time.Now()
	for _, req := range []string{"get big big\r\n", "mg big v\r\n"} {
		io.WriteString(nc, req)
		n := strings.Count(req, "big")
		for range n {
			if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "1048576") {
				t.Fatalf("%q: %q, %v", req, line, err)
			}
			if _, err := io.ReadFull(r, make([]byte, len(val)+2)); err != nil {
				t.Fatal(err)
			}
		}
		if req[0] == 'g' {
			if line, _ := r.ReadString('\n'); line != "END\r\n" {
				t.Fatalf("%q ended %q", req, line)
			}
		}
	}
	if took := time.Since(start); took < hold {
		t.Fatalf("two gets of 1 MiB (2 MiB each with its reply) ran in %v with 1.5 MiB of the budget free", took)
	}
	if h := heldWhileReading.Load(); h != 3<<19 {
		t.Fatalf("while the get waited the budget held %d bytes, want only the others' 1.5 MiB", h)
	}
	for deadline := time.Now().Add(5 * time.Second); b.Used() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the replies the budget still holds %d bytes", b.Used())
		}
	}
	others.Close()
}

// TestGrowingRequestFitsTheBudgetOnce: a set whose value arrives into a buffer grown step by step (16 KiB to
// 1 MiB) is stored under a budget just over its final buffer. Each growth reserved the new buffer beside the
// one it left, 528 KiB + 1 MiB at the last step, and the client was answered out of memory and closed.
func TestGrowingRequestFitsTheBudgetOnce(t *testing.T) {
	val := strings.Repeat("v", 1<<20)
	b := membudget.New(int64(membudget.ClassSize(len(val)+100)+minRead), nil)
	nc := dialBudget(t, b)
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\n", len(val), val)
	got := make([]byte, len("STORED\r\n"))
	if _, err := io.ReadFull(nc, got); err != nil || string(got) != "STORED\r\n" {
		t.Fatalf("a 1 MiB set under a %d-byte budget: %q, %v", b.Limit(), got, err)
	}
}

// dialBudget starts a server whose request and reply buffers count against b and returns a connection to it,
// closed when the test ends, with a 10 s deadline.
func dialBudget(t *testing.T, b *membudget.Budget) net.Conn {
	t.Helper()
	ts := startServer(t, func(o *Options, _ *kv.Options) { o.Budget = b })
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

// TestRequestBeingRunIsNotIdle: a connection running what it read (a set held in a slow engine, past the
// budget's idleEvict, with a get of a big value pipelined behind it) holds the set's request buffer all along
// and is being served, not idle: another client's get waiting for room in maxmemory-clients does not evict it,
// and both are answered once the set is through. Before, it was evicted once the get had waited idleEvict (10 s
// unless the budget's SetIdleEvict shortens it): the set was applied, but the get pipelined behind it was
// answered out of memory and the connection closed.
func TestRequestBeingRunIsNotIdle(t *testing.T) {
	const idle = 50 * time.Millisecond
	b := membudget.New(64<<20, nil)
	b.SetIdleEvict(idle)
	gate := &gatedEngine{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	ts := startServerOver(t, gate, func(o *Options, _ *kv.Options) { o.Budget = b })
	runner, reader := dial(t, ts.addr).c, dial(t, ts.addr).c
	for _, c := range []net.Conn{runner, reader} {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	mid, other := strings.Repeat("m", membudget.ReplyHold), strings.Repeat("o", 2*membudget.ReplyHold)
	for _, it := range [][2]string{{"mid", mid}, {"other", other}} {
		fmt.Fprintf(runner, "set %s 0 0 %d\r\n%s\r\n", it[0], len(it[1]), it[1])
		<-gate.entered
		gate.release <- struct{}{} // this one passes
		expectReply(t, runner, "set "+it[0], "STORED\r\n")
	}

	big := strings.Repeat("b", 900<<10)
	fmt.Fprintf(runner, "set big 0 0 %d\r\n%s\r\nget mid\r\n", len(big), big)
	<-gate.entered // the set is in the engine, its request buffer held
	// The runner's get of mid (its value twice, 128 KiB) fits beside the buffer; the reader's of other (256 KiB)
	// does not, and waits.
	b.SetLimit(b.Used() + 3*membudget.ReplyHold)
	io.WriteString(reader, "get other\r\n")
	time.Sleep(20 * idle)
	if b.Evictions() != 0 {
		t.Errorf("a client evicted while the reader waited %v (idleEvict %v)", 20*idle, idle)
	}
	close(gate.release)
	expectReply(t, runner, "the slow set and the get behind it",
		"STORED\r\nVALUE mid 0 "+fmt.Sprint(len(mid))+"\r\n"+mid+"\r\nEND\r\n")
	expectReply(t, reader, "the waiting get", "VALUE other 0 "+fmt.Sprint(len(other))+"\r\n"+other+"\r\nEND\r\n")
	if b.Evictions() != 0 {
		t.Errorf("%d clients evicted", b.Evictions())
	}
}

// expectReply reads len(want) bytes from c and fails the test unless they are want.
func expectReply(t *testing.T, c net.Conn, what, want string) {
	t.Helper()
	got := make([]byte, len(want))
	n, err := io.ReadFull(c, got)
	if err != nil || string(got) != want {
		t.Fatalf("%s: %.80q (%d bytes), %v; want %.80q", what, got[:n], n, err, want)
	}
}

// TestSlowRequestIsNotIdle: a big set whose data comes in slowly but steadily, for longer than the idle limit,
// is not idle: a get waiting for room in maxmemory-clients does not evict it, and both are answered. Before, its
// bytes marked the connection active only as its buffer grew, so the end of a 1 MiB value sent over more than the
// limit looked idle, and the waiting get closed it mid-request.
func TestSlowRequestIsNotIdle(t *testing.T) {
	const idle = 500 * time.Millisecond
	b := membudget.New(64<<20, nil)
	b.SetIdleEvict(idle)
	ts := startServer(t, func(o *Options, _ *kv.Options) { o.Budget = b })
	sender, reader := dial(t, ts.addr).c, dial(t, ts.addr).c
	for _, c := range []net.Conn{sender, reader} {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	other := strings.Repeat("o", 512<<10)
	fmt.Fprintf(reader, "set other 0 0 %d\r\n%s\r\n", len(other), other)
	expectReply(t, reader, "set other", "STORED\r\n")

	const size, tail = 1 << 20, 256 << 10
	val := strings.Repeat("s", size)
	fmt.Fprintf(sender, "set slow 0 0 %d\r\n%s", size, val[:size-tail]) // the buffer at its full size from here
	for deadline := time.Now().Add(5 * time.Second); b.Used() < size && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if u := b.Used(); u < size {
		t.Fatalf("the set's buffer holds %d bytes, want 1 MiB", u)
	}
	b.SetLimit(b.Used() + tail) // the reader's get of other does not fit beside it, and waits
	io.WriteString(reader, "get other\r\n")
	// The rest over some 1.6 s, three times the limit: 8 KiB every 50 ms, a tenth of the limit, so a sender or
	// server held up by a loaded machine for a few times that still shows progress within it.
	for sent := size - tail; sent < size; sent += 8 << 10 {
		time.Sleep(50 * time.Millisecond)
		if _, err := io.WriteString(sender, val[sent:sent+8<<10]); err != nil {
			t.Fatalf("the slow set, %d bytes in: %v", sent, err)
		}
	}
	io.WriteString(sender, "\r\n")
	expectReply(t, sender, "the slow set", "STORED\r\n")
	expectReply(t, reader, "the waiting get", fmt.Sprintf("VALUE other 0 %d\r\n%s\r\nEND\r\n", len(other), other))
	if e := b.Evictions(); e != 0 {
		t.Errorf("%d clients evicted", e)
	}
}
