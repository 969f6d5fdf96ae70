package memcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// errCorrupt stands for what a corrupt sstable block answers a read; its line break must not reach the wire.
var errCorrupt = errors.New("pebble: checksum mismatch\r\nin block 42")

const corruptReply = "SERVER_ERROR pebble: checksum mismatch  in block 42\r\n"

// startFaulty serves memcached over memstore behind a Faulty decorator; the test sets its faults.
func startFaulty(t *testing.T) (*enginetest.Faulty, string) {
	t.Helper()
	f, e := enginetest.NewFaulty(memstore.New(), errCorrupt)
	store := kv.New(e, kv.Options{SweepInterval: -1})
	h := New(store, Options{})
	srv := server.New(slog.New(slog.DiscardHandler))
	addr, _, err := srv.Listen("memcache", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	return f, addr.String()
}

func badKeys(table string, key []byte) bool { return strings.HasPrefix(string(key), "bad") }

// Every read answers the engine's read error as SERVER_ERROR, never as a miss, and the connection stays usable
// (issue 10).
func TestReadErrorsAreServerErrors(t *testing.T) {
	f, addr := startFaulty(t)
	mc := memcache.New(addr)
	for _, k := range []string{"good", "bad"} {
		if err := mc.Set(&memcache.Item{Key: k, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	f.Fail(badKeys)

	cl := dial(t, addr)
	cases := []struct{ req, want string }{
		{"get good bad\r\n", corruptReply},
		{"gets bad good\r\n", corruptReply},
		{"gat 0 good bad\r\n", corruptReply},
		{"gats 0 bad\r\n", corruptReply},
		{"touch bad 0\r\n", corruptReply},
		{"incr bad 1\r\n", corruptReply},
		{"delete bad\r\n", corruptReply},
		{"append bad 0 0 1\r\nx\r\n", corruptReply},
		{"cas bad 0 0 1 5\r\nx\r\n", corruptReply},
		{"mg bad v\r\n", corruptReply},
		{"mg bad v q\r\n", corruptReply},
		{"mg bad v T30\r\n", corruptReply},
		{"mg bad N30 v\r\n", corruptReply},
		{"ma bad\r\n", corruptReply},
		{"md bad\r\n", corruptReply},
		{"ms bad 1 C5\r\nx\r\n", corruptReply},
		{"me bad\r\n", corruptReply},
		{"mn\r\n", "MN\r\n"},
		{"get good\r\n", "VALUE good 0 1\r\nv\r\nEND\r\n"},
	}
	for _, tc := range cases {
		if got := string(cl.roundTrip([]byte(tc.req))); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.req, got, tc.want)
		}
	}
	stats := string(cl.roundTrip([]byte("stats\r\n")))
	if want := "STAT server_errors 17\r\n"; !strings.Contains(stats, want) {
		t.Errorf("stats lack %q:\n%s", want, stats)
	}

	// A real client sees errors, not misses.
	if _, err := mc.Get("bad"); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("gomemcache Get: %v, want a server error", err)
	}
	if _, err := mc.GetMulti([]string{"good", "bad"}); err == nil {
		t.Errorf("gomemcache GetMulti: no error")
	}
	if err := mc.Touch("bad", 10); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("gomemcache Touch: %v, want a server error", err)
	}
	if _, err := mc.GetAndTouch("bad", 10); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("gomemcache GetAndTouch: %v, want a server error", err)
	}
	f.Fail(nil)
	if it, err := mc.Get("bad"); err != nil || string(it.Value) != "v" {
		t.Fatalf("after healing: %v, %v", it, err)
	}
	if _, err := mc.Get("missing"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("a miss after healing: %v", err)
	}
}

// TestGatStopsAtAFailedPart: a gat of many keys is applied 16 keys at a time; once a part fails, its reply ends
// there with the error (the parts before it answered and touched, as memcached's gat stops at a failure), and
// no key after that part is touched. The parts after it were still applied, and the client, whose reply ended
// at the error, took their keys for untouched while their expiry had changed.
func TestGatStopsAtAFailedPart(t *testing.T) {
	f, addr := startFaulty(t)
	cl := dial(t, addr)
	var set strings.Builder
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
		if i == 20 { // in the second part (keys 16 to 31)
			keys[i] = "bad20"
		}
		fmt.Fprintf(&set, "set %s 0 0 1 noreply\r\nv\r\n", keys[i])
	}
	cl.roundTrip([]byte(set.String()))
	f.Fail(badKeys)
	want := ""
	for _, k := range keys[:16] {
		want += "VALUE " + k + " 0 1\r\nv\r\n"
	}
	want += corruptReply
	gat := "gat 100 " + strings.Join(keys, " ") + "\r\nmn\r\n"
	if got := string(cl.roundTrip([]byte(gat))); got != want+"MN\r\n" {
		t.Errorf("gat with a failing second part: %q, want %q", got, want+"MN\r\n")
	}
	f.Fail(nil)
	for i, k := range keys {
		want := "HD t-1\r\n" // untouched: no expiry
		if i < 16 {
			want = "HD t100\r\n"
		}
		if got := string(cl.roundTrip([]byte("mg " + k + " t\r\n"))); got != want {
			t.Errorf("%s after the gat: %q, want %q", k, got, want)
		}
	}
}

// failWrites fails every batch that writes or touches while fail holds an error, applying nothing.
type failWrites struct {
	engine.Engine
	fail atomic.Pointer[error]
}

func (e *failWrites) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if p := e.fail.Load(); p != nil {
		for i := range b.Muts {
			if b.Muts[i].Writes() || b.Muts[i].Touch {
				return nil, *p
			}
		}
	}
	return e.Engine.Apply(ctx, b)
}

// TestPipelineOfAFailedBatchIsErrors: pipelined writes applied as one batch that fails whole (here a commit of
// unknown outcome) each answer the error, text, meta and binary alike, quiet ones included: a quiet command's
// silence, or a q flag's, says it succeeded.
func TestPipelineOfAFailedBatchIsErrors(t *testing.T) {
	e := &failWrites{Engine: memstore.New()}
	ts := startServerOver(t, e)
	text, bin := dial(t, ts.addr), dial(t, ts.addr)
	text.roundTrip([]byte("set a 0 0 1 noreply\r\n1\r\n"))
	fail := fmt.Errorf("etcd: %w: the member was lost", engine.ErrUnknownOutcome)
	e.fail.Store(&fail)
	const errLine = "SERVER_ERROR etcd: commit outcome unknown: the member was lost\r\n"
	reqs := []string{"set a 0 0 1\r\n2\r\n", "add b 0 0 1\r\n2\r\n", "cas a 0 0 1 1\r\n2\r\n", "incr a 1\r\n",
		"append a 0 0 1\r\n2\r\n", "delete a\r\n", "touch a 10\r\n", "gat 10 a\r\n", "ms a 1 q\r\n2\r\n", "ma a q\r\n",
		"md a q\r\n", "mg a v T10 q\r\n", "mg n N10 q\r\n"}
	if got, want := string(text.roundTrip([]byte(strings.Join(reqs, "")))), strings.Repeat(errLine, len(reqs)); got != want {
		t.Errorf("text and meta writes of a failed batch: %q, want %q", got, want)
	}
	var in []byte
	for i, op := range []byte{opSetQ, opAddQ, opReplaceQ, opAppendQ, opDeleteQ, opIncrQ, opFlushQ, opGATQ} {
		var extras, value []byte
		switch op {
		case opSetQ, opAddQ, opReplaceQ:
			extras, value = u32(0, 0), []byte("2")
		case opAppendQ:
			value = []byte("2")
		case opIncrQ:
			extras = incrExtras(1, 0, 0)
		case opGATQ:
			extras = u32(10)
		}
		key := []byte("a")
		if op == opFlushQ {
			key = nil
		}
		in = append(in, binReq(op, uint32(i), 0, extras, key, value)...)
	}
	in = append(in, binReq(opNoop, 99, 0, nil, nil, nil)...)
	out, _ := bin.sendRaw(in, 300*time.Millisecond)
	want := ""
	for i, op := range []byte{opSetQ, opAddQ, opReplaceQ, opAppendQ, opDeleteQ, opIncrQ, opFlushQ, opGATQ} {
		want += fmt.Sprintf("op=%02x st=84 opq=%d val=%q\n", op, i, strings.TrimSuffix(errLine, "\r\n"))
	}
	if got := renderBin(t, out); got != want+"op=0a st=0 opq=99\n" {
		t.Errorf("quiet binary writes of a failed batch:\n%s\nwant:\n%s", got, want+"op=0a st=0 opq=99\n")
	}
	e.fail.Store(nil)
	if got := string(text.roundTrip([]byte("get a\r\n"))); got != "VALUE a 0 1\r\n1\r\nEND\r\n" {
		t.Errorf("after the failed batches: %q", got)
	}
}

// TestFailedFlushAllKeepsTheDelayedOne: a flush_all that fails (its batch refused) replaces no delayed flush_all:
// the client, told it failed, still counts on the one it scheduled. It was cancelled as the request was read,
// so the items were flushed neither now nor at the delayed time.
func TestFailedFlushAllKeepsTheDelayedOne(t *testing.T) {
	e := &failWrites{Engine: memstore.New()}
	ts := startServerOver(t, e)
	for _, tc := range []struct {
		name  string
		flush []byte
		want  string
	}{
		{"text", []byte("flush_all\r\n"), "SERVER_ERROR out of space\r\n"},
		{"binary", binReq(opFlush, 7, 0, nil, nil, nil), "op=08 st=84 opq=7 val=\"SERVER_ERROR out of space\"\n"},
	} {
		cl := dial(t, ts.addr)
		if tc.name == "text" {
			if got := string(cl.roundTrip([]byte("set a 0 0 1\r\nv\r\nflush_all 60\r\n"))); got != "STORED\r\nOK\r\n" {
				t.Fatalf("%s: %q", tc.name, got)
			}
		} else {
			in := append(binReq(opSet, 1, 0, u32(0, 0), []byte("a"), []byte("v")), binReq(opFlush, 2, 0, u32(60), nil, nil)...)
			if out, _ := cl.sendRaw(in, 300*time.Millisecond); renderBin(t, out) != "op=01 st=0 opq=1 cas\nop=08 st=0 opq=2\n" {
				t.Fatalf("%s: %s", tc.name, renderBin(t, out))
			}
		}
		fail := error(engine.ErrNoSpace)
		e.fail.Store(&fail)
		var got string
		if tc.name == "text" {
			got = string(cl.roundTrip(tc.flush))
		} else {
			out, _ := cl.sendRaw(tc.flush, 300*time.Millisecond)
			got = renderBin(t, out)
		}
		if got != tc.want {
			t.Errorf("%s: the failing flush_all answered %q, want %q", tc.name, got, tc.want)
		}
		e.fail.Store(nil)
		if ds := ts.flushes.fire(); len(ds) != 1 {
			t.Errorf("%s: %d delayed flushes pending after the failed flush_all, want 1", tc.name, len(ds))
		}
		if _, err := ts.store.Get(context.Background(), "default", []byte("a")); err == nil {
			t.Errorf("%s: the item outlived both flushes", tc.name)
		}
	}
}

// gateFlushes holds every batch that flushes a table until release is closed, after saying so on entered.
type gateFlushes struct {
	engine.Engine
	entered chan struct{}
	release chan struct{}
}

func (e *gateFlushes) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	for i := range b.Muts {
		if b.Muts[i].Op == engine.OpFlush {
			e.entered <- struct{}{}
			<-e.release
			break
		}
	}
	return e.Engine.Apply(ctx, b)
}

// TestImmediateFlushAllKeepsADelayedOneAskedMeanwhile: an immediate flush_all replaces the delayed one pending
// when it was read, not one another client asked for while it was being applied (the later flush_all wins, as
// memcached's one "oldest live" time does).
func TestImmediateFlushAllKeepsADelayedOneAskedMeanwhile(t *testing.T) {
	e := &gateFlushes{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	ts := startServerOver(t, e)
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	if _, err := a.c.Write([]byte("flush_all\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the immediate flush_all never reached the engine")
	}
	if got := string(b.roundTrip([]byte("set k 0 0 1\r\nv\r\nflush_all 60\r\n"))); got != "STORED\r\nOK\r\n" {
		t.Fatalf("the delayed flush_all: %q", got)
	}
	close(e.release)
	if got := string(a.roundTrip(nil)); got != "OK\r\n" {
		t.Fatalf("the immediate flush_all: %q", got)
	}
	if ds := ts.flushes.fire(); len(ds) != 1 || ds[0] != 60*time.Second {
		t.Fatalf("delayed flushes pending after the immediate one was answered: %v, want the one of 60 s", ds)
	}
	if _, err := ts.store.Get(context.Background(), "default", []byte("k")); err == nil {
		t.Error("k outlived the delayed flush_all")
	}
}

// TestFlushAllAtAPastTime: flush_all with a unix time already past flushes at once if the time is since the server
// started, as memcached's does (its items all carry a CAS below the one it then takes), and flushes nothing if the
// time is before the start (memcached counts its start 62 s early); text and binary alike. anykv flushed nothing
// in both cases.
func TestFlushAllAtAPastTime(t *testing.T) {
	ts := startServer(t)
	cl, bin := dial(t, ts.addr), dial(t, ts.addr)
	start := int64(clockStart / 1000)
	ts.clock.Advance(100 * time.Second)
	for _, tc := range []struct {
		name    string
		flush   func(at int64) string
		wantOut string
	}{
		{"text", func(at int64) string { return string(cl.roundTrip([]byte(fmt.Sprintf("flush_all %d\r\n", at)))) }, "OK\r\n"},
		{"binary", func(at int64) string { // (a connection speaks the protocol of its first request)
			out, _ := bin.sendRaw(binReq(opFlush, 3, 0, u32(uint32(at)), nil, nil), 300*time.Millisecond)
			return renderBin(t, out)
		}, "op=08 st=0 opq=3\n"},
	} {
		for _, at := range []int64{start - 3600, start - 30, start + 10} {
			if got := string(cl.roundTrip([]byte("set a 0 0 1\r\nv\r\n"))); got != "STORED\r\n" {
				t.Fatalf("set: %q", got)
			}
			if got := tc.flush(at); got != tc.wantOut {
				t.Fatalf("%s flush_all %d: %q", tc.name, at-start, got)
			}
			flushed := at > start-62
			if got := string(cl.roundTrip([]byte("get a\r\n"))); (got == "END\r\n") != flushed {
				t.Errorf("%s flush_all at %+d s from the start, 100 s after it: get answered %q, want flushed %v", tc.name, at-start, got, flushed)
			}
			if ds := ts.flushes.fire(); len(ds) != 0 {
				t.Errorf("%s flush_all at %+d s: delayed flushes pending %v", tc.name, at-start, ds)
			}
		}
	}
}
