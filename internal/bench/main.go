// Package bench implements `anykv bench`, the datastore evaluation
// harness: it deploys the datastores it compares (or uses given ones), runs
// the same workloads against each in turn through one driver interface, and
// prints one side-by-side comparison.
//
// Subpackages: hist (HDR histograms), gen (key choosers and self-checking
// values), driver (one small driver per protocol), deploy (local servers),
// workload (workloads, runner, correctness tracker) and report (text,
// JSON, CSV, HTML).
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
	"anykv/internal/bench/failover"
	"anykv/internal/bench/report"
	"anykv/internal/bench/workload"
)

// Exit codes of Main.
const (
	ExitOK          = 0
	ExitFailed      = 1 // a target failed to start or connect, data failed a check, or over 1% of a row's requests erred
	ExitUsage       = 2
	ExitInterrupted = 130
)

// Main runs `anykv bench` with its arguments (without the "bench" word) and
// returns the process exit code. Cancelling ctx (Ctrl-C) stops the run,
// tears down every deployed server and prints what was measured so far.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, done := parse(args, stderr, stdout)
	if done {
		return code
	}
	b := &bencher{o: o, stdout: stdout, stderr: stderr, runID: runID(),
		live: isTerminal(stdout)}
	return b.run(ctx, args)
}

type bencher struct {
	o      options
	stdout io.Writer
	stderr io.Writer
	runID  string
	live   bool

	mu        sync.Mutex
	notices   []string
	failed    bool
	failovers []*failover.Result // --kill runs, one per target
}

func (b *bencher) notice(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notices = append(b.notices, msg)
	if b.live {
		fmt.Fprint(b.stdout, "\r\033[K")
	}
	fmt.Fprintln(b.stderr, msg)
}

func (b *bencher) cfg() workload.Config {
	return workload.Config{Records: b.o.records, Operations: b.o.operations, Threads: b.o.threads, Seed: b.o.seed,
		ValueSize: b.o.valueSize, Duration: b.o.duration, Rate: b.o.rate, Timeout: b.o.timeout, RunID: b.runID}
}

func (b *bencher) maxThreads() int {
	m := 1
	ts := b.o.threads
	if len(ts) == 0 {
		for _, w := range b.o.workloads {
			ts = append(ts, w.DefaultThreads...)
		}
	}
	for _, t := range ts {
		m = max(m, t)
	}
	return m
}

func (b *bencher) run(ctx context.Context, args []string) int {
	rep := &report.Report{Command: "anykv bench " + quoteArgs(args), Started: time.Now(), Seed: b.o.seed,
		Mode: "closed loop", Baseline: b.o.baseline}
	if b.o.rate > 0 {
		rep.Mode = fmt.Sprintf("open loop at %g requests/s per phase, latency from intended send time", b.o.rate)
	}
	if b.o.duration > 0 {
		rep.Mode += fmt.Sprintf(", phases capped at %v", b.o.duration)
	}
	cfg := b.cfg()
	for _, w := range b.o.workloads {
		rep.Workloads = append(rep.Workloads, report.WorkloadInfo{Name: w.Name, Summary: w.Summary, Params: w.Params(cfg)})
	}
	if b.o.mix != nil {
		rep.Workloads = append(rep.Workloads, report.WorkloadInfo{Name: "mix", Summary: mixSummary, Params: b.mixParams()})
		rep.Mode = fmt.Sprintf("closed loop per connection, %v per run; latency from a pipeline's send to each reply", b.o.duration)
		if b.o.mix.runs > 1 {
			rep.Mode += fmt.Sprintf("; Req/Sec and percentiles are medians of %d alternating runs (Max, Mean, Millis, Err, Fail over all)", b.o.mix.runs)
		}
	}

	if b.o.kill != nil {
		rep.Workloads = append(rep.Workloads, report.WorkloadInfo{Name: "failover", Summary: failoverSummary, Params: b.killParams()})
		rep.Mode = fmt.Sprintf("closed loop, %v per target, killing nodes", b.o.duration)
	}
	if err := b.pin(); err != nil {
		fmt.Fprintf(b.stderr, "anykv bench: %v\n", err)
		return ExitFailed
	}
	var baseDir string
	if len(b.o.deploy) > 0 {
		var err error
		if baseDir, err = deploy.NewBaseDir(); err != nil {
			fmt.Fprintf(b.stderr, "anykv bench: %v\n", err)
			return ExitFailed
		}
		defer os.RemoveAll(baseDir)
	}
	var jobs []job
	for _, d := range b.o.deploy {
		jobs = append(jobs, job{name: d, deploy: true})
	}
	for _, t := range b.o.targets {
		jobs = append(jobs, job{name: t.name, url: t.url})
	}
	var interrupted bool
	if b.o.mix != nil {
		interrupted = b.runMix(ctx, rep, jobs, baseDir)
	} else {
		interrupted = b.runEach(ctx, rep, jobs, baseDir)
	}
	var errRows []string
	for _, r := range rep.Results {
		if r.Fails > 0 {
			b.failed = true
		}
		// A failover run provokes errors; its own columns account for them.
		if r.TooManyErrs() && b.o.kill == nil {
			errRows = append(errRows, fmt.Sprintf("%s %s/%s thr=%d: %d errors in %d requests (%.1f%%)",
				r.Target, r.Workload, r.Test(), r.Threads, r.Errs, r.Ops, 100*r.ErrRate()))
		}
	}
	if len(errRows) > 0 {
		b.failed = true
	}
	b.checkBaseline(rep)
	rep.Notices = b.notices
	rep.Failover = b.failovers
	if b.live {
		fmt.Fprint(b.stdout, "\r\033[K")
	}
	if interrupted {
		fmt.Fprintln(b.stderr, "anykv bench: interrupted; servers torn down; partial results follow")
	}
	if err := report.WriteText(b.stdout, rep); err != nil {
		fmt.Fprintf(b.stderr, "anykv bench: %v\n", err)
		b.failed = true
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, *report.Report) error
	}{{b.o.html, report.WriteHTML}, {b.o.json, report.WriteJSON}, {b.o.csv, report.WriteCSV}} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, rep, out.write); err != nil {
			fmt.Fprintf(b.stderr, "anykv bench: %v\n", err)
			b.failed = true
		}
	}
	if len(errRows) > 0 {
		fmt.Fprintf(b.stderr, "anykv bench: exit %d: more than %g%% of the requests of %d rows were errors:\n", ExitFailed,
			100*workload.MaxErrRate, len(errRows))
		for i, row := range errRows {
			if i == 5 {
				fmt.Fprintf(b.stderr, "  and %d more\n", len(errRows)-i)
				break
			}
			fmt.Fprintf(b.stderr, "  %s\n", row)
		}
	}
	switch {
	case interrupted:
		return ExitInterrupted
	case b.failed:
		return ExitFailed
	}
	return ExitOK
}

// checkBaseline falls back to the first target that ran when the --baseline
// target did not run (it failed to start, was not installed, or the run was
// interrupted first), saying so, rather than leaving every ratio blank.
func (b *bencher) checkBaseline(rep *report.Report) {
	if rep.Baseline == "" {
		return
	}
	why := "did not run"
	for _, t := range rep.Targets {
		if t.Name != rep.Baseline {
			continue
		}
		if t.Skipped == "" {
			return
		}
		why = t.Skipped
	}
	rep.Baseline = ""
	for _, t := range rep.Targets {
		if t.Skipped == "" {
			b.notice(fmt.Sprintf("--baseline %s: %s; ratios are to %s, the first target that ran", b.o.baseline, why, t.Name))
			return
		}
	}
}

// pin applies --client-cpus to the bench. Deployed servers would inherit
// it, so without --server-cpus they are pinned to the cores the bench had.
func (b *bencher) pin() error {
	if len(b.o.clientCPUs) == 0 {
		return nil
	}
	if len(b.o.serverCPUs) == 0 && len(b.o.deploy) > 0 {
		all, err := cpuset.Allowed(0)
		if err != nil {
			return err
		}
		b.o.serverCPUs = all
	}
	if err := cpuset.PinSelf(b.o.clientCPUs); err != nil {
		return fmt.Errorf("--client-cpus: %w", err)
	}
	return nil
}

// job is one target to run against: deployed by name or given by URL.
type job struct {
	name, url string
	deploy    bool
}

// runEach runs the workloads on one target after another, deploying each
// in turn. It reports whether ctx was cancelled.
func (b *bencher) runEach(ctx context.Context, rep *report.Report, jobs []job, baseDir string) bool {
	for _, j := range jobs {
		if ctx.Err() != nil {
			return true
		}
		t, res, err := b.runTarget(ctx, j.name, j.url, j.deploy, baseDir)
		rep.Targets = append(rep.Targets, t)
		rep.Results = append(rep.Results, res...)
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return true
		}
	}
	return false
}

// runTarget deploys (if asked), connects, runs every workload and tears
// down. The returned error is only ctx's.
func (b *bencher) runTarget(ctx context.Context, name, url string, dep bool, baseDir string) (report.Target, []*workload.Result, error) {
	t := report.Target{Name: name, URL: url, Deployed: dep}
	var nodes []deploy.Node
	if dep {
		srv, stop, err := b.deployTarget(ctx, &t, baseDir)
		if stop == nil {
			return t, nil, err
		}
		defer stop()
		if b.o.kill != nil {
			nodes = srv.Datastore
			if b.o.kill.front {
				nodes = srv.Fronts
			}
		}
	}
	d, err := driver.Open(ctx, t.URL, driver.Options{Conns: b.maxThreads() + 2, Timeout: b.o.timeout})
	if err != nil {
		if ctx.Err() != nil {
			t.Skipped = "interrupted while connecting"
			return t, nil, ctx.Err()
		}
		t.Skipped = "cannot connect: " + err.Error()
		b.notice(name + ": " + t.Skipped)
		b.failed = true
		return t, nil, nil
	}
	defer d.Close()
	t.Driver = d.Settings()
	if b.o.kill != nil {
		return t, b.runKill(ctx, &t, d, nodes), ctx.Err()
	}
	r := workload.NewRunner(name, d, b.cfg())
	r.Notice = b.notice
	stop := b.progress(r)
	defer stop()
	for _, w := range b.o.workloads {
		if err := r.Run(ctx, w); err != nil {
			return t, r.Results, err
		}
	}
	return t, r.Results, nil
}

// deployTarget starts the datastore t names and fills in its URL, version
// and settings. When it cannot start, stop is nil, t.Skipped says why and
// err is ctx's error if start-up was interrupted. stop tears it down.
func (b *bencher) deployTarget(ctx context.Context, t *report.Target, baseDir string) (srv *deploy.Server, stop func(), err error) {
	srv, err = deploy.Start(ctx, t.Name, deploy.Options{BaseDir: baseDir, AnykvBin: b.o.anykvBin, Log: b.stderr, CPUs: b.o.serverCPUs})
	var ni *deploy.NotInstalledError
	switch {
	case errors.As(err, &ni):
		t.Skipped = ni.Error()
		b.notice(t.Name + ": " + t.Skipped)
		return nil, nil, nil
	case err != nil:
		if ctx.Err() != nil {
			t.Skipped = "interrupted during start-up"
			return nil, nil, ctx.Err()
		}
		t.Skipped = "failed to start: " + err.Error()
		b.notice(t.Name + ": " + t.Skipped)
		b.failed = true
		return nil, nil, nil
	}
	t.URL, t.Version, t.Settings = srv.URL, srv.Version, srv.Settings
	return srv, func() {
		if err := srv.Stop(); err != nil {
			b.notice(fmt.Sprintf("%s: stop: %v", t.Name, err))
		} else {
			fmt.Fprintf(b.stderr, "deploy: %s stopped\n", t.Name)
		}
	}, nil
}

func writeFile(path string, rep *report.Report, write func(io.Writer, *report.Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func runID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("r%x", time.Now().UnixNano()&0xffffffff)
	}
	return "r" + hex.EncodeToString(b[:])
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
