package main

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// streamLines runs a redis-cli that never exits by itself (MONITOR, --stat) with line-buffered output and
// returns a channel of its lines; the test's cleanup kills it.
func streamLines(t *testing.T, port string, args ...string) <-chan string {
	t.Helper()
	cmd := exec.Command("stdbuf", append([]string{"-oL", "redis-cli", "-p", port}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// nextLine returns the next line of a stream, failing after an upper bound.
func nextLine(t *testing.T, lines <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("%s: redis-cli ended", what)
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no line after 20s", what)
	}
	return ""
}

// TestRedisCLIOperatorTools runs redis-cli's operator modes against the binary: MONITOR shows another client's
// command as Redis quotes it, --stat prints its table from INFO, --latency measures, SLOWLOG GET and CLIENT LIST
// answer.
func TestRedisCLIOperatorTools(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not found: install the Debian package redis-tools")
	}
	s := servertest.Start(t, servertest.Options{Engine: "memory"})
	_, port, _ := net.SplitHostPort(s.RESP)
	c := client(t, s.RESP)

	mon := streamLines(t, port, "monitor")
	if l := nextLine(t, mon, "MONITOR"); l != "OK" {
		t.Fatalf("redis-cli monitor: first line %q", l)
	}
	if err := c.Set(ctx, "mon key", "v\n", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		l := nextLine(t, mon, "MONITOR")
		if strings.HasSuffix(l, `] "set" "mon key" "v\n"`) {
			break
		}
	}

	stat := streamLines(t, port, "--stat", "-i", "0.1")
	for i := 0; i < 3; i++ {
		l := nextLine(t, stat, "--stat")
		if i == 2 && !strings.HasPrefix(strings.TrimSpace(l), "1 ") { // keys, then memory, clients, ...
			t.Errorf("redis-cli --stat data line %q, want 1 key first", l)
		}
	}

	cli := func(args ...string) string {
		out, err := exec.Command("redis-cli", append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if f := strings.Fields(cli("--latency")); len(f) != 4 { // min max avg samples, once when not on a terminal
		t.Errorf("redis-cli --latency: %q", f)
	}
	cli("config", "set", "slowlog-log-slower-than", "0")
	cli("get", "mon key")
	// The --stat stream above still sends INFO ten times a second, and those are logged too: look past them.
	if got := cli("slowlog", "get", "16"); !strings.Contains(got, "get\nmon key") {
		t.Errorf("redis-cli slowlog get 16:\n%s", got)
	}
	if got := cli("client", "list"); !strings.Contains(got, "cmd=client|list") || !strings.Contains(got, "cmd=monitor") {
		t.Errorf("redis-cli client list:\n%s", got)
	}
}
