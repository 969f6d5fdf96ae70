package workload

import (
	"time"

	"anykv/internal/bench/hist"
)

// Result is the measurement of one phase (or one operation kind within a
// phase) of one workload against one target.
type Result struct {
	Target   string
	Workload string
	Phase    string // e.g. "run", "put", "get95"
	Op       string // operation kind for a per-kind row; "" for the phase total
	Threads  int
	Rate     float64 // open-loop target rate (ops/s); 0 for closed loop
	Ops      int64   // requests completed, whatever their outcome (Errs included)
	Errs     int64   // errors and timeouts (not in the histogram)
	Fails    int64   // wrong, stale, lost or phantom data
	Elapsed  time.Duration
	Hist     *hist.H      // latencies of requests that got an answer
	Series   *hist.Series // completions over time (phase totals only)
	Skipped  string       // why the phase did not run, if it did not
	Partial  bool         // stopped early by --duration or interruption
	Samples  []string     // a few failure and error descriptions
	Median   *Median      // medians over repeated runs (MergeRuns); nil for one run
}

// Test is the row label: "phase" or "phase:op".
func (r *Result) Test() string {
	if r.Op == "" {
		return r.Phase
	}
	return r.Phase + ":" + r.Op
}

// ReqPerSec is requests answered without error (Fails included) per second
// of phase time, or the median over runs for a merged row. Errors do not
// count: a target failing every request fast must not look fastest.
func (r *Result) ReqPerSec() float64 {
	if r.Median != nil {
		return r.Median.ReqPerSec
	}
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops-r.Errs) / r.Elapsed.Seconds()
}

// MaxErrRate is the share of a row's requests that may be errors before its
// figures are not compared with other targets' and the run exits 1.
const MaxErrRate = 0.01

// ErrRate is the share of the row's requests that were errors.
func (r *Result) ErrRate() float64 {
	if r.Ops <= 0 {
		return 0
	}
	return float64(r.Errs) / float64(r.Ops)
}

// TooManyErrs reports whether more than MaxErrRate of the row's requests
// were errors.
func (r *Result) TooManyErrs() bool { return r.ErrRate() > MaxErrRate }
