// Package report renders bench results: per-target tables, a side-by-side
// comparison against a baseline, JSON, CSV and a self-contained HTML page
// with inline SVG plots.
package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"anykv/internal/bench/failover"
	"anykv/internal/bench/workload"
	"anykv/internal/engine/remote/redact"
)

// Target describes one datastore compared.
type Target struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Deployed bool     `json:"deployed"`
	Version  string   `json:"version,omitempty"`
	Settings []string `json:"settings,omitempty"` // durability and deployment settings
	Driver   string   `json:"driver,omitempty"`   // driver settings
	Skipped  string   `json:"skipped,omitempty"`  // the whole target did not run
}

// ShownURL is the target's URL as reports print it: a password it holds (a deployed PostgreSQL's or MariaDB's)
// replaced by "xxxxx", since reports are shared and kept.
func (t Target) ShownURL() string { return redact.URL(t.URL) }

// WorkloadInfo names a workload and its effective parameters.
type WorkloadInfo struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Params  []string `json:"params"`
}

// Report is everything one bench run produced.
type Report struct {
	Command   string
	Started   time.Time
	Seed      uint64
	Mode      string // "closed loop" or "open loop at R ops/s"
	Baseline  string
	Workloads []WorkloadInfo
	Targets   []Target
	Results   []*workload.Result
	Failover  []*failover.Result // --kill runs
	Notices   []string
}

// Columns of the per-target tables.
var Columns = []string{"Test", "Req/Sec", "Millis", "50%", "90%", "99%", "99.5%", "99.9%", "Max", "Mean", "Err", "Fail", "Thr"}

// Percentiles reported, matching Columns (merged runs keep medians of each).
var Percentiles = workload.MedianPercentiles

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.3f", ms(d)) }

func fmtRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// row returns the table cells for a result (without the Test cell).
func row(r *workload.Result) []string {
	cells := []string{fmtRate(r.ReqPerSec()), fmt.Sprint(r.Elapsed.Milliseconds())}
	for _, p := range Percentiles {
		cells = append(cells, fmtMs(r.Quantile(p)))
	}
	return append(cells, fmtMs(r.Hist.Max()), fmtMs(r.Hist.Mean()), fmt.Sprint(r.Errs), fmt.Sprint(r.Fails), fmt.Sprint(r.Threads))
}

// testLabel is a result's row label, marked when the phase was cut short.
func testLabel(r *workload.Result) string {
	if r.Partial {
		return r.Test() + "*"
	}
	return r.Test()
}

// resultsFor returns target's results for workload, in run order.
func (rep *Report) resultsFor(target, wl string) []*workload.Result {
	var out []*workload.Result
	for _, r := range rep.Results {
		if r.Target == target && r.Workload == wl {
			out = append(out, r)
		}
	}
	return out
}

// rowKey identifies a comparable row across targets.
type rowKey struct {
	test    string
	threads int
	total   bool // a phase total, not a per-operation row
}

// rowKeys lists the distinct (test, threads) rows of a workload over all
// targets, in first-seen order.
func (rep *Report) rowKeys(wl string) []rowKey {
	var keys []rowKey
	seen := map[rowKey]bool{}
	for _, r := range rep.Results {
		if r.Workload != wl {
			continue
		}
		k := rowKey{r.Test(), r.Threads, r.Op == ""}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func (rep *Report) lookup(target, wl string, k rowKey) *workload.Result {
	for _, r := range rep.Results {
		if r.Target == target && r.Workload == wl && r.Test() == k.test && r.Threads == k.threads {
			return r
		}
	}
	return nil
}

// baseline is the baseline target's name (default: the first that ran).
func (rep *Report) baseline() string {
	if rep.Baseline != "" {
		return rep.Baseline
	}
	for _, t := range rep.Targets {
		if t.Skipped == "" {
			return t.Name
		}
	}
	if len(rep.Targets) > 0 {
		return rep.Targets[0].Name
	}
	return ""
}

// comparable reports whether a row's figures may be set against another's:
// it ran and at most MaxErrRate of its requests were errors.
func comparable(r *workload.Result) bool {
	return r != nil && r.Skipped == "" && !r.TooManyErrs()
}

// errMarker flags a side-by-side cell whose row had errors or failures, e.g.
// " [12% err]" or " [0.05% err, 3 fail]"; "" for a clean row.
func errMarker(r *workload.Result) string {
	var m []string
	if r.Errs > 0 {
		pct := 100 * r.ErrRate()
		var p string
		switch {
		case pct >= 10:
			p = fmt.Sprintf("%.0f", pct)
		case pct >= 1:
			p = fmt.Sprintf("%.1f", pct)
		default:
			p = fmt.Sprintf("%.2g", pct)
		}
		m = append(m, p+"% err")
	}
	if r.Fails > 0 {
		m = append(m, fmt.Sprintf("%d fail", r.Fails))
	}
	if len(m) == 0 {
		return ""
	}
	return " [" + strings.Join(m, ", ") + "]"
}

// ratio formats v/base as "1.23x", or "" when undefined.
func ratio(v, base float64) string {
	if base <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	if q := v / base; q < 0.01 && q > 0 {
		return fmt.Sprintf("%.2gx", q)
	}
	return fmt.Sprintf("%.2fx", v/base)
}

// padTable renders rows with columns right-aligned except the first
// leftCols, separated by two spaces.
func padTable(rows [][]string, leftCols int) string {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			if i < leftCols {
				if i == len(r)-1 {
					b.WriteString(c)
				} else {
					b.WriteString(c + strings.Repeat(" ", width[i]-len(c)))
				}
			} else {
				b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
