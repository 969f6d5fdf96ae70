package main

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/rueidis"

	"anykv/internal/servertest"
)

// TestRueidisClientSideCaching: rueidis with its default options (client-side caching on: HELLO 3 and CLIENT
// TRACKING ON OPTIN at connect, which anykv refused with "unknown subcommand" before) connects, DoCache caches a
// key (the second read is a cache hit), and a write of the key by another connection, by a memcached client or
// over HTTP, and its deletion, each reach the cache: the next DoCache sees the new value.
func TestRueidisClientSideCaching(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true})
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.RESP}})
	if err != nil {
		t.Fatalf("rueidis with its cache on: %v", err)
	}
	defer rc.Close()
	other := client(t, s.RESP)
	if err := other.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func() (string, bool) {
		r := rc.DoCache(ctx, rc.B().Get().Key("k").Cache(), time.Minute)
		v, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			return "(nil)", r.IsCacheHit()
		}
		if err != nil {
			t.Fatal(err)
		}
		return v, r.IsCacheHit()
	}
	if v, _ := get(); v != "v1" {
		t.Fatalf("first DoCache: %q", v)
	}
	if v, hit := get(); v != "v1" || !hit {
		t.Fatalf("second DoCache: %q, cache hit %v", v, hit)
	}
	// sees waits until DoCache answers want: the invalidation travels beside the writer's reply.
	sees := func(how, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			v, _ := get()
			if v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s DoCache still answers %q, want %q", how, v, want)
			}
		}
	}
	if err := other.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sees("a RESP SET", "v2")
	mc := memcache.New(s.Memcache)
	if err := mc.Set(&memcache.Item{Key: "k", Value: []byte("v3")}); err != nil {
		t.Fatal(err)
	}
	sees("a memcached set", "v3")
	req, _ := http.NewRequest("PUT", "http://"+s.HTTP+"/v1/tables/default/keys/k", strings.NewReader("v4"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sees("an HTTP PUT", "v4")
	if err := mc.Delete("k"); err != nil {
		t.Fatal(err)
	}
	sees("a memcached delete", "(nil)")
}

// TestTrackingInvalidatesEveryWriter: a RESP3 tracking connection gets the invalidation push of a key it read
// when a memcached client writes it, when an HTTP client deletes it, and when it expires (the pebble engine's
// sweeper removes it); a memcached flush_all sends the null of a flush.
func TestTrackingInvalidatesEveryWriter(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true})
	c, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	// line reads the next line of the connection's output.
	line := func(how string) string {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for the invalidation after %s: %v", how, err)
		}
		return l
	}
	// pushFor reads up to the invalidation push of key, skipping other output (HELLO's map, replies).
	pushFor := func(how, key string) {
		t.Helper()
		want := []string{">2\r\n", "$10\r\n", "invalidate\r\n", "*1\r\n", "$" + strconv.Itoa(len(key)) + "\r\n", key + "\r\n"}
		if key == "" { // a flush's null
			want = []string{">2\r\n", "$10\r\n", "invalidate\r\n", "_\r\n"}
		}
		var got []string
		for len(got) < len(want) || strings.Join(got[len(got)-len(want):], "") != strings.Join(want, "") {
			got = append(got, line(how))
		}
	}
	c.Write([]byte("HELLO 3\r\nCLIENT TRACKING ON\r\nGET a\r\nGET b\r\nPING\r\n"))
	for line("HELLO") != "+PONG\r\n" {
	}
	mc := memcache.New(s.Memcache)
	if err := mc.Set(&memcache.Item{Key: "a", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	pushFor("a memcached set", "a")
	c.Write([]byte("SET b 1\r\nGET b\r\n"))
	pushFor("its own SET", "b")
	req, _ := http.NewRequest("DELETE", "http://"+s.HTTP+"/v1/tables/default/keys/b", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	pushFor("an HTTP DELETE", "b")
	c.Write([]byte("SET c 1 PX 100\r\nGET c\r\n"))
	pushFor("the expiry", "c")
	if err := mc.FlushAll(); err != nil {
		t.Fatal(err)
	}
	pushFor("a memcached flush_all", "")
}
