package memcache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/engine"
)

// TestGomemcache drives the server with github.com/bradfitz/gomemcache, a widely used Go client.
func TestGomemcache(t *testing.T) {
	ts := startServer(t)
	mc := memcache.New(ts.addr)
	mc.Timeout = 5 * time.Second
	defer mc.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mc.Ping())
	must(mc.Set(&memcache.Item{Key: "k", Value: []byte("v1"), Flags: 42, Expiration: 10}))
	it, err := mc.Get("k")
	must(err)
	if string(it.Value) != "v1" || it.Flags != 42 {
		t.Fatalf("Get = %q flags %d", it.Value, it.Flags)
	}
	if _, err := mc.Get("missing"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get missing: %v", err)
	}
	if err := mc.Add(&memcache.Item{Key: "k", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("Add existing: %v", err)
	}
	must(mc.Add(&memcache.Item{Key: "k2", Value: []byte("two")}))
	if err := mc.Replace(&memcache.Item{Key: "nope", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("Replace missing: %v", err)
	}
	must(mc.Replace(&memcache.Item{Key: "k2", Value: []byte("TWO"), Flags: 7}))
	must(mc.Append(&memcache.Item{Key: "k2", Value: []byte("!")}))
	must(mc.Prepend(&memcache.Item{Key: "k2", Value: []byte("<")}))
	if err := mc.Append(&memcache.Item{Key: "nope", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("Append missing: %v", err)
	}
	items, err := mc.GetMulti([]string{"k", "k2", "missing"})
	must(err)
	if len(items) != 2 || string(items["k2"].Value) != "<TWO!" || items["k2"].Flags != 7 {
		t.Fatalf("GetMulti = %v", items)
	}

	// CompareAndSwap: succeeds with a fresh CAS, fails once someone else wrote.
	it, err = mc.Get("k")
	must(err)
	it.Value = []byte("v2")
	must(mc.CompareAndSwap(it))
	it.Value = []byte("v3")
	if err := mc.CompareAndSwap(it); !errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("stale CAS: %v", err)
	}
	must(mc.Delete("k2"))
	if err := mc.CompareAndSwap(&memcache.Item{Key: "k2", Value: []byte("x")}); !errors.Is(err, memcache.ErrCacheMiss) &&
		!errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("CAS on deleted: %v", err)
	}
	if err := mc.Delete("k2"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Delete missing: %v", err)
	}

	must(mc.Set(&memcache.Item{Key: "n", Value: []byte("10")}))
	if v, err := mc.Increment("n", 5); err != nil || v != 15 {
		t.Fatalf("Increment = %d, %v", v, err)
	}
	if v, err := mc.Decrement("n", 100); err != nil || v != 0 {
		t.Fatalf("Decrement below zero = %d, %v", v, err)
	}
	if _, err := mc.Increment("missing", 1); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Increment missing: %v", err)
	}

	// Expiry follows the store's clock: e expires 10s after its set, Touch extends n.
	must(mc.Set(&memcache.Item{Key: "e", Value: []byte("short"), Expiration: 10}))
	must(mc.Touch("n", 100))
	ts.clock.Advance(11 * time.Second)
	if _, err := mc.Get("e"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get after expiry: %v", err)
	}
	if _, err := mc.Get("n"); err != nil {
		t.Fatalf("touched item: %v", err)
	}
	if err := mc.Touch("missing", 1); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Touch missing: %v", err)
	}
	if it, err := mc.GetAndTouch("n", 1); err != nil || string(it.Value) != "0" {
		t.Fatalf("GetAndTouch = %v, %v", it, err)
	}
	ts.clock.Advance(2 * time.Second)
	if _, err := mc.Get("n"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get after GetAndTouch expiry: %v", err)
	}

	// Binary values and large ones survive the round trip.
	bin := bytes.Repeat([]byte{0, '\r', '\n', 0xff}, 100_000)
	must(mc.Set(&memcache.Item{Key: "bin", Value: bin}))
	if it, err := mc.Get("bin"); err != nil || !bytes.Equal(it.Value, bin) {
		t.Fatalf("binary round trip: %v", err)
	}
	must(mc.FlushAll())
	if _, err := mc.Get("bin"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get after FlushAll: %v", err)
	}
}

// TestCrossProtocol checks that a memcached write is the same item the kv layer (and so RESP database 0 and
// HTTP) sees, flags and expiry included, and that the CAS unique is the item's version.
func TestCrossProtocol(t *testing.T) {
	ts := startServer(t)
	mc := memcache.New(ts.addr)
	defer mc.Close()
	if err := mc.Set(&memcache.Item{Key: "shared", Value: []byte("hello"), Flags: 0xdeadbeef, Expiration: 60}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	it, err := ts.store.Get(ctx, "default", []byte("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Value) != "hello" || it.Flags != 0xdeadbeef || it.Expires != ts.store.Now()+60_000 {
		t.Fatalf("kv sees %+v (now %d)", it, ts.store.Now())
	}
	got, err := mc.Get("shared")
	if err != nil {
		t.Fatal(err)
	}
	cl := dial(t, ts.addr)
	out := string(cl.roundTrip([]byte("gets shared\r\n")))
	if want := "VALUE shared 3735928559 5 " + strconv.FormatUint(it.Version, 10) + "\r\n"; !strings.HasPrefix(out, want) {
		t.Fatalf("gets = %q, want CAS = version %d", out, it.Version)
	}
	// A write through kv (as RESP's SET would do) invalidates the CAS obtained by gets.
	res := ts.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("shared"), Value: []byte("resp")})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	got.Value = []byte("memcached")
	if err := mc.CompareAndSwap(got); !errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("CAS after a kv write: %v", err)
	}
	if it, err := mc.Get("shared"); err != nil || string(it.Value) != "resp" || it.Flags != 0 {
		t.Fatalf("Get after kv write = %v, %v", it, err)
	}
	// An item written through kv with an expiry reads back with memcached's TTL.
	ts.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("fromkv"), Value: []byte("x"),
		Flags: 3, Expires: ts.store.Now() + 30_500})
	if out := string(cl.roundTrip([]byte("mg fromkv f t v\r\n"))); out != "VA 1 f3 t31\r\nx\r\n" {
		t.Fatalf("mg = %q", out)
	}
	// Another table is another keyspace.
	ts.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "other", Key: []byte("elsewhere"), Value: []byte("x")})
	if _, err := mc.Get("elsewhere"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("item of another table visible: %v", err)
	}
}

// tool finds a libmemcached tool; CI installs them, so a missing one fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install the Debian package libmemcached-tools (%v)", name, err)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestLibmemcachedTools runs the libmemcached command-line tools against the server.
func TestLibmemcachedTools(t *testing.T) {
	ts := startServer(t)
	servers := "--servers=" + ts.addr

	out := runTool(t, "memcstat", servers)
	for _, want := range []string{"pid:", "curr_connections:", "cmd_get:", "version: 1.6.18-anykv"} {
		if !strings.Contains(out, want) {
			t.Errorf("memcstat output lacks %q:\n%s", want, out)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "greeting.txt")
	content := "hello from memccp\nwith two lines\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, "memccp", servers, "--flag=17", file)
	it, err := ts.store.Get(context.Background(), "default", []byte("greeting.txt"))
	if err != nil || string(it.Value) != content || it.Flags != 17 {
		t.Fatalf("after memccp: %+v, %v", it, err)
	}
	if out := runTool(t, "memccat", servers, "greeting.txt"); out != content+"\n" { // memccat adds a newline
		t.Fatalf("memccat = %q", out)
	}
	runTool(t, "memcflush", servers)
	if _, err := ts.store.Get(context.Background(), "default", []byte("greeting.txt")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("after memcflush: %v", err)
	}

	for _, test := range []string{"set", "get", "mget"} {
		out := runTool(t, "memcslap", servers, "--test="+test, "--concurrency=2", "--execute-number=500")
		if !regexp.MustCompile(`Time total: +[0-9.]+ seconds`).MatchString(out) {
			t.Fatalf("memcslap --test=%s: %s", test, out)
		}
	}
	cl := dial(t, ts.addr)
	stats := string(cl.roundTrip([]byte("stats\r\n")))
	if m := regexp.MustCompile(`STAT cmd_set (\d+)`).FindStringSubmatch(stats); m == nil || m[1] == "0" {
		t.Fatalf("memcslap stored nothing:\n%s", stats)
	}
}
