package workload

import (
	"sync/atomic"

	"anykv/internal/bench/gen"
)

// loadCount counts a load phase's inserts, so that when --duration cuts the
// load short the phases after it address only the records it loaded.
type loadCount struct {
	phase    string       // the load phase's name, for the note
	answered *gen.Counter // insert ids answered, with or without an error
	noted    atomic.Bool  // the note was given (once, for all the phases after it)
}

func newLoadCount(phase string) *loadCount {
	return &loadCount{phase: phase, answered: gen.NewCounter(0)}
}

// count records that insert id was answered and returns its outcome. A
// failed insert counts too (its key is uncertain, and reads allow for that).
func (l *loadCount) count(id int64, o Outcome) Outcome {
	l.answered.Ack(id)
	return o
}

// loaded returns n such that records 0..n-1 were all answered, and notes
// when that is fewer than the want the load phase was asked for.
func (r *Runner) loaded(l *loadCount, threads int, want int64) int64 {
	n := l.answered.Last() + 1
	if n < want && !l.noted.Swap(true) {
		r.notice("%s %s/%s thr=%d: load cut short: records loaded %d of %d; the phases after it address only the %d loaded",
			r.Target, r.workload, l.phase, threads, n, want, n)
	}
	return n
}

// skip appends a result for a phase that does not run, with the reason.
func (r *Runner) skip(p Phase, reason string) {
	r.Results = append(r.Results, &Result{Target: r.Target, Workload: r.workload, Phase: p.Name, Threads: p.Threads,
		Rate: r.Cfg.Rate, Skipped: reason})
	r.notice("%s %s/%s thr=%d: %s", r.Target, r.workload, p.Name, p.Threads, reason)
}
