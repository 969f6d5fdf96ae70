package workload

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/bench/driver"
	"anykv/internal/bench/hist"
)

// Config holds the parameters shared by all workloads.
type Config struct {
	Records    int64         // records loaded (YCSB recordcount, N elsewhere)
	Operations int64         // operations per run phase (YCSB operationcount)
	Threads    []int         // thread counts to run at; nil: workload default
	Seed       uint64        // seeds every random choice
	ValueSize  int           // bytes per value; 0: workload default
	Duration   time.Duration // cap per phase; 0: none
	Rate       float64       // open-loop ops/s per phase; 0: closed loop
	Timeout    time.Duration // per operation
	RunID      string        // makes table names unique per run
}

// Phase is one measured step: Ops operations spread over Threads workers.
type Phase struct {
	Name    string
	Threads int
	Ops     int64
	Needs   driver.Caps
	// Init prepares a worker (e.g. sets Worker.State to its key choosers).
	Init func(w *Worker)
	// Op performs operation number i (0 <= i < Ops).
	Op func(w *Worker, i int64) Outcome
	// Bound, when set, is the count of an earlier phase whose records this one addresses by number (0..Ops-1):
	// Ops is cut to the records that phase had answered, so that a write phase cut short by --duration does
	// not leave this one reading keys never written (their misses are no failures of the store).
	Bound *loadCount
}

// Runner runs workloads against one target and collects results.
type Runner struct {
	Target   string
	D        driver.Driver
	Cfg      Config
	Notice   func(msg string) // skipped phases and similar notes (may be nil)
	Results  []*Result
	tracker  *Tracker
	workload string
	phaseNo  int
	live     atomic.Pointer[live]
}

// NewRunner returns a runner for target using driver d.
func NewRunner(target string, d driver.Driver, cfg Config) *Runner {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.RunID == "" {
		cfg.RunID = "r0"
	}
	return &Runner{Target: target, D: d, Cfg: cfg, tracker: NewTracker()}
}

// Table names a table unique to this run, workload round and thread count.
func (r *Runner) Table(base string, threads int) string {
	return fmt.Sprintf("%s_%s_t%d", base, r.Cfg.RunID, threads)
}

// ValueSize is --value-size when set, else def.
func (r *Runner) ValueSize(def int) int {
	if r.Cfg.ValueSize > 0 {
		return r.Cfg.ValueSize
	}
	return def
}

// Run runs workload w at each configured thread count.
func (r *Runner) Run(ctx context.Context, w *Workload) error {
	r.workload = w.Name
	threads := r.Cfg.Threads
	if len(threads) == 0 {
		threads = w.DefaultThreads
	}
	for _, t := range threads {
		if err := w.Run(ctx, r, t); err != nil {
			return err
		}
	}
	return nil
}

// wstats is one worker's measurements. The mutex is uncontended except when
// the progress line takes a peek.
type wstats struct {
	mu      sync.Mutex
	total   *hist.H
	kinds   map[string]*kstats
	series  *hist.Series
	samples []string
}

type kstats struct {
	h                *hist.H
	ops, errs, fails int64
}

type live struct {
	workload string
	phase    string
	threads  int
	total    int64
	start    time.Time
	done     atomic.Int64
	stats    []*wstats
}

// Live describes the phase in progress, for a progress line.
type Live struct {
	Workload, Phase string
	Threads         int
	Done, Total     int64
	Elapsed         time.Duration
	P99             time.Duration
	Cap             time.Duration // --duration, 0 if none
	Rate            float64
}

// Live returns the phase in progress, if any.
func (r *Runner) Live() (Live, bool) {
	l := r.live.Load()
	if l == nil {
		return Live{}, false
	}
	h := hist.New()
	for _, s := range l.stats {
		s.mu.Lock()
		h.Merge(s.total)
		s.mu.Unlock()
	}
	return Live{Workload: l.workload, Phase: l.phase, Threads: l.threads, Done: l.done.Load(), Total: l.total,
		Elapsed: time.Since(l.start), P99: h.Quantile(99), Cap: r.Cfg.Duration, Rate: r.Cfg.Rate}, true
}

func (r *Runner) notice(format string, args ...any) {
	if r.Notice != nil {
		r.Notice(fmt.Sprintf(format, args...))
	}
}

// Phase runs one phase and appends its results. It returns an error only
// when ctx is cancelled.
func (r *Runner) Phase(ctx context.Context, p Phase) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.phaseNo++
	base := Result{Target: r.Target, Workload: r.workload, Phase: p.Name, Threads: p.Threads, Rate: r.Cfg.Rate}
	if missing := r.D.Caps().Missing(p.Needs); len(missing) > 0 {
		res := base
		res.Skipped = fmt.Sprintf("%s: %s not supported, phase skipped", r.D.Kind(), strings.Join(missing, " and "))
		r.notice("%s %s/%s thr=%d: %s", r.Target, r.workload, p.Name, p.Threads, res.Skipped)
		r.Results = append(r.Results, &res)
		return nil
	}
	if p.Threads < 1 {
		p.Threads = 1
	}
	if p.Bound != nil {
		if p.Ops = min(p.Ops, r.loaded(p.Bound, p.Threads, p.Ops)); p.Ops == 0 {
			r.skip(p, "no record was written by the phase it reads, phase skipped")
			return nil
		}
	}
	seedBase := phaseSeed(r.workload, p.Name, p.Threads, r.phaseNo)
	workers := make([]*Worker, p.Threads)
	for id := range workers {
		w := &Worker{ID: id, R: rand.New(rand.NewPCG(r.Cfg.Seed, seedBase+uint64(id))), d: r.D, t: r.tracker}
		if p.Init != nil {
			p.Init(w) // before the clock starts: choosers may precompute
		}
		workers[id] = w
	}
	start := time.Now()
	l := &live{workload: r.workload, phase: p.Name, threads: p.Threads, total: p.Ops, start: start}
	stats := make([]*wstats, p.Threads)
	for i := range stats {
		stats[i] = &wstats{total: hist.New(), kinds: map[string]*kstats{}, series: hist.NewSeries(start, 100*time.Millisecond)}
	}
	l.stats = stats
	r.live.Store(l)
	defer r.live.Store(nil)

	var next atomic.Int64
	var stopped atomic.Bool // --duration cap hit
	var deadline time.Time
	if r.Cfg.Duration > 0 {
		deadline = start.Add(r.Cfg.Duration)
	}
	var wg sync.WaitGroup
	for id := 0; id < p.Threads; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			st, w := stats[id], workers[id]
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= p.Ops {
					return
				}
				began := time.Now()
				if r.Cfg.Rate > 0 {
					// Open loop: latency counts from the intended send time,
					// so a slow server cannot hide queueing (no coordinated
					// omission), and every request due before the deadline is
					// sent, however late, so a stall at the end shows too.
					began = start.Add(time.Duration(float64(i) / r.Cfg.Rate * float64(time.Second)))
					if !deadline.IsZero() && !began.Before(deadline) {
						stopped.Store(true)
						return
					}
					if time.Now().Before(began) {
						// Free before the request is due: it is timed from when it
						// is sent, so the timer's oversleep (about 0.5 ms here) is
						// not charged to the store; a worker still busy at the due
						// time times it from then, as that wait is the store's.
						if !sleepUntil(ctx, began) {
							return
						}
						began = time.Now()
					}
				} else if !deadline.IsZero() && began.After(deadline) {
					stopped.Store(true)
					return
				}
				octx, cancel := context.WithTimeout(ctx, r.Cfg.Timeout)
				w.ctx = octx
				o := p.Op(w, i)
				cancel()
				end := time.Now()
				if o.Err != nil && ctx.Err() != nil && errors.Is(o.Err, context.Canceled) {
					return // interrupted, not a datastore error
				}
				st.record(o, end.Sub(began), end)
				l.done.Add(1)
			}
		}(id)
	}
	wg.Wait()
	elapsed := time.Since(start)
	partial := stopped.Load() || ctx.Err() != nil
	r.collect(base, stats, elapsed, partial)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

func (s *wstats) record(o Outcome, lat time.Duration, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kinds[o.Kind]
	if k == nil {
		k = &kstats{h: hist.New()}
		s.kinds[o.Kind] = k
	}
	k.ops++
	s.series.Add(end)
	switch {
	case o.Err != nil:
		k.errs++
		if len(s.samples) < 5 {
			s.samples = append(s.samples, "error: "+o.Err.Error())
		}
		return
	case o.Fail != "":
		k.fails++
		if len(s.samples) < 5 {
			s.samples = append(s.samples, "fail: "+o.Fail)
		}
	}
	k.h.Record(lat)
	s.total.Record(lat)
}

// collect merges worker stats into a phase total row plus one row per
// operation kind when the phase mixes kinds.
func (r *Runner) collect(base Result, stats []*wstats, elapsed time.Duration, partial bool) {
	total := base
	total.Elapsed, total.Partial = elapsed, partial
	total.Hist = hist.New()
	total.Series = hist.NewSeries(stats[0].series.Start, stats[0].series.Interval)
	kinds := map[string]*Result{}
	for _, s := range stats {
		total.Hist.Merge(s.total)
		total.Series.Merge(s.series)
		for name, k := range s.kinds {
			kr := kinds[name]
			if kr == nil {
				c := base
				kr = &c
				kr.Op, kr.Elapsed, kr.Partial, kr.Hist = name, elapsed, partial, hist.New()
				kinds[name] = kr
			}
			kr.Ops += k.ops
			kr.Errs += k.errs
			kr.Fails += k.fails
			kr.Hist.Merge(k.h)
			total.Ops += k.ops
			total.Errs += k.errs
			total.Fails += k.fails
		}
		for _, smp := range s.samples {
			if len(total.Samples) < 5 {
				total.Samples = append(total.Samples, smp)
			}
		}
	}
	r.Results = append(r.Results, &total)
	if len(kinds) > 1 {
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			r.Results = append(r.Results, kinds[n])
		}
	}
	if total.Fails > 0 || total.Errs > 0 {
		r.notice("%s %s/%s thr=%d: %d errors, %d fails; first: %s", r.Target, r.workload, base.Phase,
			base.Threads, total.Errs, total.Fails, strings.Join(total.Samples[:min(1, len(total.Samples))], ""))
	}
}

// sleepUntil waits until t; false if ctx was cancelled first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func phaseSeed(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	return h.Sum64()
}
