package workload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/bench/driver"
	"anykv/internal/bench/gen"
	"anykv/internal/bench/hist"
)

func runOne(t *testing.T, d driver.Driver, name string, cfg Config) *Runner {
	t.Helper()
	w, ok := Lookup(name)
	if !ok {
		t.Fatalf("no workload %s", name)
	}
	r := NewRunner("mem", d, cfg)
	var mu sync.Mutex
	var notes []string
	r.Notice = func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }
	if err := r.Run(context.Background(), w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func totals(r *Runner) (ops, errs, fails int64) {
	for _, res := range r.Results {
		if res.Op == "" {
			ops += res.Ops
			errs += res.Errs
			fails += res.Fails
		}
	}
	return
}

func find(r *Runner, phase, op string, threads int) *Result {
	for _, res := range r.Results {
		if res.Phase == phase && res.Op == op && res.Threads == threads {
			return res
		}
	}
	return nil
}

func TestEveryWorkloadRunsCleanOnAHealthyStore(t *testing.T) {
	cfg := Config{Records: 200, Operations: 400, Threads: []int{1, 3}, Seed: 1}
	for _, w := range All() {
		t.Run(w.Name, func(t *testing.T) {
			r := runOne(t, newMem(), w.Name, cfg)
			ops, errs, fails := totals(r)
			if ops == 0 || errs != 0 || fails != 0 {
				for _, res := range r.Results {
					t.Logf("%s %s: ops %d errs %d fails %d %v", res.Test(), res.Skipped, res.Ops, res.Errs, res.Fails, res.Samples)
				}
				t.Fatalf("ops %d errs %d fails %d", ops, errs, fails)
			}
			for _, res := range r.Results {
				if res.Skipped != "" {
					t.Errorf("%s skipped on a store that can do everything: %s", res.Test(), res.Skipped)
				}
				if res.Op == "" && res.Hist.Count() != res.Ops {
					t.Errorf("%s: histogram has %d samples for %d ops", res.Test(), res.Hist.Count(), res.Ops)
				}
			}
			if len(w.Params(cfg)) == 0 || w.Summary == "" {
				t.Error("workload lacks params or summary")
			}
		})
	}
}

func TestAppScaleShape(t *testing.T) {
	r := runOne(t, newMem(), "appscale", Config{Records: 50, Threads: []int{1, 3}, Seed: 2})
	want := map[string]int64{"fill": 50, "count": 30, "put": 150, "get": 150, "query": 300, "delete": 150, "noop": 150}
	for phase, ops := range want {
		res := find(r, phase, "", 3)
		if res == nil || res.Ops != ops {
			t.Errorf("3 threads %s: %+v, want %d ops", phase, res, ops)
		}
	}
	if res := find(r, "put", "", 1); res == nil || res.Ops != 50 {
		t.Errorf("1 thread put: %+v", res)
	}
}

func TestYCSBOperationMix(t *testing.T) {
	cfg := Config{Records: 1000, Operations: 20000, Threads: []int{2}, Seed: 3}
	for _, c := range []struct {
		name string
		kind string
		frac float64
	}{{"ycsb-a", "read", .5}, {"ycsb-b", "read", .95}, {"ycsb-d", "insert", .05}, {"ycsb-e", "scan", .95}, {"ycsb-f", "rmw", .5}} {
		r := runOne(t, newMem(), c.name, cfg)
		res := find(r, "run", c.kind, 2)
		if res == nil {
			t.Fatalf("%s: no %s row", c.name, c.kind)
		}
		if got := float64(res.Ops) / 20000; got < c.frac-0.02 || got > c.frac+0.02 {
			t.Errorf("%s: %s fraction %.3f, want %.2f", c.name, c.kind, got, c.frac)
		}
	}
	r := runOne(t, newMem(), "ycsb-c", cfg)
	if res := find(r, "run", "", 2); res == nil || res.Ops != 20000 {
		t.Errorf("ycsb-c run: %+v", res)
	}
}

func TestMissingCapabilitySkipsPhase(t *testing.T) {
	m := newMem()
	m.kind, m.caps = "memcache", 0
	var notes []string
	r := NewRunner("mc", m, Config{Records: 20, Operations: 20, Threads: []int{1}})
	r.Notice = func(s string) { notes = append(notes, s) }
	w, _ := Lookup("appscale")
	if err := r.Run(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	q := find(r, "query", "", 1)
	if q == nil || q.Skipped != "memcache: scan not supported, phase skipped" || q.Ops != 0 {
		t.Fatalf("query row %+v", q)
	}
	if c := find(r, "count", "", 1); c == nil || c.Skipped != "memcache: count not supported, phase skipped" {
		t.Fatalf("count row %+v", c)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "phase skipped") {
		t.Errorf("notices %q", notes)
	}
	if g := find(r, "get", "", 1); g == nil || g.Ops != 20 || g.Skipped != "" {
		t.Errorf("get row %+v", g)
	}
}

func TestFaultsAreCounted(t *testing.T) {
	cases := []struct {
		name     string
		workload string
		setup    func(*memStore)
		errs     bool
		fails    bool
		sample   string
	}{
		{"stale reads", "nosql-eval", func(m *memStore) { m.staleEvery = 7 }, false, true, "stale value"},
		{"lost writes", "nosql-eval", func(m *memStore) { m.loseEvery = 11 }, false, true, "not found"},
		{"errors", "ycsb-a", func(m *memStore) { m.errEvery = 13 }, true, false, "injected error"},
		{"phantoms", "acdb", func(m *memStore) { m.phantom = true }, false, true, "never written"},
		{"short scans", "ycsb-e", func(m *memStore) { m.shortScan = true }, false, true, "loaded keys have that prefix"},
		{"lost increments", "incr", func(m *memStore) { m.loseEvery = 11 }, false, true, "lost or invented updates"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMem()
			c.setup(m)
			r := runOne(t, m, c.workload, Config{Records: 100, Operations: 300, Threads: []int{1}, Seed: 4})
			_, errs, fails := totals(r)
			if (errs > 0) != c.errs || (fails > 0) != c.fails {
				t.Fatalf("errs %d fails %d", errs, fails)
			}
			var samples []string
			for _, res := range r.Results {
				samples = append(samples, res.Samples...)
			}
			if !strings.Contains(strings.Join(samples, "\n"), c.sample) {
				t.Errorf("samples %q lack %q", samples, c.sample)
			}
		})
	}
}

func TestTrackerEpochs(t *testing.T) {
	tr := NewTracker()
	val := func(seq uint64) []byte { return gen.Encode(nil, gen.KeyHash("t", "k"), seq, 60) }
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), nil, false); f != "" {
		t.Errorf("absent never-written key: %s", f)
	}
	s1 := tr.BeginWrite("t", "k", false)
	// A read overlapping the first write may see nothing or the write.
	rs := tr.BeginRead("t", "k")
	if f := tr.CheckRead("t", "k", rs, nil, false); f != "" {
		t.Errorf("overlapping read, absent: %s", f)
	}
	tr.EndWrite("t", "k", false, nil)
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), nil, false); !strings.Contains(f, "not found") {
		t.Errorf("lost write not flagged: %q", f)
	}
	// Two overlapping writes: either may win.
	s2 := tr.BeginWrite("t", "k", false)
	s3 := tr.BeginWrite("t", "k", false)
	tr.EndWrite("t", "k", false, nil)
	tr.EndWrite("t", "k", false, nil)
	for _, s := range []uint64{s2, s3} {
		if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), val(s), true); f != "" {
			t.Errorf("write #%d after overlapping epoch: %s", s, f)
		}
	}
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), val(s1), true); !strings.Contains(f, "stale") {
		t.Errorf("stale write #%d not flagged: %q", s1, f)
	}
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), val(99), true); !strings.Contains(f, "never issued") {
		t.Errorf("future write not flagged: %q", f)
	}
	other := gen.Encode(nil, gen.KeyHash("t", "j"), s3, 60)
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), other, true); !strings.Contains(f, "another key") {
		t.Errorf("wrong key not flagged: %q", f)
	}
	bad := val(s3)
	bad[len(bad)-1] ^= 1
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), bad, true); !strings.Contains(f, "crc") {
		t.Errorf("corruption not flagged: %q", f)
	}
	// Delete: absent is right afterwards, the old value is not.
	tr.BeginWrite("t", "k", true)
	tr.EndWrite("t", "k", true, nil)
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), nil, false); f != "" {
		t.Errorf("absent after delete: %s", f)
	}
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), val(s3), true); f == "" {
		t.Error("value resurrected after delete not flagged")
	}
	// A failed write makes the key uncertain: only integrity is checked.
	tr.BeginWrite("t", "k", false)
	tr.EndWrite("t", "k", false, errors.New("timeout"))
	if f := tr.CheckRead("t", "k", tr.BeginRead("t", "k"), val(s1), true); f != "" {
		t.Errorf("uncertain key judged: %s", f)
	}
}

func TestTrackerCounts(t *testing.T) {
	tr := NewTracker()
	for _, k := range []string{"a", "b", "c"} {
		tr.BeginWrite("t", k, false)
		tr.EndWrite("t", k, false, nil)
	}
	tr.BeginWrite("t", "a", false) // overwrite: no new key
	tr.EndWrite("t", "a", false, nil)
	cs := tr.BeginCount("t")
	if f := tr.CheckCount("t", cs, 3); f != "" {
		t.Errorf("3 keys: %s", f)
	}
	if f := tr.CheckCount("t", cs, 2); f == "" {
		t.Error("2 keys accepted")
	}
	// A creation in flight during the query may or may not be seen.
	tr.BeginWrite("t", "d", false)
	for _, n := range []int64{3, 4} {
		if f := tr.CheckCount("t", cs, n); f != "" {
			t.Errorf("%d keys with a creation in flight: %s", n, f)
		}
	}
	if f := tr.CheckCount("t", cs, 5); f == "" {
		t.Error("5 keys accepted")
	}
	tr.EndWrite("t", "d", false, nil)
	tr.BeginWrite("t", "b", true)
	tr.EndWrite("t", "b", true, nil)
	if f := tr.CheckCount("t", tr.BeginCount("t"), 3); f != "" {
		t.Errorf("after delete: %s", f)
	}
}

func TestDurationCapAndOpenLoop(t *testing.T) {
	m := newMem()
	m.delay = 2 * time.Millisecond
	r := NewRunner("mem", m, Config{Duration: 150 * time.Millisecond})
	r.workload = "x"
	err := r.Phase(context.Background(), Phase{Name: "p", Threads: 2, Ops: 1 << 40, // without the cap: hours
		Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Results[0]; !res.Partial || res.Ops == 0 || res.Ops >= 1<<40 {
		t.Errorf("capped phase: %+v", res)
	}

	// Open loop at 400/s against a server that takes 10ms per request
	// with one worker: requests queue, and their latency must include the
	// wait from the intended send time.
	slow := newMem()
	slow.delay = 10 * time.Millisecond
	ro := NewRunner("slow", slow, Config{Rate: 400})
	ro.Phase(context.Background(), Phase{Name: "open", Threads: 1, Ops: 40,
		Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }})
	rc := NewRunner("slow", slow, Config{})
	rc.Phase(context.Background(), Phase{Name: "closed", Threads: 1, Ops: 40,
		Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }})
	open, closed := ro.Results[0].Hist, rc.Results[0].Hist
	// Lower bounds only, which a loaded machine can only raise: the 40th request was due at 97.5ms, but one
	// worker serving 10ms requests cannot start it before 390ms, so measured from its intended send time its
	// latency is at least 302.5ms; measured from its actual send (the mistake), about 10ms.
	if open.Max() < 300*time.Millisecond {
		t.Errorf("open loop hides queueing: max %v (closed max %v)", open.Max(), closed.Max())
	}
	if closed.Max() < 10*time.Millisecond {
		t.Errorf("closed loop faster than the server: max %v", closed.Max())
	}

	// A fast server is paced to the rate: the 41st op is due 200ms after the start, so no sooner.
	ro2 := NewRunner("fast", newMem(), Config{Rate: 200})
	start := time.Now()
	ro2.Phase(context.Background(), Phase{Name: "paced", Threads: 4, Ops: 41,
		Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }})
	if el := time.Since(start); el < 195*time.Millisecond {
		t.Errorf("41 ops at 200/s took %v: not paced", el)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	m := newMem()
	m.delay = time.Millisecond
	r := NewRunner("mem", m, Config{Records: 1 << 30, Operations: 1 << 30, Threads: []int{4}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	w, _ := Lookup("ycsb-a")
	err := r.Run(ctx, w) // 1<<30 records at 1ms each: without the cancel, weeks
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	if len(r.Results) != 1 || !r.Results[0].Partial || r.Results[0].Errs != 0 {
		t.Errorf("interrupted phase: %+v", r.Results)
	}
	if _, ok := r.Live(); ok {
		t.Error("live phase after return")
	}
}

func TestExpand(t *testing.T) {
	ws, err := Expand("ycsb,appscale,ycsb-a")
	if err != nil || len(ws) != 7 || ws[0].Name != "ycsb-a" || ws[6].Name != "appscale" {
		t.Fatalf("%v %v", ws, err)
	}
	all, _ := Expand("all")
	if len(all) != 12 {
		t.Errorf("all: %d workloads", len(all))
	}
	if _, err := Expand("tpcc"); err == nil || !strings.Contains(err.Error(), "unknown workload") {
		t.Errorf("unknown: %v", err)
	}
}

func TestUpdateSizesDeterministicAndInRange(t *testing.T) {
	seen := map[int]bool{}
	for i := int64(0); i < 5000; i++ {
		s := updateSize(7, i)
		if s < nosqlMinUpdate || s > nosqlMaxUpdate {
			t.Fatalf("size %d", s)
		}
		if s != updateSize(7, i) {
			t.Fatal("not deterministic")
		}
		seen[s/100] = true
	}
	if len(seen) != 19 {
		t.Errorf("sizes cover %d of 19 hundreds", len(seen))
	}
	if updateSize(7, 1) == updateSize(8, 1) && updateSize(7, 2) == updateSize(8, 2) {
		t.Error("seed ignored")
	}
}

func TestMergeRuns(t *testing.T) {
	mk := func(ops int64, lat time.Duration) *Result {
		h := hist.New()
		for i := int64(0); i < ops; i++ {
			h.Record(lat)
		}
		return &Result{Target: "x", Phase: "p", Ops: ops, Fails: 1, Elapsed: time.Second, Hist: h}
	}
	m := MergeRuns([]*Result{mk(300, 3*time.Millisecond), mk(100, time.Millisecond), mk(200, 20*time.Millisecond)})
	if m.Ops != 600 || m.Fails != 3 || m.Elapsed != 3*time.Second || m.Hist.Count() != 600 || m.Median.Runs != 3 {
		t.Errorf("sums: %+v", m)
	}
	if m.ReqPerSec() != 200 {
		t.Errorf("median rate %v, want 200", m.ReqPerSec())
	}
	if q := m.Quantile(99); q < 2900*time.Microsecond || q > 3100*time.Microsecond {
		t.Errorf("median p99 %v, want 3ms", q)
	}
	if mx := m.Hist.Max(); mx < 19*time.Millisecond {
		t.Errorf("max %v is not over all runs", mx)
	}
	one := mk(5, time.Millisecond)
	if MergeRuns([]*Result{one}) != one {
		t.Error("one run is not returned as it is")
	}
}

// TestYCSBFailedInsertDoesNotFreezeKeys: in ycsb-d the first insert fails; later inserts must still become
// readable (YCSB acknowledges a failed insert too), so reads reach keys inserted after it.
func TestYCSBFailedInsertDoesNotFreezeKeys(t *testing.T) {
	const records = 100
	m := newMem()
	m.failPut = "usertable_r0_t1/" + gen.YCSBKey(records)
	r := runOne(t, m, "ycsb-d", Config{Records: records, Operations: 2000, Threads: []int{1}, Seed: 5})
	ins := find(r, "run", "insert", 1)
	if ins == nil || ins.Errs != 1 || ins.Ops < 20 {
		t.Fatalf("insert row %+v, want one failed insert of many", ins)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	newer := 0
	for id := int64(records + 1); id < records+ins.Ops; id++ {
		newer += m.reads["usertable_r0_t1/"+gen.YCSBKey(id)]
	}
	if newer == 0 {
		t.Errorf("no read of the %d keys inserted after the failed one: the key window froze", ins.Ops-1)
	}
}

// TestOpenLoopSendsOnTime: paced requests to a store that answers at once must not carry the timer's
// oversleep (0.6-0.9 ms here) in their latency: a thread free before the due time counts from its send. A send
// that charged the oversleep has a median latency of at least the oversleep in every run; a machine loaded by
// other tests (CI runs packages in parallel under -race) slows a run's no-ops too, so a run passes when its median
// is 150 µs or less or under half the oversleep measured beside it, and the check fails only when three runs in a
// row do not.
func TestOpenLoopSendsOnTime(t *testing.T) {
	var medians, oversleeps []time.Duration
	for range 3 {
		r := NewRunner("mem", newMem(), Config{Rate: 2000})
		r.workload = "x"
		if err := r.Phase(context.Background(), Phase{Name: "paced", Threads: 1, Ops: 200,
			Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }}); err != nil {
			t.Fatal(err)
		}
		p50, over := r.Results[0].Hist.Quantile(50), medianOversleep(300*time.Microsecond)
		if p50 <= 150*time.Microsecond || p50 < over/2 {
			return
		}
		medians, oversleeps = append(medians, p50), append(oversleeps, over)
	}
	t.Errorf("median latencies %v of a no-op on an in-memory store, against timer oversleeps of %v: the send "+
		"oversleeps its due time", medians, oversleeps)
}

// medianOversleep is the median of how much longer than d 21 sleeps of d took.
func medianOversleep(d time.Duration) time.Duration {
	var o []time.Duration
	for range 21 {
		start := time.Now()
		time.Sleep(d)
		o = append(o, time.Since(start)-d)
	}
	slices.Sort(o)
	return o[len(o)/2]
}

// TestOpenLoopSendsEveryDueRequest: with --rate and --duration, every request due before the deadline is sent
// and recorded, however late the stalled store lets it go, and none due after it.
func TestOpenLoopSendsEveryDueRequest(t *testing.T) {
	slow := newMem()
	slow.delay = 10 * time.Millisecond
	r := NewRunner("slow", slow, Config{Rate: 500, Duration: 100 * time.Millisecond})
	r.workload = "x"
	if err := r.Phase(context.Background(), Phase{Name: "open", Threads: 1, Ops: 1000,
		Op: func(w *Worker, i int64) Outcome { return w.Noop("noop") }}); err != nil {
		t.Fatal(err)
	}
	// Requests 0..49 are due before 100ms; one worker at 10ms each sends the last at about 490ms.
	res := r.Results[0]
	if res.Ops != 50 || !res.Partial {
		t.Errorf("%d requests recorded (partial %v), want the 50 due before the deadline", res.Ops, res.Partial)
	}
	if mx := res.Hist.Max(); mx < 350*time.Millisecond {
		t.Errorf("max latency %v: the late requests' wait from their due time is missing", mx)
	}
}

// TestYCSBRunAddressesOnlyLoadedRecords: when --duration cuts the load short, the run phase reads only the
// records loaded (no read misses on the store), and a note says how many of them were; so do the read phases of
// the other workloads after their write phases (appscale's get and delete, nosql-eval's gets, kv739's).
func TestYCSBRunAddressesOnlyLoadedRecords(t *testing.T) {
	for _, name := range []string{"ycsb-c", "ratio-sweep", "appscale", "nosql-eval", "kv739"} {
		m := newMem()
		ops := int64(100)
		if name == "kv739" { // its phases are --operations long
			ops = 10000
		}
		r := NewRunner("mem", m, Config{Records: 10000, Operations: ops, Threads: []int{2}, Seed: 6,
			Rate: 2000, Duration: 50 * time.Millisecond})
		var notes []string
		r.Notice = func(s string) { notes = append(notes, s) }
		w, _ := Lookup(name)
		if err := r.Run(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		_, errs, fails := totals(r)
		misses := m.misses.Load()
		if name == "kv739" { // its get-absent phase misses on purpose: 100 requests, as every phase
			misses -= 100
		}
		if misses != 0 || errs != 0 || fails != 0 {
			t.Errorf("%s: %d reads of records never loaded, %d errs, %d fails", name, misses, errs, fails)
		}
		// At 2000/s for 50ms, requests 0..99 are due before the deadline.
		if want := "load cut short: records loaded 100 of"; !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("%s: notes %q lack %q", name, notes, want)
		}
	}
}

// TestReadPhasesAddressOnlyWrittenRecords: closed loop, puts slower than gets: the write phases cut short by
// --duration answer a few hundred records, and the read phases after them, which would read thousands in the
// same time, read only those (no miss on the store: a miss of a key never written passed as a right answer).
func TestReadPhasesAddressOnlyWrittenRecords(t *testing.T) {
	for _, name := range []string{"appscale", "nosql-eval", "kv739"} {
		m := newMem()
		m.putDelay = time.Millisecond
		r := NewRunner("mem", m, Config{Records: 100000, Operations: 100000, Threads: []int{2}, Seed: 6,
			Duration: 50 * time.Millisecond})
		w, _ := Lookup(name)
		if err := r.Run(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		misses := m.misses.Load()
		for _, res := range r.Results {
			if res.Phase == "get-absent" {
				misses -= res.Ops
			}
		}
		if _, errs, fails := totals(r); misses != 0 || errs != 0 || fails != 0 {
			t.Errorf("%s: %d reads of records never written, %d errs, %d fails", name, misses, errs, fails)
		}
	}
}

// TestGetLoadedMissIsAFail: a workload's read of a record it expects loaded that finds nothing, because it was
// never written, is a Fail; a plain Get of it (an absent key's right answer) is not.
func TestGetLoadedMissIsAFail(t *testing.T) {
	w := &Worker{ctx: context.Background(), d: newMem(), t: NewTracker()}
	if o := w.GetLoaded("read", "t", "never"); !strings.Contains(o.Fail, "never written") {
		t.Errorf("GetLoaded of a key never written: %+v", o)
	}
	if o := w.Get("get", "t", "never"); o.Fail != "" || o.Err != nil {
		t.Errorf("Get of a key never written: %+v", o)
	}
	w.Put("insert", "t", "k", 60)
	if o := w.GetLoaded("read", "t", "k"); o.Fail != "" || o.Err != nil {
		t.Errorf("GetLoaded of a written key: %+v", o)
	}
}
