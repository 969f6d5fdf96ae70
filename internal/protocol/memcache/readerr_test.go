package memcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

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
