package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	js := filepath.Join(t.TempDir(), "mix.json")
	args := []string{"--deploy", targets, "--workload", "mix", "--ratio", "0:1,3:1", "--pipeline", "1,4",
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
	names := strings.Split(targets, ",")
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
