package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
	"anykv/internal/bench/workload"
)

// TestEndToEnd deploys redis, memcached, etcd and postgres (and anykv when
// ANYKV_BIN is set), runs appscale at 1 and 3 threads and checks the report.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	html, js, csv := filepath.Join(dir, "out.html"), filepath.Join(dir, "out.json"), filepath.Join(dir, "out.csv")
	targets := "redis,memcached,etcd,postgres"
	args := []string{"--deploy", targets, "--workload", "appscale", "--records", "50", "--threads", "1,3",
		"--html", html, "--json", js, "--csv", csv}
	if bin := os.Getenv("ANYKV_BIN"); bin != "" {
		targets = "anykv," + targets
		args[1] = targets
		args = append(args, "--anykv-bin", bin)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	code := Main(ctx, args, &stdout, &stderr)
	t.Logf("end to end took %v", time.Since(start))
	out := stdout.String()
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	if strings.Contains(out, "skipped: install") {
		t.Fatalf("a server is not installed (CI installs scripts/test-deps.txt):\n%s", out)
	}
	for _, name := range strings.Split(targets, ",") {
		if !strings.Contains(out, "-- appscale on "+name+"\n") {
			t.Errorf("no table for %s", name)
		}
	}
	for _, want := range []string{
		"memcache: scan not supported, phase skipped",
		"memcache: count not supported, phase skipped",
		"== side by side: Req/Sec (ratio to baseline " + strings.Split(targets, ",")[0] + ")",
		"== side by side: 99% latency",
		"appendfsync always", "synchronous_commit=on", "WAL fsync",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Every data row has Err and Fail of 0.
	rowRe := regexp.MustCompile(`(?m)^\s*(fill|count|put|get|query|delete|noop)\s+[\d.]+\s+\d+(\s+[\d.]+){7}\s+(\d+)\s+(\d+)\s+([13])$`)
	rows := rowRe.FindAllStringSubmatch(out, -1)
	n := len(strings.Split(targets, ","))
	if want := 14*n - 4; len(rows) != want { // memcached skips count and query at both thread counts
		t.Errorf("%d table rows, want %d:\n%s", len(rows), want, out)
	}
	for _, r := range rows {
		if r[3] != "0" || r[4] != "0" {
			t.Errorf("errors or fails: %s", r[0])
		}
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte("<svg")) || bytes.Contains(page, []byte("<script")) {
		t.Errorf("html report: %v, %d bytes", err, len(page))
	}
	var rep struct {
		Results []struct {
			Target, Test string
			Threads      int
			Ops          int64
		}
	}
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Results) != 14*n {
		t.Errorf("json report: %v, %d results", err, len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Test == "put" && r.Threads == 3 && r.Ops != 150 {
			t.Errorf("%s put thr=3: %d ops, want 150", r.Target, r.Ops)
		}
	}
	if c, err := os.ReadFile(csv); err != nil || strings.Count(string(c), "\n") != 14*n+1 {
		t.Errorf("csv report: %v", err)
	}
	// Teardown: no data directories left.
	if m, _ := filepath.Glob(filepath.Join(os.TempDir(), "anykv-bench-*", "redis-*")); len(m) > 0 {
		t.Logf("left over (maybe from a concurrent run): %v", m)
	}
}

func TestHelpListsEveryFlagAndWorkload(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--help"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	help := stdout.String()
	var o options
	fs, _, _, _, _, _ := newFlagSet(&o, nil)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(help, "-"+f.Name) {
			t.Errorf("help lacks --%s", f.Name)
		}
	})
	for _, w := range workload.All() {
		if !strings.Contains(help, "  "+w.Name+" ") {
			t.Errorf("help lacks workload %s", w.Name)
		}
	}
	for _, d := range deploy.Names() {
		if !strings.Contains(help, "  "+d+" ") {
			t.Errorf("help lacks deployment %s", d)
		}
	}
	for _, c := range []string{"Req/Sec", "Millis", "99.5%", "Err", "Fail", "Thr"} {
		if !strings.Contains(help, c) {
			t.Errorf("help lacks column %s", c)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--deploy", "oracle"},
		{"--deploy", "redis,redis"},
		{"--deploy", "redis", "--workload", "tpcc"},
		{"--deploy", "redis", "--threads", "0"},
		{"--deploy", "redis", "--baseline", "etcd"},
		{"--target", "not a url"},
		{"--target", "a=resp://x:1", "--target", "a=resp://y:1"},
		{"--deploy", "redis", "--records", "0"},
		{"--deploy", "redis", "extra"},
		{"--bogus"},
		{"--deploy", "redis", "--ratio", "1:1"},
		{"--deploy", "redis", "--workload", "mix", "--ratio", "1"},
		{"--deploy", "redis", "--workload", "mix", "--ratio", "0:0"},
		{"--deploy", "redis", "--workload", "mix", "--pipeline", "0"},
		{"--deploy", "redis", "--workload", "mix", "--keys", "100000", "--value-size", "4"},
		{"--deploy", "redis", "--workload", "mix,ycsb-a"},
		{"--deploy", "redis", "--workload", "mix", "--key-dist", "latest"},
		{"--deploy", "redis", "--server-cpus", "x"},
		{"--deploy", "redis", "--client-cpus", "1-0"},
		{"--deploy", "etcd3", "--kill", "10s"},
		{"--deploy", "etcd3", "--kill", "down=1s"},
		{"--deploy", "etcd3", "--kill", "every=0s"},
		{"--deploy", "etcd3", "--kill", "every=1s,often=2s"},
		{"--deploy", "etcd3", "--kill", "every=1s", "--kill-target", "client"},
		{"--deploy", "etcd3", "--kill-target", "front"},
		{"--deploy", "etcd3", "--kill", "every=1s", "--workload", "ycsb-a"},
		{"--target", "resp://x:1", "--kill", "every=1s"},
		{"--deploy", "etcd3", "--kill", "every=1s", "--rate", "100"},
		{"--deploy", "cassandra3", "--kill", "every=15s,down=-5s"},
		{"--deploy", "anykv+cassandra3", "--kill-target", "front"},
		{"--deploy", "cassandra3,anykv+cassandra3", "--kill", "every=15s", "--kill-target", "cassandra"},
		{"--deploy", "redis", "--workload", "mix", "--rate", "1000"},
		{"--deploy", "redis", "--workload", "mix", "--threads", "4"},
		{"--deploy", "redis", "--workload", "mix", "--records", "500"},
		{"--deploy", "redis", "--workload", "mix", "--operations", "500"},
		{"--deploy", "redis", "--workload", "ycsb-a", "--value-size", "55"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
		if !strings.Contains(stderr.String(), "anykv bench:") || stdout.Len() != 0 {
			t.Errorf("%q: stderr %q stdout %q", args, stderr.String(), stdout.String())
		}
	}
}

// TestParseKill: --kill and --kill-target on the clustered targets, with the defaults --kill fills in (a run of
// four kill periods, four clients, 100-byte values) and a --duration given for Cassandra's slower restarts.
func TestParseKill(t *testing.T) {
	for _, c := range []struct {
		args        []string
		every, down time.Duration
		front       bool
		duration    time.Duration
	}{
		{[]string{"--deploy", "etcd3,anykv+etcd3", "--kill", "every=10s"}, 10 * time.Second, 5 * time.Second, false, 40 * time.Second},
		{[]string{"--deploy", "cassandra3,anykv+cassandra3", "--kill", "every=20s,down=5s", "--duration", "80s"}, 20 * time.Second, 5 * time.Second, false, 80 * time.Second},
		{[]string{"--deploy", "anykv+cassandra3", "--kill", "down=5s,every=15s", "--kill-target", "front"}, 15 * time.Second, 5 * time.Second, true, 60 * time.Second},
	} {
		var stderr bytes.Buffer
		o, code, done := parse(c.args, &stderr, &stderr)
		if done {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr.String())
			continue
		}
		k := o.kill
		if k == nil || k.every != c.every || k.down != c.down || k.front != c.front || o.duration != c.duration {
			t.Errorf("%q: kill %+v, duration %v; want every %v down %v front %v duration %v", c.args, k, o.duration, c.every, c.down, c.front, c.duration)
		}
		if len(o.threads) != 1 || o.threads[0] != 4 || o.valueSize != 100 {
			t.Errorf("%q: threads %v, value size %d; want 4 clients of 100-byte values", c.args, o.threads, o.valueSize)
		}
		if got := strings.Join(o.deploy, ","); got != c.args[1] {
			t.Errorf("%q: deploy %s", c.args, got)
		}
	}
}

// TestClusterTargetsListed: the failover evaluation's targets are deployable and described in --help.
func TestClusterTargetsListed(t *testing.T) {
	var stdout, stderr bytes.Buffer
	Main(context.Background(), []string{"--help"}, &stdout, &stderr)
	for _, name := range []string{"etcd3", "anykv+etcd3", "redis-cluster", "anykv+redis-cluster", "redis-cluster9",
		"anykv+redis-cluster9", "cassandra3", "anykv+cassandra3"} {
		if !deploy.Known(name) {
			t.Errorf("%s is not a deployable target", name)
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +\S`).MatchString(stdout.String()) {
			t.Errorf("--help does not list %s", name)
		}
	}
	for _, want := range []string{"cassandra3 ", "QUORUM", "SERIAL"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestTargetAndMissingBinary runs against a server given by URL, next to an
// anykv deployment whose binary does not exist, with a JSON report.
func TestTargetAndMissingBinary(t *testing.T) {
	srv := deployRedis(t)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--deploy", "anykv", "--anykv-bin", "/nonexistent/anykv",
		"--target", "mine=" + srv.URL, "--workload", "kv739,ycsb-e", "--operations", "200", "--records", "100",
		"--threads", "2", "--baseline", "mine", "--rate", "2000", "--seed", "9"}, &stdout, &stderr)
	out := stdout.String()
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"skipped: anykv binary /nonexistent/anykv not found", "-- kv739 on mine",
		"-- ycsb-e on mine", "put-65536B", "get-absent", "run:scan", "run:insert", "open loop at 2000 requests/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestInterruptTearsDown cancels a long run and checks Main returns soon,
// reports the interruption and leaves no server behind.
func TestInterruptTearsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"--deploy", "redis-nopersist", "--workload", "ycsb-a", "--records", "1000000",
			"--threads", "2"}, &stdout, &stderr)
	}()
	// Wait until the server is up and the load phase has stored keys, then interrupt.
	m, ok := stderr.wait(regexp.MustCompile(`ready at resp://(127\.0\.0\.1:\d+)`), 30*time.Second)
	if !ok {
		cancel()
		t.Fatalf("server never came up: %s", stderr.String())
	}
	addr := m[1]
	if !loading(addr, 30*time.Second) {
		cancel()
		t.Fatalf("the load phase never stored a key: %s", stderr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("exit %d, want %d", code, ExitInterrupted)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Main did not return after cancel")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("redis still listening on %s after interrupt", addr)
	}
	if !strings.Contains(stdout.String(), "load*") {
		t.Errorf("partial load phase not reported:\n%s", stdout.String())
	}
}

func TestProgressLine(t *testing.T) {
	l := workload.Live{Workload: "ycsb-a", Phase: "run", Threads: 4, Done: 500, Total: 1500,
		Elapsed: 2 * time.Second, P99: 1500 * time.Microsecond}
	got := progressLine("redis", l)
	want := "redis ycsb-a/run thr=4  500/1500 ops  250/s  p99 1.500ms  ~4s left"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	l.Cap = 3 * time.Second
	if got := progressLine("redis", l); !strings.HasSuffix(got, "~1s left") {
		t.Errorf("capped: %q", got)
	}
	var buf bytes.Buffer
	if isTerminal(&buf) {
		t.Error("buffer taken for a terminal")
	}
	f, _ := os.Open(os.DevNull)
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null taken for a terminal")
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine; wait blocks until its text matches.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // signalled (without blocking) after each write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{}, 1)
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// wait returns re's submatches once the written text matches, or false after timeout.
func (s *syncBuffer) wait(re *regexp.Regexp, timeout time.Duration) ([]string, bool) {
	s.mu.Lock()
	if s.changed == nil {
		s.changed = make(chan struct{}, 1)
	}
	changed := s.changed
	s.mu.Unlock()
	expire := time.After(timeout)
	for {
		if m := re.FindStringSubmatch(s.String()); m != nil {
			return m, true
		}
		select {
		case <-changed:
		case <-expire:
			return nil, false
		}
	}
}

// loading reports whether the Redis server at addr holds at least one key within timeout (asking DBSIZE).
func loading(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(c)
	for {
		if _, err := c.Write([]byte("DBSIZE\r\n")); err != nil {
			return false
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if line != ":0\r\n" {
			return strings.HasPrefix(line, ":")
		}
	}
}

// slowNoop is a driver whose only working operation is a 1ms no-op.
type slowNoop struct{ driver.Driver }

func (slowNoop) Kind() string      { return "slow" }
func (slowNoop) Caps() driver.Caps { return 0 }
func (slowNoop) Noop(ctx context.Context) error {
	time.Sleep(time.Millisecond)
	return ctx.Err()
}

func TestProgressRunsAlongsideAPhase(t *testing.T) {
	var out syncBuffer
	b := &bencher{stdout: &out, stderr: &out, live: true}
	r := workload.NewRunner("slow", slowNoop{}, workload.Config{})
	stop := b.progress(r)
	err := r.Phase(context.Background(), workload.Phase{Name: "noop", Threads: 2, Ops: 1000,
		Op: func(w *workload.Worker, i int64) workload.Outcome { return w.Noop("noop") }})
	stop()
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "slow /noop thr=2") || !strings.Contains(s, "/1000 ops") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("progress output %q", s)
	}
}

// TestParseValueSizeMinimum: the self-checking workloads take values of 56 bytes (the check header) and up,
// while mix, whose values carry no header, takes smaller ones; the usage error names the minimum.
func TestParseValueSizeMinimum(t *testing.T) {
	for _, args := range [][]string{
		{"--deploy", "redis", "--workload", "ycsb-a", "--value-size", "56"},
		{"--deploy", "redis", "--workload", "mix", "--value-size", "8"},
	} {
		var stderr bytes.Buffer
		if _, code, done := parse(args, &stderr, &stderr); done {
			t.Errorf("%q: exit %d: %s", args, code, stderr.String())
		}
	}
	var stderr bytes.Buffer
	parse([]string{"--deploy", "redis", "--value-size", "20"}, &stderr, &stderr)
	if !strings.Contains(stderr.String(), "minimum of 56") {
		t.Errorf("error %q does not name the minimum", stderr.String())
	}
	stderr.Reset()
	parse([]string{"--deploy", "redis", "--workload", "mix", "--threads", "8"}, &stderr, &stderr)
	if !strings.Contains(stderr.String(), "--threads does not apply to --workload mix") {
		t.Errorf("error %q does not name --threads", stderr.String())
	}
}

// TestErrorsFailTheRun runs against a real Redis that refuses every write (maxmemory 1 byte, no eviction):
// the load's errors are not throughput, and more than 1% errors in a row exits 1 and says why on stderr.
func TestErrorsFailTheRun(t *testing.T) {
	srv := deployRedis(t)
	if reply := redisCmd(t, strings.TrimPrefix(srv.URL, "resp://"), "CONFIG", "SET", "maxmemory", "1"); reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q", reply)
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--target", "full=" + srv.URL, "--workload", "ycsb-a", "--records", "50",
		"--operations", "50", "--threads", "1"}, &stdout, &stderr)
	if code != ExitFailed {
		t.Errorf("exit %d, want %d\n%s\n%s", code, ExitFailed, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "full ycsb-a/load thr=1: 50 errors in 50 requests (100.0%)") {
		t.Errorf("stderr does not say why:\n%s", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^load +0\.0 +\d+ `).MatchString(stdout.String()) {
		t.Errorf("a load of 50 errors shows throughput:\n%s", stdout.String())
	}
}

// redisCmd sends one command to the Redis server at addr and returns its reply line.
func redisCmd(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(line, "\r\n")
}

// TestBaselineThatDidNotRun: --baseline names a target that could not start; the ratios fall back to the first
// target that ran (two databases of one real Redis here), and a note says so.
func TestBaselineThatDidNotRun(t *testing.T) {
	srv := deployRedis(t)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--deploy", "anykv", "--anykv-bin", "/nonexistent/anykv",
		"--target", "db1=" + srv.URL + "/1", "--target", "db2=" + srv.URL + "/2", "--baseline", "anykv",
		"--workload", "ycsb-c", "--records", "50", "--operations", "50", "--threads", "1"}, &stdout, &stderr)
	out := stdout.String()
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	if !strings.Contains(out, "(ratio to baseline db1)") || !regexp.MustCompile(`(?m)^ycsb-c +run +1 .*\(\d+\.\d\dx\)`).MatchString(out) {
		t.Errorf("ratios are not to the first target that ran:\n%s", out)
	}
	if !strings.Contains(out, "--baseline anykv: skipped: anykv binary /nonexistent/anykv not found; ratios are to db1") {
		t.Errorf("no note of the fallback:\n%s", out)
	}
}

// deployRedis deploys a redis-server without persistence for the test, torn down when it ends.
func deployRedis(t *testing.T) *deploy.Server {
	t.Helper()
	base, err := deploy.NewBaseDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	srv, err := deploy.Start(context.Background(), "redis-nopersist", deploy.Options{BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}
