package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

var ctx = context.Background()

func client(t *testing.T, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second, PoolSize: 32})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestKillLosesNoAcknowledgedWrite streams SETs from several clients, kills the server with SIGKILL in the
// middle, restarts it and requires every acknowledged write with its value. Three rounds on one data dir, with
// --fsync always and with --fsync interval (which, as Redis's appendfsync everysec, loses nothing to a process
// crash: its journal is in the OS's hands before the reply), and with --fsync always on one core
// (GOMAXPROCS=1), where the writer keeps one commit group in flight instead of several.
func TestKillLosesNoAcknowledgedWrite(t *testing.T) {
	for _, mode := range []string{"always", "interval"} {
		t.Run(mode, func(t *testing.T) { killLoop(t, mode) })
	}
	t.Run("always-one-core", func(t *testing.T) { killLoop(t, "always", "GOMAXPROCS=1") })
}

func killLoop(t *testing.T, fsync string, env ...string) {
	s := servertest.Start(t, servertest.Options{Fsync: fsync, Env: env})
	acked := map[string]string{}
	var mu sync.Mutex
	for round := 0; round < 3; round++ {
		c := client(t, s.RESP)
		var wg sync.WaitGroup
		var stop atomic.Bool
		var n atomic.Int64
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					k, v := fmt.Sprintf("r%d:w%d:%d", round, w, i), fmt.Sprintf("value-%d-%d-%d", round, w, i)
					var err error
					if i%4 == 3 { // some pipelined batches too
						p := c.Pipeline()
						p.Set(ctx, k, v, 0)
						p.Set(ctx, k+":p", v, 0)
						_, err = p.Exec(ctx)
						if err == nil {
							mu.Lock()
							acked[k+":p"] = v
							mu.Unlock()
						}
					} else {
						err = c.Set(ctx, k, v, 0).Err()
					}
					if err != nil {
						return // the server is gone
					}
					mu.Lock()
					acked[k] = v
					mu.Unlock()
					n.Add(1)
				}
			}()
		}
		for n.Load() < 300 { // let writes flow, then kill mid-stream
			time.Sleep(5 * time.Millisecond)
		}
		s.Kill()
		stop.Store(true)
		wg.Wait()
		c.Close()
		s.Restart()
		c = client(t, s.RESP)
		mu.Lock()
		missing := 0
		for k, v := range acked {
			got, err := c.Get(ctx, k).Result()
			if err != nil || got != v {
				missing++
				if missing < 5 {
					t.Errorf("round %d: acknowledged %s=%s, after restart got %q, %v", round, k, v, got, err)
				}
			}
		}
		t.Logf("round %d: %d acknowledged writes checked after kill -9, %d missing", round, len(acked), missing)
		mu.Unlock()
		if missing > 0 {
			t.FailNow()
		}
	}
}

// redisCLI returns addr's port and a function running redis-cli against it, which returns the trimmed output and
// fails the test if redis-cli does.
func redisCLI(t *testing.T, addr string) (string, func(args ...string) string) {
	_, port, _ := net.SplitHostPort(addr)
	return port, func(args ...string) string {
		t.Helper()
		out, err := exec.Command("redis-cli", append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

func TestRedisCLI(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not found: install the Debian package redis-tools")
	}
	s := servertest.Start(t, servertest.Options{})
	port, cli := redisCLI(t, s.RESP)
	for _, step := range []struct{ args, want string }{
		{"set a 1", "OK"}, {"get a", "1"}, {"incr n", "1"}, {"incr n", "2"}, {"exists a n x", "2"},
		{"expire a 100", "1"}, {"ttl a", "100"}, {"hset h f v", "1"}, {"hget h f", "v"}, {"type h", "hash"},
		{"rpush l x y", "2"}, {"lrange l 0 -1", "x\ny"}, {"zadd z 1.5 m", "1"}, {"zscore z m", "1.5"},
		{"get h", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"xadd s 1-1 f v", "1-1"}, {"xlen s", "1"},
		{"xgroup create s g $", "OK"}, {"nosuchcmd s 1-1", "ERR unknown command 'nosuchcmd', with args beginning with: 's' '1-1'"},
		{"ping", "PONG"}, {"dbsize", "6"},
	} {
		if got := cli(strings.Fields(step.args)...); got != step.want {
			t.Errorf("redis-cli %s = %q, want %q", step.args, got, step.want)
		}
	}
	for _, mode := range []string{"--bigkeys", "--memkeys", "--hotkeys"} { // they scan, TYPE, *LEN/MEMORY each key
		if got := cli(mode); !strings.Contains(got, "summary") || strings.Contains(got, "Warning") ||
			(mode != "--hotkeys" && !strings.Contains(got, "Biggest   list found")) {
			t.Errorf("redis-cli %s:\n%s", mode, got)
		}
	}
	if got := cli("info", "server"); !strings.Contains(got, "redis_version:") {
		t.Errorf("info server = %q", got)
	}
	// redis-cli --pipe sends a raw RESP stream and counts replies.
	cmd := exec.Command("redis-cli", "-p", port, "--pipe")
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$%d\r\npipe%d\r\n$1\r\nx\r\n", len(fmt.Sprint("pipe", i)), i)
	}
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "errors: 0, replies: 1000") {
		t.Fatalf("redis-cli --pipe: %v\n%s", err, out)
	}
	// After kill -9 and a restart the data is still there, as the README promises.
	s.Kill()
	s.Restart()
	if got := cli("get", "a"); got != "1" {
		t.Fatalf("after kill -9: get a = %q", got)
	}
	if got := cli("get", "pipe999"); got != "x" {
		t.Fatalf("after kill -9: get pipe999 = %q", got)
	}
}

func TestSigtermShutsDownCleanly(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Fsync: "never", Args: []string{"--log-level", "info"}})
	c := client(t, s.RESP)
	for i := 0; i < 100; i++ {
		if err := c.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code := s.Stop(); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d\n%s", code, s.Output())
	}
	if !strings.Contains(s.Output(), "stopped cleanly") {
		t.Fatalf("no clean-stop log line:\n%s", s.Output())
	}
	s.Restart()
	c = client(t, s.RESP)
	if v, err := c.Get(ctx, "k99").Result(); err != nil || v != "99" {
		t.Fatalf("after SIGTERM restart: %q, %v", v, err)
	}
}

func TestAddressInUseFailsClearly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--resp", ln.Addr().String(),
		"--memcache", "", "--http", "").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve on a taken address: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "cannot listen on "+ln.Addr().String()) {
		t.Fatalf("error does not name the address:\n%s", out)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	addr := servertest.FreePort(t)
	cmd := exec.Command(servertest.Binary(t), "serve")
	cmd.Env = append(os.Environ(), "ANYKV_ENGINE=memory", "ANYKV_RESP="+addr, "ANYKV_REQUIREPASS=pw",
		"ANYKV_MEMCACHE=", "ANYKV_HTTP=") // empty disables: the default ports may be taken
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Password: "pw"})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("server configured by environment did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, err := c.ConfigGet(ctx, "engine").Result(); err != nil || v["engine"] != "memory" {
		t.Fatalf("CONFIG GET engine = %v, %v", v, err)
	}
}

func TestHelpNamesEveryFlag(t *testing.T) {
	out, _ := exec.Command(servertest.Binary(t), "serve", "--help").CombinedOutput()
	for _, f := range []string{"-dir", "-engine", "-fsync", "-resp", "-requirepass", "-maxclients", "-max-key-size",
		"-max-value-size", "-http-body-timeout", "ANYKV_FSYNC"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("serve --help lacks %s:\n%s", f, out)
		}
	}
	out, _ = exec.Command(servertest.Binary(t), "--help").CombinedOutput()
	if !strings.Contains(string(out), "anykv serve") || !strings.Contains(string(out), "anykv bench") {
		t.Errorf("anykv --help:\n%s", out)
	}
}

// quietLogger drops go-redis's own log lines: the kill tests make it fail to dial on purpose.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

func init() { goredis.SetLogger(quietLogger{}) }
