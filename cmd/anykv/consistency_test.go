package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/cluster"
	"anykv/internal/servertest"
)

// needEtcd skips the test when etcd is not installed, unless CI says it must be.
func needEtcd(t *testing.T) { t.Helper(); needBin(t, "etcd") }

// needBin fails the test in CI, and skips it elsewhere, when the program bin is not installed.
func needBin(t *testing.T, bin string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(bin + " not installed")
		}
		t.Skip(bin + " not installed (CI unset: skipping)")
	}
}

// TestSerializableReadsSurviveAnIsolatedMember: two front ends talk to one member of a 3-member etcd cluster; the
// two other members are stopped (SIGSTOP), so the remaining one has no quorum. Serializable reads (RESP GET and
// KEYS after READONLY, HTTP ?consistency=serializable, memcached on a server started with --consistency
// serializable) are answered from that member's own state; linearizable reads (the RESP default, HTTP
// ?consistency=linearizable) get no answer, since etcd cannot confirm the value is the latest.
func TestSerializableReadsSurviveAnIsolatedMember(t *testing.T) {
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	st, err := cluster.Up("etcd", 3, dir, cluster.Options{})
	t.Cleanup(func() { cluster.Down(dir) })
	if err != nil {
		t.Fatal(err)
	}
	url := "etcd://" + st.Members[0].Addr // the front ends' client knows this member only
	lin := servertest.Start(t, servertest.Options{Engine: url, HTTP: true})
	ser := servertest.Start(t, servertest.Options{Engine: url, Memcache: true, Args: []string{"--consistency", "serializable"}})
	if got, err := client(t, ser.RESP).ConfigGet(ctx, "consistency").Result(); err != nil || got["consistency"] != "serializable" {
		t.Fatalf("CONFIG GET consistency = %v, %v", got, err)
	}
	c := client(t, lin.RESP)
	if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A linearizable read through member 0 returns only once member 0 has applied the write.
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("GET k = %q, %v", got, err)
	}
	short := func() *goredis.Client {
		c := goredis.NewClient(&goredis.Options{Addr: lin.RESP, PoolSize: 1, ReadTimeout: 2 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	readonly, plain := short(), short()
	if err := readonly.Do(ctx, "READONLY").Err(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { // before cluster.Down (cleanups run last-registered first): a stopped member ignores SIGTERM
		for _, m := range st.Members[1:] {
			syscall.Kill(m.Pid, syscall.SIGCONT)
		}
	})
	for _, m := range st.Members[1:] {
		if err := cluster.Freeze(m.Pid, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	if got, err := readonly.Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Errorf("RESP GET after READONLY: %q, %v", got, err)
	}
	if got, err := readonly.Keys(ctx, "*").Result(); err != nil || len(got) != 1 || got[0] != "k" {
		t.Errorf("RESP KEYS after READONLY (a serializable scan): %q, %v", got, err)
	}
	if code, body, err := httpGet(lin.HTTP, "/v1/tables/default/keys/k?consistency=serializable", 5*time.Second); err != nil || code != 200 || body != "v1" {
		t.Errorf("HTTP GET ?consistency=serializable: %d %q, %v", code, body, err)
	}
	if got, err := memcacheGet(ser.Memcache, "k"); err != nil || got != "VALUE k 0 2\r\nv1\r\nEND\r\n" {
		t.Errorf("memcached get on the serializable server: %q, %v", got, err)
	}
	t.Logf("serializable reads of the isolated member answered within %v", time.Since(start))

	var ne net.Error
	if got, err := plain.Get(ctx, "k").Result(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("linearizable RESP GET answered %q, %v; want no answer within 2s", got, err)
	}
	if code, body, err := httpGet(lin.HTTP, "/v1/tables/default/keys/k?consistency=linearizable", 2*time.Second); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("HTTP GET ?consistency=linearizable answered %d %q, %v; want no answer within 2s", code, body, err)
	}
}

// httpGet reads path from addr with a client timeout: the status, the body and the client's error.
func httpGet(addr, path string, timeout time.Duration) (int, string, error) {
	resp, err := (&http.Client{Timeout: timeout}).Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// memcacheGet sends one text get and returns the reply up to END (or the first error line).
func memcacheGet(addr, key string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("get " + key + "\r\n")); err != nil {
		return "", err
	}
	var out strings.Builder
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil || line == "END\r\n" || strings.Contains(line, "ERROR") {
			return out.String(), err
		}
	}
}

// TestConsistencyFlagRefusesUnknownLevels: --consistency takes the level names only, and says which.
func TestConsistencyFlagRefusesUnknownLevels(t *testing.T) {
	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--resp", servertest.FreePort(t),
		"--memcache", "", "--http", "", "--consistency", "quorum").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve --consistency quorum: %v\n%s", err, out)
	}
	want := `anykv serve: --consistency: unknown consistency level "quorum" (known: linearizable, serializable)`
	if !strings.Contains(string(out), want+"\n") {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}
