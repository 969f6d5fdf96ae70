package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/bench/loadgen"
	"anykv/internal/bench/report"
	"anykv/internal/bench/workload"
)

const mixSummary = "memtier-style GET:SET load over raw RESP or memcached text: --ratio, --pipeline, --connections, --keys, --key-dist, --runs"

// mixFlags are the --workload mix flags as given.
type mixFlags struct {
	ratios, pipelines, keyDist string
	conns, keys, runs          int
}

var mixFlagNames = []string{"ratio", "pipeline", "connections", "keys", "key-dist", "runs"}

func (m *mixFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.ratios, "ratio", "10:1", "mix: GET:SET ratios to run, comma-separated (`LIST`, e.g. 1:0,0:1,10:1)")
	fs.StringVar(&m.pipelines, "pipeline", "1", "mix: requests each connection sends before reading their replies, comma-separated (`LIST`, e.g. 1,16)")
	fs.IntVar(&m.conns, "connections", 50, "mix: connections, one goroutine each")
	fs.IntVar(&m.keys, "keys", 10000, "mix: key range; every key is written before the runs")
	fs.StringVar(&m.keyDist, "key-dist", "uniform", "mix: key distribution, uniform or zipfian (YCSB's scrambled zipfian)")
	fs.IntVar(&m.runs, "runs", 1, "mix: rounds over the targets, alternating; rows show medians over rounds")
}

// setIn names a mix-only flag that was given, or "".
func (m *mixFlags) setIn(fs *flag.FlagSet) string {
	set := ""
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(mixFlagNames, f.Name) && set == "" {
			set = f.Name
		}
	})
	return set
}

// mixRatio is one GET:SET ratio.
type mixRatio struct {
	name       string // as given, e.g. "10:1"
	gets, sets int
}

// mixOptions are the parsed --workload mix settings.
type mixOptions struct {
	ratios    []mixRatio
	pipelines []int
	conns     int
	keys      int
	keyDist   string
	runs      int
}

func (m *mixFlags) parse() (*mixOptions, error) {
	o := &mixOptions{conns: m.conns, keys: m.keys, keyDist: m.keyDist, runs: m.runs}
	for _, r := range strings.Split(m.ratios, ",") {
		r = strings.TrimSpace(r)
		g, s, ok := strings.Cut(r, ":")
		gets, err1 := strconv.Atoi(g)
		sets, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || gets < 0 || sets < 0 || gets+sets == 0 {
			return nil, fmt.Errorf("--ratio: %q is not GET:SET like 10:1, 1:0 or 0:1", r)
		}
		o.ratios = append(o.ratios, mixRatio{name: r, gets: gets, sets: sets})
	}
	for _, p := range strings.Split(m.pipelines, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("--pipeline: %q is not a pipeline depth (1..4096)", p)
		}
		o.pipelines = append(o.pipelines, n)
	}
	if o.conns < 1 || o.conns > 10000 || o.keys < 1 || o.runs < 1 {
		return nil, errors.New("--connections (up to 10000), --keys and --runs must be positive")
	}
	return o, nil
}

// mixDefaults fills --value-size and --duration when not given.
func (o *options) mixDefaults() {
	if o.valueSize == 0 {
		o.valueSize = 100
	}
	if o.duration == 0 {
		o.duration = 10 * time.Second
	}
}

func (b *bencher) mixParams() []string {
	m := b.o.mix
	var ratios, pipes []string
	for _, r := range m.ratios {
		ratios = append(ratios, r.name)
	}
	for _, p := range m.pipelines {
		pipes = append(pipes, strconv.Itoa(p))
	}
	params := []string{"ratio(GET:SET)=" + strings.Join(ratios, ","), "pipeline=" + strings.Join(pipes, ","),
		fmt.Sprintf("connections=%d", m.conns), fmt.Sprintf("keys=%d(%s)", m.keys, m.keyDist),
		fmt.Sprintf("value-size=%d", b.o.valueSize), fmt.Sprintf("duration=%v", b.o.duration), fmt.Sprintf("runs=%d", m.runs)}
	if len(b.o.serverCPUs) > 0 {
		params = append(params, "server-cpus="+cpuset.String(b.o.serverCPUs))
	}
	if len(b.o.clientCPUs) > 0 {
		params = append(params, "client-cpus="+cpuset.String(b.o.clientCPUs))
	}
	return params
}

// mixTarget is one target of a mix run.
type mixTarget struct {
	t     *report.Target
	addr  string
	proto loadgen.Proto
	stop  func()
}

// runMix runs --workload mix: it starts (or connects to) every target
// first, writes every key once on each (phase "load"), then runs rounds,
// each running every ratio and pipeline depth on every target in turn, so
// the targets alternate under the same machine conditions. Rows merge the
// rounds (medians). It reports whether ctx was cancelled.
func (b *bencher) runMix(ctx context.Context, rep *report.Report, jobs []job, baseDir string) bool {
	m := b.o.mix
	var targets []*mixTarget
	defer func() {
		for _, mt := range targets {
			rep.Targets = append(rep.Targets, *mt.t)
			if mt.stop != nil {
				mt.stop()
			}
		}
	}()
	for _, j := range jobs {
		if ctx.Err() != nil {
			return true
		}
		targets = append(targets, b.startMix(ctx, j, baseDir))
	}
	prefix := "mix_" + b.runID + ":"
	base := loadgen.Config{Conns: m.conns, Keys: m.keys, KeyDist: m.keyDist, Prefix: prefix, ValueSize: b.o.valueSize,
		Duration: b.o.duration, Timeout: b.o.timeout, Seed: b.o.seed}
	var ready []*mixTarget
	for _, mt := range targets {
		if mt.t.Skipped != "" {
			continue
		}
		cfg := base
		cfg.Addr, cfg.Proto, cfg.Load, cfg.Pipeline, cfg.Sets = mt.addr, mt.proto, true, slices.Max(m.pipelines), 1
		st, err := loadgen.Run(ctx, cfg)
		if ctx.Err() != nil {
			return true
		}
		if err != nil {
			mt.t.Skipped = "cannot load the keys: " + err.Error()
			b.notice(mt.t.Name + ": " + mt.t.Skipped)
			b.failed = true
			continue
		}
		rep.Results = append(rep.Results, st.Results(mt.t.Name, "mix", "load", m.conns)...)
		ready = append(ready, mt)
	}
	runs := map[string][][]*workload.Result{} // target/phase -> rows per round
	var order []string
	for round := 1; round <= m.runs; round++ {
		for _, r := range m.ratios {
			for _, p := range m.pipelines {
				phase := fmt.Sprintf("%s/p%d", r.name, p)
				for _, mt := range ready {
					cfg := base
					cfg.Addr, cfg.Proto, cfg.Pipeline, cfg.Gets, cfg.Sets = mt.addr, mt.proto, p, r.gets, r.sets
					cfg.Seed = base.Seed + uint64(round)
					st, err := loadgen.Run(ctx, cfg)
					if ctx.Err() != nil {
						return true
					}
					if err != nil {
						b.notice(fmt.Sprintf("%s mix/%s round %d: %v", mt.t.Name, phase, round, err))
						b.failed = true
						continue
					}
					rows := st.Results(mt.t.Name, "mix", phase, m.conns)
					fmt.Fprintf(b.stderr, "mix: round %d/%d %s %s: %.0f req/s, p99 %v, %d errs, %d fails\n",
						round, m.runs, mt.t.Name, phase, rows[0].ReqPerSec(), rows[0].Hist.Quantile(99), rows[0].Errs, rows[0].Fails)
					key := mt.t.Name + "\x00" + phase
					if _, seen := runs[key]; !seen {
						order = append(order, key)
					}
					runs[key] = append(runs[key], rows)
				}
			}
		}
	}
	for _, key := range order {
		rounds := runs[key]
		for i := range rounds[0] {
			var same []*workload.Result
			for _, rows := range rounds {
				if i < len(rows) {
					same = append(same, rows[i])
				}
			}
			rep.Results = append(rep.Results, workload.MergeRuns(same))
		}
	}
	return false
}

// startMix deploys (or parses) one target of a mix run. A target that
// cannot run comes back with Skipped set.
func (b *bencher) startMix(ctx context.Context, j job, baseDir string) *mixTarget {
	mt := &mixTarget{t: &report.Target{Name: j.name, URL: j.url, Deployed: j.deploy}}
	t := mt.t
	if j.deploy {
		if _, mt.stop, _ = b.deployTarget(ctx, t, baseDir); mt.stop == nil {
			return mt
		}
	}
	u, err := url.Parse(t.URL)
	switch {
	case err != nil:
		t.Skipped = "bad URL: " + err.Error()
	case u.Scheme == "resp" || u.Scheme == "redis":
		mt.proto = loadgen.RESP
	case u.Scheme == "memcache" || u.Scheme == "memcached":
		mt.proto = loadgen.Memcache
	default:
		t.Skipped = "mix speaks RESP and memcached text only, not " + u.Scheme
	}
	if t.Skipped != "" {
		b.notice(j.name + ": " + t.Skipped)
		return mt
	}
	mt.addr = u.Host
	t.Driver = fmt.Sprintf("load generator: raw %s, %d connections, pre-encoded pipelined requests, every reply checked", mt.proto, b.o.mix.conns)
	return mt
}
