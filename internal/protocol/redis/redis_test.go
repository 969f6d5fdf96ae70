package redis

import (
	"anykv/internal/auth"
	"anykv/internal/metrics"
	"anykv/internal/server"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

var ctx = context.Background()

func TestGoRedisBasics(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := ts.client(t, &goredis.Options{Protocol: proto})
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, "a").Result(); err != nil || v != "1" {
				t.Fatalf("get = %q, %v", v, err)
			}
			if _, err := c.Get(ctx, "missing").Result(); !errors.Is(err, goredis.Nil) {
				t.Fatalf("missing: %v", err)
			}
			if n, err := c.Incr(ctx, "n").Result(); err != nil || n != 1 {
				t.Fatalf("incr = %d, %v", n, err)
			}
			if f, err := c.IncrByFloat(ctx, "f", 2.5).Result(); err != nil || f != 2.5 {
				t.Fatalf("incrbyfloat = %v, %v", f, err)
			}
			ok, err := c.SetNX(ctx, "a", "x", 0).Result()
			if err != nil || ok {
				t.Fatalf("setnx existing = %v, %v", ok, err)
			}
			vals, err := c.MGet(ctx, "a", "missing", "n").Result()
			if err != nil || vals[0] != "1" || vals[1] != nil || vals[2] != "1" {
				t.Fatalf("mget = %v, %v", vals, err)
			}
			bin := string([]byte{0, 1, 2, 0xff, '\r', '\n'})
			c.Set(ctx, bin, bin, 0)
			if v, _ := c.Get(ctx, bin).Result(); v != bin {
				t.Fatalf("binary round trip = %q", v)
			}
			c.Set(ctx, "t", "v", 10*time.Second)
			if d, _ := c.TTL(ctx, "t").Result(); d != 10*time.Second {
				t.Fatalf("ttl = %v", d)
			}
			if info, err := c.Info(ctx, "server").Result(); err != nil || !strings.Contains(info, "redis_version:"+Version) {
				t.Fatalf("info = %q, %v", info, err)
			}
			if n, err := c.DBSize(ctx).Result(); err != nil || n != 5 {
				t.Fatalf("dbsize = %d, %v", n, err)
			}
		})
	}
}

func TestPipelineKeepsOrderAndReadsOwnWrites(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	pipe := c.Pipeline()
	var gets []*goredis.StringCmd
	for i := 0; i < 200; i++ {
		k := fmt.Sprint("k", i%7)
		pipe.Set(ctx, k, fmt.Sprint(i), 0)
		gets = append(gets, pipe.Get(ctx, k))
		pipe.Incr(ctx, "ctr")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, g := range gets {
		if g.Val() != fmt.Sprint(i) {
			t.Fatalf("get %d in pipeline = %q: did not read its own preceding write", i, g.Val())
		}
	}
	if v, _ := c.Get(ctx, "ctr").Int(); v != 200 {
		t.Fatalf("ctr = %d", v)
	}
}

func TestConcurrentIncrAndWatchCAS(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 16})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := c.Incr(ctx, "ctr").Err(); err != nil {
					t.Error(err)
				}
				// Compare-and-set the Redis way: WATCH, read, MULTI/EXEC; retry on conflict.
				for {
					err := c.Watch(ctx, func(tx *goredis.Tx) error {
						n, err := tx.Get(ctx, "cas").Int()
						if err != nil && !errors.Is(err, goredis.Nil) {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
							p.Set(ctx, "cas", n+1, 0)
							return nil
						})
						return err
					}, "cas")
					if err == nil {
						break
					}
					if !errors.Is(err, goredis.TxFailedErr) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, k := range []string{"ctr", "cas"} {
		if v, _ := c.Get(ctx, k).Int(); v != 400 {
			t.Fatalf("%s = %d, want 400 (lost updates)", k, v)
		}
	}
}

// RANDOMKEY in a small table picks every key about equally often (Redis's own RANDOMKEY test: two keys whose
// byte positions are close must both come up in 100 calls).
func TestRandomKeyIsUniformInASmallTable(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	if k, err := c.RandomKey(ctx).Result(); err != goredis.Nil {
		t.Fatalf("RANDOMKEY of an empty table = %q, %v", k, err)
	}
	c.Set(ctx, "foo", "x", 0)
	c.Set(ctx, "bar", "y", 0)
	c.Set(ctx, "zzzzzzzzzz", "z", 0)
	seen := map[string]int{}
	for range 300 {
		seen[c.RandomKey(ctx).Val()]++
	}
	for _, k := range []string{"foo", "bar", "zzzzzzzzzz"} {
		if seen[k] < 50 {
			t.Errorf("RANDOMKEY gave %q %d times in 300 calls over 3 keys: %v", k, seen[k], seen)
		}
	}
}

func TestScanVisitsEveryKeyOnce(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	want := map[string]bool{}
	for i := 0; i < 250; i++ {
		k := fmt.Sprintf("key:%03d", i)
		want[k] = true
		c.Set(ctx, k, "v", 0)
	}
	c.Set(ctx, "other", "v", 0)
	seen := map[string]int{}
	iter := c.Scan(ctx, 0, "key:*", 17).Iterator()
	for iter.Next(ctx) {
		seen[iter.Val()]++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(want) {
		t.Fatalf("scan saw %d keys, want %d", len(seen), len(want))
	}
	for k, n := range seen {
		if !want[k] || n != 1 {
			t.Fatalf("key %q seen %d times", k, n)
		}
	}
	keys, _ := c.Keys(ctx, "key:00?").Result()
	sort.Strings(keys)
	if len(keys) != 10 || keys[0] != "key:000" {
		t.Fatalf("keys = %v", keys)
	}
	if err := c.Do(ctx, "SCAN", "12345").Err(); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
		t.Fatalf("unknown cursor: %v", err)
	}
}

// TestUnauthenticatedBounds: before AUTH a client may send at most 10 arguments and bulks of 16 KiB, with Redis
// 6.2's errors (then the connection closes), so it cannot make the server buffer a big request it would only
// refuse with NOAUTH; AUTH lifts the bounds, RESET brings them back.
func TestUnauthenticatedBounds(t *testing.T) {
	ts := startServer(t, Options{Auth: auth.New("s3cret")}, 0)
	big := strings.Repeat("v", 16<<10+1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "k", big}, "-ERR Protocol error: unauthenticated bulk length\r\n"},
		{[]string{"DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, "-ERR Protocol error: unauthenticated multibulk length\r\n"},
	} {
		c := ts.raw(t)
		c.send(respCmd(tc.args...))
		if got := c.reply(); got != tc.want {
			t.Fatalf("unauthenticated %s of %d arguments: %q, want %q", tc.args[0], len(tc.args), got, tc.want)
		}
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := c.r.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			// EOF, or a reset: the server closed with the unread rest of the request in its buffer
			t.Fatalf("the connection stayed open after %q: %q, %v", tc.want, b, err)
		}
	}
	// A length past the server's bulk bound (anykv's default is lower than Redis's 512 MiB; here 1 MiB) but
	// within Redis's: Redis calls it unauthenticated.
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "AUTH", "s3cret")
	admin.expect("+OK\r\n", "CONFIG", "SET", "proto-max-bulk-len", "1048576")
	c := ts.raw(t)
	c.send("*1\r\n$100000000\r\n")
	if got := c.reply(); got != "-ERR Protocol error: unauthenticated bulk length\r\n" {
		t.Fatalf("unauthenticated bulk of 100 MB: %q", got)
	}
	c = ts.raw(t)
	c.expect("-NOAUTH Authentication required.\r\n", "SET", "k", big[:16<<10]) // at the bound: parsed, then refused
	c.expect("+OK\r\n", "AUTH", "s3cret")
	c.expect("+OK\r\n", "SET", "k", big)
	c.expect(":0\r\n", "DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	c.expect("+RESET\r\n", "RESET")
	c.send(respCmd("SET", "k", big))
	if got := c.reply(); got != "-ERR Protocol error: unauthenticated bulk length\r\n" {
		t.Fatalf("after RESET: %q", got)
	}
}

func TestAuthAndDatabases(t *testing.T) {
	ts := startServer(t, Options{Auth: auth.New("s3cret")}, 0)
	anon := ts.client(t, &goredis.Options{Protocol: 2})
	if err := anon.Get(ctx, "a").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("unauthenticated get: %v", err)
	}
	bad := ts.client(t, &goredis.Options{Password: "wrong"})
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	c0 := ts.client(t, &goredis.Options{Password: "s3cret"})
	c5 := ts.client(t, &goredis.Options{Password: "s3cret", DB: 5})
	c0.Set(ctx, "k", "zero", 0)
	c5.Set(ctx, "k", "five", 0)
	if v, _ := c0.Get(ctx, "k").Result(); v != "zero" {
		t.Fatalf("db0 = %q", v)
	}
	if v, _ := c5.Get(ctx, "k").Result(); v != "five" {
		t.Fatalf("db5 = %q", v)
	}
	// Database 0 is the table "default" that memcached and HTTP share; N is "dbN".
	if it, err := ts.store.Get(ctx, "db5", []byte("k")); err != nil || string(it.Value) != "five" {
		t.Fatalf("table db5 = %q, %v", it.Value, err)
	}
	if it, err := ts.store.Get(ctx, "default", []byte("k")); err != nil || string(it.Value) != "zero" {
		t.Fatalf("table default = %q, %v", it.Value, err)
	}
}

func TestLimits(t *testing.T) {
	ts := startServer(t, Options{}, 2)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	big := strings.Repeat("k", 1025)
	if err := c.Set(ctx, big, "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "key exceeds maximum") {
		t.Fatalf("oversized key: %v", err)
	}
	if err := c.Set(ctx, "v", strings.Repeat("x", 1<<20+1), 0).Err(); err == nil || !strings.Contains(err.Error(), "maximum allowed size") {
		t.Fatalf("oversized value: %v", err)
	}
	// The connection stays usable after those errors.
	if err := c.Set(ctx, "ok", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "grow", strings.Repeat("x", 1<<20-1), 0)
	if err := c.Append(ctx, "grow", "xx").Err(); err == nil || !strings.Contains(err.Error(), "maximum allowed size") {
		t.Fatalf("append past the limit: %v", err)
	}
	// A third connection is over the limit of two.
	r1, r2 := ts.raw(t), ts.raw(t)
	r1.send("PING\r\n")
	r1.reply()
	r2.send("PING\r\n")
	if got := r2.reply(); got != "+PONG\r\n" {
		// the go-redis pool holds one connection, r1 the second: r2 is refused
		if got != "-ERR max number of clients reached\r\n" {
			t.Fatalf("third connection got %q", got)
		}
		return
	}
	t.Fatal("a third connection was served despite maxclients 2")
}

func TestHTTPOnRESPPortIsDropped(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	rc.send("POST / HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if !rc.closed() {
		t.Fatal("connection that sent an HTTP request line stayed open")
	}
}

func TestExpiredKeysVanishEverywhere(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	c.Set(ctx, "e", "v", 2*time.Second)
	c.Set(ctx, "p", "v", 0)
	ts.advance(2 * time.Second)
	if n, _ := c.Exists(ctx, "e").Result(); n != 0 {
		t.Fatal("expired key exists")
	}
	if keys, _ := c.Keys(ctx, "*").Result(); len(keys) != 1 || keys[0] != "p" {
		t.Fatalf("keys after expiry = %v", keys)
	}
	if ok, _ := c.SetNX(ctx, "e", "new", 0).Result(); !ok {
		t.Fatal("SETNX on an expired key failed")
	}
}

func TestErrTextTable(t *testing.T) {
	for err, want := range map[error]string{
		engine.ErrNotInteger:                          "ERR value is not an integer or out of range",
		engine.ErrOverflow:                            "ERR increment or decrement would overflow",
		fmt.Errorf("wrapped: %w", engine.ErrNotFloat): "ERR value is not a valid float",
		engine.ErrNotFound:                            "ERR no such key",
		errors.New("disk on fire"):                    "ERR disk on fire",
	} {
		if got := errText(err); got != want {
			t.Errorf("errText(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestCommandIntrospection(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	cmds, err := c.Command(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	set := cmds["set"]
	if set == nil || set.Arity != -3 || set.FirstKeyPos != 1 {
		t.Fatalf("COMMAND set = %+v", set)
	}
	if len(cmds) != len(commands) {
		t.Fatalf("COMMAND listed %d commands, table has %d", len(cmds), len(commands))
	}
	for _, name := range []string{"hset", "hgetall", "sadd", "smove", "lpush", "lmove", "zadd", "subscribe", "publish"} {
		if cmds[name] == nil {
			t.Fatalf("%s is not listed", name)
		}
	}
}

// remoteConn is one end of a pipe that claims to come from another host.
// farListener makes every accepted connection look as if it came from another host, so the server's exposure
// policy sees a non-loopback client (the real thing, over a network namespace, is cmd/anykv's exposure test).
type farListener struct{ net.Listener }

func (l farListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5000}}, nil // TEST-NET-1: never routed
}

type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

func TestProtectedMode(t *testing.T) {
	for _, tc := range []struct {
		password string
		want     string
	}{{"", "-DENIED Redis is running in protected mode"}, {"pw", "-NOAUTH Authentication required."}} {
		ts := startServer(t, Options{}, 0)
		p := auth.New(tc.password)
		h := New(ts.store, Options{Auth: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		srv := server.New(slog.New(slog.DiscardHandler))
		srv.SetAuth(p)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		counts := srv.Serve("resp", farListener{ln}, h, 0)
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		client.SetDeadline(time.Now().Add(5 * time.Second))
		client.Write([]byte("GET a\r\n"))
		got, _ := bufio.NewReader(client).ReadString('\n')
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("password %q: non-loopback client got %q, want prefix %q", tc.password, got, tc.want)
		}
		if denied := counts.Denied.Load(); denied != map[string]int64{"": 1, "pw": 0}[tc.password] {
			t.Errorf("password %q: %d connections denied", tc.password, denied)
		}
		client.Close()
		srv.Shutdown(ctx)
	}
}

func TestMetricsCountCommandsAndErrors(t *testing.T) {
	ts := &testServer{}
	base := startServer(t, Options{}, 0)
	m := metrics.New(base.store)
	h := New(base.store, Options{Metrics: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	addr, _, err := srv.Listen("resp", "127.0.0.1:0", h, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	ts.addr = addr.String()
	rc := ts.raw(t)
	rc.send("SET a 1\r\nSET a\r\nNOSUCH\r\nGET a\r\nINCR a\r\nSET s x\r\nINCR s\r\nPING\r\n")
	for i := 0; i < 8; i++ {
		rc.reply()
	}
	for _, c := range []struct {
		cmd          string
		reqs, errors uint64
	}{{"set", 3, 1}, {"get", 1, 0}, {"incr", 2, 1}, {"ping", 1, 0}} {
		o := m.Command("resp", c.cmd)
		if o.Requests() != c.reqs || o.Errors() != c.errors {
			t.Errorf("%s: %d requests, %d errors; want %d, %d", c.cmd, o.Requests(), o.Errors(), c.reqs, c.errors)
		}
	}
}

// TestOversizedKeyFailsOnlyItsCommand: a key over the limit in a pipelined batch gets its own error; the other
// commands of the same read still run.
func TestOversizedKeyFailsOnlyItsCommand(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	big := strings.Repeat("k", 2000) // the test store's key limit is 1024
	var req strings.Builder
	for _, args := range [][]string{{"SET", "a", "1"}, {"DEL", big}, {"EXPIRE", big, "10"}, {"RENAME", "a", big},
		{"SET", "b", "2"}, {"GET", "b"}} {
		fmt.Fprintf(&req, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	rc.send(req.String())
	want := []string{"+OK\r\n", "-ERR key exceeds", "-ERR key exceeds", "-ERR key exceeds", "+OK\r\n", "$1\r\n2\r\n"}
	for i, w := range want {
		if got := rc.reply(); !strings.HasPrefix(got, w) {
			t.Fatalf("reply %d = %q, want prefix %q", i, got, w)
		}
	}
}

func TestCommandGetKeysNeverPanics(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	for name := range commands {
		rc.send("COMMAND GETKEYS " + name + " a b c d\r\n")
		rc.reply()
	}
	rc.send("PING\r\n")
	if got := rc.reply(); got != "+PONG\r\n" {
		t.Fatalf("after COMMAND GETKEYS of every command: %q", got)
	}
}

func TestCursorTableIsBounded(t *testing.T) {
	var ct cursorTable
	ct.init()
	big := make([]byte, 60<<10)
	first := ct.put(cursor{table: "t", after: big})
	for i := 0; i < 1000; i++ {
		ct.put(cursor{table: "t", after: big})
	}
	if ct.bytes > maxCursorBytes || len(ct.m) != ct.owners[0].n || len(ct.owners[0].ids) != ct.owners[0].n {
		t.Fatalf("cursor table holds %d bytes in %d cursors", ct.bytes, len(ct.m))
	}
	if _, ok := ct.get(first); ok {
		t.Fatal("the oldest cursor survived eviction")
	}
	other := ct.put(cursor{table: "t", after: []byte("o"), owner: 7})
	for i := 0; i < 1000; i++ { // evicting connection 0's, not connection 7's
		ct.put(cursor{table: "t", after: big})
	}
	if c, ok := ct.get(other); !ok || string(c.after) != "o" {
		t.Fatalf("another connection's cursor: %v %q", ok, c.after)
	}
	last := ct.put(cursor{table: "t", after: []byte("k")})
	for i := 0; i < 2; i++ { // a retried SCAN reuses its cursor
		if c, ok := ct.get(last); !ok || string(c.after) != "k" {
			t.Fatalf("cursor lookup %d: %v %q", i, ok, c.after)
		}
	}
}

// TestLargePipelineStreams: thousands of pipelined GETs of a large value all get their replies, written out in
// chunks as they are produced.
func TestLargePipelineStreams(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	val := strings.Repeat("v", 10000)
	c.Set(ctx, "big", val, 0)
	rc := ts.raw(t)
	const n = 3000
	rc.send(strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", n))
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	for i := 0; i < n; i++ {
		if got := rc.reply(); got != want {
			t.Fatalf("reply %d: %d bytes", i, len(got))
		}
	}
}

func TestTransactionQueueIsBounded(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	var req strings.Builder
	req.WriteString("MULTI\r\n")
	for i := 0; i <= maxQueued; i++ {
		req.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	}
	req.WriteString("EXEC\r\n")
	rc.send(req.String())
	for i := 0; i < maxQueued+1; i++ {
		rc.reply()
	}
	if got := rc.reply(); !strings.HasPrefix(got, "-ERR too many commands in this transaction") {
		t.Fatalf("command past the queue bound: %q", got)
	}
	if got := rc.reply(); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC after an over-long queue: %q", got)
	}
}

// TestNoOpWritesKeepWatch: a command that changes nothing (SADD of a member the set holds, ZADD of the score a
// member has, removals of missing members, SETRANGE of nothing, RENAME onto itself, a pop of 0 elements) leaves
// the key as Redis leaves it: a WATCH on it still lets EXEC
// through, and nothing is written. A command that changes the key makes EXEC fail (the control).
func TestNoOpWritesKeepWatch(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 4})
	other := ts.client(t, &goredis.Options{})
	if err := c.SAdd(ctx, "s", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ZAdd(ctx, "z", goredis.Z{Score: 1, Member: "a"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "str", "abc", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.RPush(ctx, "l", "a", "b", "c").Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key     string
		cmd     []any
		changes bool
	}{
		{"s", []any{"sadd", "s", "a"}, false},
		{"s", []any{"sadd", "s", "a", "b"}, false},
		{"s", []any{"srem", "s", "nope"}, false},
		{"z", []any{"zadd", "z", "1", "a"}, false},
		{"z", []any{"zadd", "z", "xx", "5", "nope"}, false},
		{"z", []any{"zadd", "z", "nx", "5", "a"}, false},
		{"z", []any{"zadd", "z", "gt", "0", "a"}, false},
		{"z", []any{"zincrby", "z", "0", "a"}, false},
		{"z", []any{"zrem", "z", "nope"}, false},
		{"h", []any{"hdel", "h", "nope"}, false},
		{"str", []any{"setrange", "str", "0", ""}, false},
		{"str", []any{"rename", "str", "str"}, false},
		{"str", []any{"renamenx", "str", "str"}, false},
		{"l", []any{"lpop", "l", "0"}, false},
		{"l", []any{"rpop", "l", "0"}, false},
		{"nokey", []any{"del", "nokey"}, false},
		{"str", []any{"setrange", "str", "0", "x"}, true},
		{"l", []any{"lpop", "l", "1"}, true},
		{"s", []any{"sadd", "s", "a", "c"}, true},
		{"z", []any{"zadd", "z", "2", "a"}, true},
		{"h", []any{"hset", "h", "f", "v"}, true}, // Redis counts an HSET of the same value as a change
	}
	for _, tc := range cases {
		err := c.Watch(ctx, func(tx *goredis.Tx) error {
			if err := other.Do(ctx, tc.cmd...).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, "marker", 1, 0)
				return nil
			})
			return err
		}, tc.key)
		switch {
		case tc.changes && !errors.Is(err, goredis.TxFailedErr):
			t.Errorf("%v: EXEC after a change = %v, want it aborted", tc.cmd, err)
		case !tc.changes && err != nil:
			t.Errorf("%v: EXEC after a command that changed nothing = %v, want it through", tc.cmd, err)
		}
	}
	if got := c.SMembers(ctx, "s").Val(); len(got) != 3 {
		t.Errorf("SMEMBERS s = %v, want a b c", got)
	}
	if n := c.SCard(ctx, "s").Val(); n != 3 {
		t.Errorf("SCARD s = %d, want 3", n)
	}
	if got := c.ZRangeWithScores(ctx, "z", 0, -1).Val(); len(got) != 1 || got[0].Score != 2 {
		t.Errorf("ZRANGE z = %v, want a at 2", got)
	}
}
