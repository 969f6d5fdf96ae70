package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"anykv/internal/bench/failover"
	"anykv/internal/bench/workload"
)

// jsonResult is the machine-readable form of one result row.
type jsonResult struct {
	Target      string             `json:"target"`
	Workload    string             `json:"workload"`
	Test        string             `json:"test"`
	Phase       string             `json:"phase"`
	Op          string             `json:"op,omitempty"`
	Threads     int                `json:"threads"`
	Rate        float64            `json:"rate,omitempty"`
	Ops         int64              `json:"ops"`
	Errs        int64              `json:"err"`
	Fails       int64              `json:"fail"`
	ReqPerSec   float64            `json:"req_per_sec"`
	Millis      int64              `json:"millis"`
	Runs        int                `json:"runs,omitempty"` // > 1: req_per_sec and percentiles are medians over runs
	LatencyMs   map[string]float64 `json:"latency_ms,omitempty"`
	Skipped     string             `json:"skipped,omitempty"`
	Partial     bool               `json:"partial,omitempty"`
	Samples     []string           `json:"samples,omitempty"`
	SeriesMs    int64              `json:"series_interval_ms,omitempty"`
	SeriesStart string             `json:"series_start,omitempty"`
	Series      []int64            `json:"series,omitempty"`
}

type jsonReport struct {
	Command   string             `json:"command"`
	Started   string             `json:"started"`
	Seed      uint64             `json:"seed"`
	Mode      string             `json:"mode"`
	Baseline  string             `json:"baseline"`
	Workloads []WorkloadInfo     `json:"workloads"`
	Targets   []Target           `json:"targets"`
	Results   []jsonResult       `json:"results"`
	Failover  []*failover.Result `json:"failover,omitempty"`
	Notices   []string           `json:"notices,omitempty"`
}

func latencies(r *workload.Result) map[string]float64 {
	m := map[string]float64{}
	for _, p := range Percentiles {
		m[fmt.Sprintf("p%g", p)] = ms(r.Quantile(p))
	}
	m["max"] = ms(r.Hist.Max())
	m["mean"] = ms(r.Hist.Mean())
	m["min"] = ms(r.Hist.Min())
	return m
}

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, rep *Report) error {
	out := jsonReport{Command: rep.Command, Started: rep.Started.UTC().Format(time.RFC3339), Seed: rep.Seed,
		Mode: rep.Mode, Baseline: rep.baseline(), Workloads: rep.Workloads, Targets: rep.Targets, Failover: rep.Failover, Notices: rep.Notices}
	if rep.Targets != nil { // a copy, passwords hidden
		out.Targets = make([]Target, len(rep.Targets))
		for i, t := range rep.Targets {
			t.URL = t.ShownURL()
			out.Targets[i] = t
		}
	}
	for _, r := range rep.Results {
		j := jsonResult{Target: r.Target, Workload: r.Workload, Test: r.Test(), Phase: r.Phase, Op: r.Op,
			Threads: r.Threads, Rate: r.Rate, Ops: r.Ops, Errs: r.Errs, Fails: r.Fails, Skipped: r.Skipped,
			Partial: r.Partial, Samples: r.Samples}
		if r.Skipped == "" {
			j.ReqPerSec = r.ReqPerSec()
			j.Millis = r.Elapsed.Milliseconds()
			j.LatencyMs = latencies(r)
			if r.Median != nil {
				j.Runs = r.Median.Runs
			}
		}
		if r.Series != nil {
			j.SeriesMs = r.Series.Interval.Milliseconds()
			j.SeriesStart = r.Series.Start.UTC().Format(time.RFC3339Nano)
			j.Series = r.Series.Counts
		}
		out.Results = append(out.Results, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// CSVHeader is the first line of WriteCSV's output.
var CSVHeader = []string{"target", "workload", "test", "threads", "req_per_sec", "millis",
	"p50_ms", "p90_ms", "p99_ms", "p99.5_ms", "p99.9_ms", "max_ms", "mean_ms", "err", "fail", "ops", "partial", "skipped"}

// WriteCSV writes one line per result row.
func WriteCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, r := range rep.Results {
		rec := []string{r.Target, r.Workload, r.Test(), fmt.Sprint(r.Threads)}
		if r.Skipped != "" {
			rec = append(rec, "", "", "", "", "", "", "", "", "", "", "", "0", "false", r.Skipped)
		} else {
			rec = append(rec, fmt.Sprintf("%.2f", r.ReqPerSec()), fmt.Sprint(r.Elapsed.Milliseconds()))
			for _, p := range Percentiles {
				rec = append(rec, fmtMs(r.Quantile(p)))
			}
			rec = append(rec, fmtMs(r.Hist.Max()), fmtMs(r.Hist.Mean()), fmt.Sprint(r.Errs), fmt.Sprint(r.Fails),
				fmt.Sprint(r.Ops), fmt.Sprint(r.Partial), "")
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}
