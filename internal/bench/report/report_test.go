package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/hist"
	"anykv/internal/bench/workload"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// result builds a deterministic result whose latencies are base, 2*base,
// ... n*base microseconds.
func result(target, phase, op string, threads int, n int64, base time.Duration, elapsed time.Duration, start time.Time) *workload.Result {
	h := hist.New()
	s := hist.NewSeries(start, 100*time.Millisecond)
	for i := int64(1); i <= n; i++ {
		h.Record(time.Duration(i) * base)
		s.Add(start.Add(time.Duration(i) * elapsed / time.Duration(n+1)))
	}
	r := &workload.Result{Target: target, Workload: "appscale", Phase: phase, Op: op, Threads: threads,
		Ops: n, Elapsed: elapsed, Hist: h}
	if op == "" {
		r.Series = s
	}
	return r
}

func sample() *Report {
	rep := &Report{
		Command: "anykv bench --deploy redis,memcached,postgres,mariadb --workload appscale --records 50 --threads 1",
		Started: t0, Seed: 42, Mode: "closed loop",
		Workloads: []WorkloadInfo{{Name: "appscale", Summary: "AppScale datastore evaluation", Params: []string{"N=50", "threads=1"}}},
		Targets: []Target{
			{Name: "redis", URL: "resp://127.0.0.1:7001", Deployed: true, Version: "Redis server v=7.0.15",
				Settings: []string{"AOF on, fsync always"}, Driver: "RESP2"},
			{Name: "memcached", URL: "memcache://127.0.0.1:7002", Deployed: true, Settings: []string{"memory only"}},
			{Name: "postgres", URL: "postgres://postgres@127.0.0.1:7003/postgres", Deployed: true, Settings: []string{"fsync=on"}},
			{Name: "mariadb", Deployed: true, Skipped: "skipped: install Debian package mariadb-server"},
		},
	}
	for i, tg := range []struct {
		name  string
		speed time.Duration
	}{{"redis", 40 * time.Microsecond}, {"memcached", 20 * time.Microsecond}, {"postgres", 300 * time.Microsecond}} {
		start := t0.Add(time.Duration(i) * time.Minute)
		rep.Results = append(rep.Results, result(tg.name, "fill", "", 1, 50, tg.speed, 50*tg.speed*2, start))
		if tg.name == "memcached" {
			rep.Results = append(rep.Results, &workload.Result{Target: tg.name, Workload: "appscale", Phase: "query", Threads: 1,
				Skipped: "memcache: scan not supported, phase skipped"})
		} else {
			q := result(tg.name, "query", "", 1, 100, tg.speed*10, 100*tg.speed*20, start.Add(time.Second))
			rep.Results = append(rep.Results, q)
		}
		mix := result(tg.name, "mix", "", 1, 60, tg.speed, 60*tg.speed*2, start.Add(2*time.Second))
		mix.Partial = tg.name == "postgres"
		get := result(tg.name, "mix", "get", 1, 40, tg.speed, 60*tg.speed*2, start.Add(2*time.Second))
		put := result(tg.name, "mix", "put", 1, 20, tg.speed*3, 60*tg.speed*2, start.Add(2*time.Second))
		if tg.name == "postgres" {
			mix.Fails, put.Fails, mix.Errs, get.Errs = 1, 1, 2, 2
			mix.Samples = []string{"fail: appscale/k1: stale value from write #1", "error: timeout"}
		}
		rep.Results = append(rep.Results, mix, get, put)
	}
	rep.Results = append(rep.Results, result("redis", "fill", "", 3, 50, 50*time.Microsecond, 3*time.Millisecond, t0.Add(10*time.Second)))
	rep.Notices = []string{"memcached appscale/query thr=1: memcache: scan not supported, phase skipped"}
	return rep
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(go test -update rewrites goldens)", name, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d vs %d lines", name, len(gl), len(wl))
	}
}

func TestTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt.golden", b.Bytes())
	out := b.String()
	header := regexp.MustCompile(`(?m)^Test +Req/Sec +Millis +50% +90% +99% +99\.5% +99\.9% +Max +Mean +Err +Fail +Thr$`)
	if n := len(header.FindAllString(out, -1)); n != 3 {
		t.Errorf("%d table headers, want one per target that ran", n)
	}
	for _, want := range []string{
		"99.5%", "skipped: install Debian package mariadb-server",
		"memcache: scan not supported, phase skipped", "side by side: Req/Sec (ratio to baseline redis)",
		"(2.00x)", "stale value",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

func TestBaselineChoice(t *testing.T) {
	rep := sample()
	rep.Baseline = "memcached"
	var b bytes.Buffer
	WriteText(&b, rep)
	if !strings.Contains(b.String(), "ratio to baseline memcached") || !strings.Contains(b.String(), "(0.50x)") {
		t.Errorf("baseline memcached not applied:\n%s", b.String())
	}
}

func TestCSVGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.csv.golden", b.Bytes())
	recs, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(sample().Results) {
		t.Errorf("%d records", len(recs))
	}
	for _, r := range recs {
		if len(r) != len(CSVHeader) {
			t.Fatalf("record %v has %d fields", r, len(r))
		}
	}
}

func TestJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", b.Bytes())
	var back jsonReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Baseline != "redis" || len(back.Results) != len(sample().Results) || back.Results[0].LatencyMs["p99"] <= 0 {
		t.Errorf("round trip: %+v", back)
	}
}

func TestHTMLGoldenAndSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.html.golden", b.Bytes())
	page := b.String()
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url(", "@font-face"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: not self-contained", bad)
		}
	}
	if n := strings.Count(page, "<svg"); n != 7 {
		t.Errorf("%d svg plots, want 2 per target that ran and 1 comparison per workload", n)
	}
	for _, want := range []string{"throughput over time", "latency CDF", "<polyline", "skipped", "requests/s by phase and target"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestChartEdgeCases(t *testing.T) {
	if s := chart("empty", "x", "y", nil, true, 1, nil); !strings.Contains(s, "no data") {
		t.Error("empty chart")
	}
	if niceCeil(0.7) != 1 || niceCeil(3) != 5 || niceCeil(2400) != 2500 || niceCeil(101) != 200 {
		t.Errorf("niceCeil: %v %v %v %v", niceCeil(0.7), niceCeil(3), niceCeil(2400), niceCeil(101))
	}
	if tick(12500) != "12.5k" || tick(0.025) != "0.025" || tick(2e6) != "2M" {
		t.Errorf("ticks %s %s %s", tick(12500), tick(0.025), tick(2e6))
	}
}

// TestComparisonChartKeepsMixPhases: mix phases are named like 10:1/p1, with a colon, and are phase totals;
// the bar chart keeps them and leaves out only the per-operation rows (10:1/p1:get).
func TestComparisonChartKeepsMixPhases(t *testing.T) {
	rep := &Report{Targets: []Target{{Name: "redis"}, {Name: "memcached"}}}
	for _, tg := range []string{"redis", "memcached"} {
		for _, op := range []string{"", "get", "set"} {
			r := result(tg, "10:1/p1", op, 50, 100, 40*time.Microsecond, time.Second, t0)
			r.Workload = "mix"
			rep.Results = append(rep.Results, r)
		}
	}
	svg := comparisonChart(rep, "mix")
	if strings.Contains(svg, "no data") || !strings.Contains(svg, ">10:1/p1 t50<") {
		t.Errorf("mix phase missing from the bar chart:\n%s", svg)
	}
	if strings.Contains(svg, "10:1/p1:get") {
		t.Errorf("per-operation row in the bar chart:\n%s", svg)
	}
}

// TestErrorsAreMarkedNotRanked: a target whose every request errored has no Req/Sec (errors are not
// throughput), its side-by-side cells say so, and above 1% errors there is no ratio to rank it by.
func TestErrorsAreMarkedNotRanked(t *testing.T) {
	rep := &Report{Workloads: []WorkloadInfo{{Name: "appscale"}}, Targets: []Target{{Name: "good"}, {Name: "broken"}, {Name: "flaky"}}}
	good := result("good", "put", "", 1, 100, 100*time.Microsecond, time.Second, t0)
	broken := result("broken", "put", "", 1, 0, time.Microsecond, time.Second, t0)
	broken.Ops, broken.Errs = 50000, 50000
	flaky := result("flaky", "put", "", 1, 1000, 100*time.Microsecond, time.Second, t0)
	flaky.Errs = 5 // 0.5%: still compared
	rep.Results = []*workload.Result{good, broken, flaky}
	var b bytes.Buffer
	WriteText(&b, rep)
	out := b.String()
	re := regexp.MustCompile(`(?m)^appscale +put +1 +100 +0\.0 \[100% err\] +995 \(9\.95x\) \[0\.5% err\]$`)
	if !re.MatchString(out) {
		t.Errorf("Req/Sec row not as expected:\n%s", out)
	}
	var h bytes.Buffer
	WriteHTML(&h, rep)
	if !strings.Contains(h.String(), `<td class="fail">0.0 [100% err]</td>`) {
		t.Errorf("HTML side by side lacks the error marker")
	}
}
