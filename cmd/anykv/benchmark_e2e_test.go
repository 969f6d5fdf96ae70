package main

import (
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"anykv/internal/servertest"
)

// benchmarkTests are redis-benchmark's default tests, named as it prints them. XADD joined the default list in
// redis-benchmark 7.2; it is run by name below so that older redis-tools test it too.
var benchmarkTests = []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP",
	"SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)",
	"LRANGE_300 (first 300 elements)", "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)",
	"MSET (10 keys)"}

// benchmarkLine is the final line redis-benchmark -q prints for a test (progress lines end in \r and say rps=).
var benchmarkLine = regexp.MustCompile(`^(.+): ([0-9.]+) requests per second`)

// TestRedisBenchmarkDefaultTests runs redis-benchmark's default test list against the real binary (pebble,
// fsync always) and requires a requests-per-second line from every test and no error.
func TestRedisBenchmarkDefaultTests(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Fatal("redis-benchmark not found: install the Debian package redis-tools")
	}
	s := servertest.Start(t, servertest.Options{})
	_, port, _ := net.SplitHostPort(s.RESP)
	run := func(args ...string) map[string]string {
		out, err := exec.Command("redis-benchmark", append([]string{"-p", port, "-n", "2000", "-c", "4", "-q"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-benchmark %v: %v\n%s", args, err, out)
		}
		if strings.Contains(strings.ToLower(string(out)), "error") {
			t.Fatalf("redis-benchmark %v reported an error:\n%s", args, out)
		}
		done := map[string]string{}
		for _, line := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
			if m := benchmarkLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				done[m[1]] = m[2]
			}
		}
		return done
	}
	done := run()
	for _, name := range benchmarkTests {
		if done[name] == "" {
			t.Errorf("redis-benchmark printed no result for %s", name)
		}
	}
	const xadd = "XADD mystream * myfield myvalue" // the command of redis-benchmark 7.2's XADD test
	if got := run(strings.Fields(xadd)...); got[xadd] == "" {
		t.Errorf("redis-benchmark %s printed no result: %v", xadd, got)
	}
	if t.Failed() {
		t.Logf("results: %v", done)
	}
}
