package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestMemcachedEngine: anykv serve --engine memcached://... answers redis-cli, a memcached client and curl over
// one keyspace held in a real memcached; pipelined commands on several keys work (each is a batch of its own),
// and what needs several items at once (MSET, RENAME, HSET, FLUSHDB) or a key listing (KEYS, HTTP scans) is
// refused with an error naming the engine, applying nothing.
func TestMemcachedEngine(t *testing.T) {
	for _, tool := range []string{"redis-cli", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found", tool)
		}
	}
	addr := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	s := servertest.Start(t, servertest.Options{Engine: "memcached://" + addr, Memcache: true, HTTP: true})
	if out := s.Output(); !strings.Contains(out, "evicts items") {
		t.Errorf("no eviction warning at start (memcached runs without -M):\n%s", out)
	}
	port, cli := redisCLI(t, s.RESP)
	curl := func(args ...string) string {
		out, err := exec.Command("curl", append([]string{"-s"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, step := range []struct{ args, want string }{
		{"set a 1", "OK"}, {"incr a", "2"}, {"append a x", "2"}, {"get a", "2x"}, {"set n 5 nx", "OK"},
		{"mget a n", "2x\n5"}, {"expire n 100", "1"}, {"ttl n", "100"}, {"del n", "1"}, {"exists n", "0"},
	} {
		if got := cli(strings.Fields(step.args)...); got != step.want {
			t.Errorf("redis-cli %s = %q, want %q", step.args, got, step.want)
		}
	}
	for _, args := range []string{"mset a 9 b 9", "rename a b", "hset h f v", "flushdb", "keys *"} {
		got, want := cli(strings.Fields(args)...), "the memcached engine applies a batch atomically only if it touches one item"
		if args == "keys *" {
			want = "keeps no ordered keys" // no Scanner: the refusal names the engine's URL too
			if !strings.Contains(cli(strings.Fields(args)...), "memcached://") {
				t.Errorf("KEYS over the memcached engine does not name it")
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("redis-cli %s = %q, want a refusal naming the engine", args, got)
		}
	}
	if got := cli("get", "a"); got != "2x" {
		t.Fatalf("after refused batches a = %q, want 2x", got)
	}
	if got := cli("exists", "b", "h"); got != "0" {
		t.Fatalf("after refused batches exists b h = %q, want 0", got)
	}
	// A pipeline of SETs on different keys: one read, each command a batch of its own.
	cmd := exec.Command("redis-cli", "-p", port, "--pipe")
	cmd.Stdin = strings.NewReader(strings.Repeat("*3\r\n$3\r\nSET\r\n$2\r\np1\r\n$1\r\nx\r\n*3\r\n$3\r\nSET\r\n$2\r\np2\r\n$1\r\ny\r\n", 50))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "errors: 0, replies: 100") {
		t.Fatalf("redis-cli --pipe: %v\n%s", err, out)
	}

	mc := memcache.New(s.Memcache)
	if it, err := mc.Get("p2"); err != nil || string(it.Value) != "y" {
		t.Fatalf("memcached get p2 = %v, %v", it, err)
	}
	it, err := mc.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	it.Value = []byte("cas")
	if err := mc.CompareAndSwap(it); err != nil {
		t.Fatalf("memcached cas: %v", err)
	}
	if err := mc.CompareAndSwap(it); err != memcache.ErrCASConflict {
		t.Fatalf("memcached cas with a stale token: %v, want a conflict", err)
	}
	if err := mc.Set(&memcache.Item{Key: "m", Value: []byte("from memcache")}); err != nil {
		t.Fatal(err)
	}

	base := "http://" + s.HTTP + "/v1/tables/default/keys/"
	if got := curl(base + "a"); got != "cas" {
		t.Errorf("curl GET a = %q, want cas", got)
	}
	if got := curl(base + "m"); got != "from memcache" {
		t.Errorf("curl GET m = %q", got)
	}
	curl("-X", "PUT", "--data-binary", "from curl", base+"c")
	if got := cli("get", "c"); got != "from curl" {
		t.Errorf("redis-cli get c after curl PUT = %q", got)
	}
	if got := curl("http://" + s.HTTP + "/v1/tables/default/keys"); !strings.Contains(got, "not_supported") {
		t.Errorf("curl scan = %q, want a refusal", got)
	}
}
