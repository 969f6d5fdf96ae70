package main

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestKeyspaceNotificationsFlag: --notify-keyspace-events sets the classes at start (CONFIG GET shows them), the
// pebble engine's sweeper sends "expired" for a key whose time ran out, and a bad letter stops serve at once.
func TestKeyspaceNotificationsFlag(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: []string{"--notify-keyspace-events", "Ex$"}})
	c := client(t, s.RESP)
	if v, err := c.ConfigGet(ctx, "notify-keyspace-events").Result(); err != nil || v["notify-keyspace-events"] != "$xE" {
		t.Fatalf("CONFIG GET notify-keyspace-events = %v, %v", v, err)
	}
	ps := c.Subscribe(ctx, "__keyevent@0__:set", "__keyevent@0__:expired")
	defer ps.Close()
	for i := 0; i < 2; i++ {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "brief", "v", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	wait, cancel := context.WithTimeout(ctx, 20*time.Second) // the sweeper runs every 100 ms
	defer cancel()
	for len(got) < 2 {
		m, err := ps.ReceiveMessage(wait)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
	}
	if strings.Join(got, ", ") != "set brief, expired brief" {
		t.Fatalf("events %q, want set then expired", got)
	}

	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--resp", servertest.FreePort(t),
		"--memcache", "", "--http", "", "--notify-keyspace-events", "KEQ").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "Invalid event class character") {
		t.Fatalf("serve with a bad letter: %v\n%s", err, out)
	}
}

// TestOtherProtocolsSendKeyspaceEvents: a memcached or HTTP client's writes send the events Redis sends for the
// RESP command that does the same (set, expire, append, incrby, persist, del), on database 0 (the default table),
// so a Redis client that keeps a cache by them sees every protocol's writes. None were sent (an audit). Writes
// of HTTP tables that back no database send none.
func TestOtherProtocolsSendKeyspaceEvents(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true, Args: []string{"--notify-keyspace-events", "KEA"}})
	c := client(t, s.RESP)
	ps := c.PSubscribe(ctx, "__keyevent@*__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	mc := memcache.New(s.Memcache)
	for _, err := range []error{
		mc.Set(&memcache.Item{Key: "a", Value: []byte("x")}),
		mc.Set(&memcache.Item{Key: "b", Value: []byte("y"), Expiration: 100}),
		mc.Append(&memcache.Item{Key: "a", Value: []byte("z")}),
		mc.Touch("b", 0),
		mc.Delete("a"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mc.Increment("nosuch", 1); err != memcache.ErrCacheMiss {
		t.Fatalf("incr of a missing key: %v", err)
	}
	base := "http://" + s.HTTP + "/v1/tables/"
	for _, r := range []struct{ method, url, body string }{
		{"PUT", base + "default/keys/h", "v"}, {"POST", base + "default/keys/n/incr", ""},
		{"PUT", base + "other/keys/x", "v"}, {"DELETE", base + "default/keys/h", ""},
	} {
		req, _ := http.NewRequest(r.method, r.url, strings.NewReader(r.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", r.method, r.url, resp.Status)
		}
	}
	until := func() string { // the events up to an "end" published after them
		c.Publish(ctx, "__keyevent@0__:end", "")
		var got []string
		for {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Channel == "__keyevent@0__:end" {
				return strings.Join(got, ", ")
			}
			got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
		}
	}
	if got, want := until(), "set a, set b, expire b, append a, persist b, del a, set h, incrby n, del h"; got != want {
		t.Fatalf("events %q\nwant %q", got, want)
	}
	// memcached's set is blind (it reads nothing), so it cannot tell a new key: it sends no "new" (it sent one
	// at every set); an HTTP PUT, which reads, sends "new" once.
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEAn").Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := mc.Set(&memcache.Item{Key: "m", Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", base+"default/keys/p", strings.NewReader("v"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got, want := until(), "set m, new p, set p, set m, set p"; got != want {
		t.Fatalf("events with n %q\nwant %q", got, want)
	}
}

// TestMemcachedAddSendsNew: memcached's add creates the key when it stores (it reads the key to check it is
// absent), so it sends "new" before "set", as Redis's SET NX does; a refused add sends nothing, and replace,
// which needs the key there, no "new". othersWrote took every memcached store for the blind set, which reads
// nothing, and sent no "new" for an add.
func TestMemcachedAddSendsNew(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, Args: []string{"--notify-keyspace-events", "KEAn"}})
	c := client(t, s.RESP)
	ps := c.PSubscribe(ctx, "__keyevent@0__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	mc := memcache.New(s.Memcache)
	if err := mc.Add(&memcache.Item{Key: "q", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := mc.Add(&memcache.Item{Key: "q", Value: []byte("y")}); err != memcache.ErrNotStored {
		t.Fatalf("add of a present key: %v", err)
	}
	if err := mc.Replace(&memcache.Item{Key: "q", Value: []byte("z")}); err != nil {
		t.Fatal(err)
	}
	c.Publish(ctx, "__keyevent@0__:end", "")
	var got []string
	for {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Channel == "__keyevent@0__:end" {
			break
		}
		got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
	}
	if got, want := strings.Join(got, ", "), "new q, set q, set q"; got != want {
		t.Fatalf("events %q\nwant %q", got, want)
	}
}

// TestMemcachedWriteAnswersABlockedReadGroup: a stream that a memcached client replaces (set) or deletes (touch
// with a time in the past) answers the XREADGROUP BLOCK 0 waiting on it at once, as a RESP write does (WRONGTYPE,
// NOGROUP: Redis 7.2's answers), where it stayed blocked for good: only RESP batches woke blocked clients.
func TestMemcachedWriteAnswersABlockedReadGroup(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true})
	c := client(t, s.RESP)
	mc := memcache.New(s.Memcache)
	for _, tc := range []struct {
		write func() error
		want  string
	}{
		{func() error { return mc.Set(&memcache.Item{Key: "s", Value: []byte("x")}) }, "WRONGTYPE"},
		{func() error { return mc.Touch("s", -1) }, "NOGROUP"},
	} {
		c.Del(ctx, "s")
		if err := c.XGroupCreateMkStream(ctx, "s", "g", "$").Err(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- c.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 0}).Err()
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if info := c.Info(ctx, "clients").Val(); strings.Contains(info, "blocked_clients:1") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("XREADGROUP did not block")
			}
		}
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("blocked XREADGROUP answered %v, want %s", err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("XREADGROUP still blocked 5 s after its stream was written by memcached (want %s)", tc.want)
		}
	}
}
