package report

import (
	"fmt"
	"io"
	"strings"

	"anykv/internal/bench/workload"
)

// WriteText writes the human-readable report: run header, one table per
// target and workload, and the side-by-side comparison.
func WriteText(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", rep.Command)
	fmt.Fprintf(&b, "started %s, seed %d, %s; latencies in ms; * = phase cut short\n",
		rep.Started.UTC().Format("2006-01-02 15:04:05 UTC"), rep.Seed, rep.Mode)
	for _, wl := range rep.Workloads {
		fmt.Fprintf(&b, "workload %s: %s\n  %s\n", wl.Name, wl.Summary, strings.Join(wl.Params, " "))
	}
	for _, t := range rep.Targets {
		b.WriteString("\n")
		writeTargetHeader(&b, t)
		if t.Skipped != "" {
			continue
		}
		for _, wl := range rep.Workloads {
			res := rep.resultsFor(t.Name, wl.Name)
			if len(res) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n-- %s on %s\n", wl.Name, t.Name)
			b.WriteString(targetTable(res))
			for _, r := range res {
				for _, s := range r.Samples {
					fmt.Fprintf(&b, "   %s thr=%d: %s\n", r.Test(), r.Threads, s)
				}
			}
		}
	}
	if len(rep.Targets) > 1 {
		b.WriteString(sideBySide(rep))
	}
	b.WriteString(failoverText(rep))
	if len(rep.Notices) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range rep.Notices {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTargetHeader(b *strings.Builder, t Target) {
	how := "given target"
	if t.Deployed {
		how = "deployed"
	}
	fmt.Fprintf(b, "== %s  %s  (%s)\n", t.Name, t.ShownURL(), how)
	if t.Skipped != "" {
		fmt.Fprintf(b, "   %s\n", t.Skipped)
		return
	}
	if t.Version != "" {
		fmt.Fprintf(b, "   version: %s\n", t.Version)
	}
	for _, s := range t.Settings {
		fmt.Fprintf(b, "   setting: %s\n", s)
	}
	if t.Driver != "" {
		fmt.Fprintf(b, "   driver:  %s\n", t.Driver)
	}
}

func targetTable(res []*workload.Result) string {
	rows := [][]string{Columns}
	var skipped []string
	for i, r := range res {
		if i > 0 && r.Threads != res[i-1].Threads && len(rows) > 1 {
			rows = append(rows, nil) // blank line between thread counts
		}
		if r.Skipped != "" {
			skipped = append(skipped, fmt.Sprintf("%s thr=%d: %s", r.Test(), r.Threads, r.Skipped))
			continue
		}
		label := testLabel(r)
		if r.Op != "" {
			label = "  " + label
		}
		rows = append(rows, append([]string{label}, row(r)...))
	}
	out := padTable(rows, 1)
	for _, s := range skipped {
		out += "   " + s + "\n"
	}
	return out
}

// sideBySide renders throughput and p50, p99 and p99.9 latency per row and
// target, with ratios against the baseline target. A row with errors or
// failures is marked, and one with more than 1% errors gets no ratio.
func sideBySide(rep *Report) string {
	base := rep.baseline()
	var b strings.Builder
	var names []string
	skippedTarget := map[string]bool{}
	for _, t := range rep.Targets {
		names = append(names, t.Name)
		skippedTarget[t.Name] = t.Skipped != ""
	}
	for _, metric := range []struct {
		title string
		value func(*workload.Result) float64
		fmt   func(float64) string
	}{
		{"Req/Sec", (*workload.Result).ReqPerSec, fmtRate},
		{"50% latency, ms", latencyAt(50), fmtLatency},
		{"99% latency, ms", latencyAt(99), fmtLatency},
		{"99.9% latency, ms", latencyAt(99.9), fmtLatency},
	} {
		fmt.Fprintf(&b, "\n== side by side: %s (ratio to baseline %s)\n", metric.title, base)
		rows := [][]string{append([]string{"Workload", "Test", "Thr"}, names...)}
		for _, wl := range rep.Workloads {
			for _, k := range rep.rowKeys(wl.Name) {
				cells := []string{wl.Name, k.test, fmt.Sprint(k.threads)}
				baseRes := rep.lookup(base, wl.Name, k)
				for _, n := range names {
					r := rep.lookup(n, wl.Name, k)
					switch {
					case r == nil && skippedTarget[n]:
						cells = append(cells, "skipped")
					case r == nil:
						cells = append(cells, "-")
					case r.Skipped != "":
						cells = append(cells, "skipped")
					default:
						v := metric.value(r)
						cell := metric.fmt(v)
						if n != base && comparable(baseRes) && comparable(r) {
							if q := ratio(v, metric.value(baseRes)); q != "" {
								cell += " (" + q + ")"
							}
						}
						if r.Partial {
							cell += "*"
						}
						cells = append(cells, cell+errMarker(r))
					}
				}
				rows = append(rows, cells)
			}
		}
		b.WriteString(padTable(rows, 2))
	}
	return b.String()
}

func latencyAt(p float64) func(*workload.Result) float64 {
	return func(r *workload.Result) float64 { return ms(r.Quantile(p)) }
}

func fmtLatency(v float64) string { return fmt.Sprintf("%.3f", v) }
