package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/cpuset"
)

// TestMixEndToEnd deploys redis-nopersist and memcached (and anykv over
// RESP and memcached when ANYKV_BIN is set) pinned to one core, runs the
// mix workload in two alternating rounds and checks the report: every key
// loaded once, medians over two runs, no errors, and the bench pinned.
func TestMixEndToEnd(t *testing.T) {
	allowed, err := cpuset.Allowed(0)
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if err := cpuset.PinSelf(allowed); err != nil {
			t.Errorf("restore affinity: %v", err)
		}
		runtime.GOMAXPROCS(procs)
	})
	cpu := cpuset.String(allowed[len(allowed)-1:])
	targets := "redis-nopersist,memcached"
	if bin := os.Getenv("ANYKV_BIN"); bin != "" {
		targets = "anykv,anykv-memcache," + targets
	}
	dir := t.TempDir()
	js, html, csv := filepath.Join(dir, "mix.json"), filepath.Join(dir, "mix.html"), filepath.Join(dir, "mix.csv")
	args := []string{"--html", html, "--csv", csv, "--deploy", targets, "--workload", "mix", "--ratio", "0:1,3:1", "--pipeline", "1,4",
		"--connections", "3", "--keys", "200", "--duration", "150ms", "--runs", "2",
		"--server-cpus", cpu, "--client-cpus", cpu, "--json", js, "--anykv-bin", os.Getenv("ANYKV_BIN")}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := Main(ctx, args, &stdout, &stderr)
	out := stdout.String()
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	if strings.Contains(out, "skipped") {
		t.Fatalf("a target was skipped (CI installs scripts/test-deps.txt):\n%s", out)
	}
	if got, _ := cpuset.Allowed(0); cpuset.String(got) != cpu || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("bench runs on CPUs %v with GOMAXPROCS %d; want %s and 1", got, runtime.GOMAXPROCS(0), cpu)
	}
	for _, want := range []string{"medians of 2 alternating runs", "pinned to CPUs " + cpu, "== side by side: 99.9% latency",
		"-t 1", "3:1/p4:get"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Results []struct {
			Target, Test   string
			Threads, Runs  int
			Ops, Err, Fail int64
			ReqPerSec      float64 `json:"req_per_sec"`
			LatencyMs      map[string]float64
		}
	}
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("json report: %v", err)
	}
	if page, err := os.ReadFile(html); err != nil || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("html report: %v, %d bytes", err, len(page))
	}
	names := strings.Split(targets, ",")
	if c, err := os.ReadFile(csv); err != nil || strings.Count(string(c), "\n") != len(names)*9+1 {
		t.Errorf("csv report: %v\n%s", err, c)
	}
	// Per target: load, then 0:1 at two depths (total rows only) and 3:1
	// at two depths (total, get, set).
	if want := len(names) * (1 + 2 + 2*3); len(rep.Results) != want {
		t.Errorf("%d result rows, want %d", len(rep.Results), want)
	}
	for _, r := range rep.Results {
		if !slices.Contains(names, r.Target) || r.Threads != 3 || r.Err != 0 || r.Fail != 0 || r.Ops == 0 || r.ReqPerSec <= 0 {
			t.Errorf("row %+v", r)
		}
		if r.Test == "load" && (r.Ops != 200 || r.Runs != 0) {
			t.Errorf("%s load wrote %d keys (runs %d), want 200 once", r.Target, r.Ops, r.Runs)
		}
		if r.Test != "load" && r.Runs != 2 {
			t.Errorf("%s %s merges %d runs, want 2", r.Target, r.Test, r.Runs)
		}
	}
}

// TestMixCountsWrongRepliesAsFails runs mix against a RESP server that
// answers every request with the same 3-byte string: every request is a
// Fail, the report says why and the exit code is 1.
func TestMixCountsWrongRepliesAsFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					// A request is "*N" and N bulk strings of two lines each.
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
					for i := 0; i < 2*n; i++ {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := c.Write([]byte("$3\r\nabc\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--target", "garbage=resp://" + ln.Addr().String(), "--workload", "mix",
		"--ratio", "1:1", "--connections", "2", "--pipeline", "4", "--keys", "20", "--duration", "100ms"}, &stdout, &stderr)
	out := stdout.String()
	if code != ExitFailed {
		t.Errorf("exit %d, want %d\n%s", code, ExitFailed, out)
	}
	m := regexp.MustCompile(`(?m)^1:1/p4\s+[\d.]+\s+\d+(?:\s+[\d.]+){7}\s+(\d+)\s+(\d+)\s+2$`).FindStringSubmatch(out)
	if m == nil || m[1] != "0" || m[2] == "0" {
		t.Fatalf("no 1:1/p4 row with 0 Err and some Fail:\n%s", out)
	}
	for _, want := range []string{"load  ", "SET of key", "GET of key", "answered 3 bytes, want 100"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
