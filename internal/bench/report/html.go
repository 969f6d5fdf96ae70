package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"anykv/internal/bench/workload"
)

const css = `body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td.l{text-align:left}tr.op td:first-child{padding-left:20px;color:#555}
.skip{color:#a60}.fail{color:#c00;font-weight:bold}code{background:#f4f4f4;padding:1px 4px}
h2{border-bottom:2px solid #ccc;padding-bottom:4px}svg{margin:4px 0 12px;display:block}`

// WriteHTML writes one self-contained page: tables plus, per target, a
// throughput-over-time plot and a latency CDF plot, as inline SVG. It loads
// nothing from outside (no scripts, fonts or stylesheets).
func WriteHTML(w io.Writer, rep *Report) error {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>anykv bench</title><style>" + css + "</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>anykv bench</h1>\n<p><code>%s</code><br>started %s, seed %d, %s; latencies in ms; * = phase cut short</p>\n",
		e(rep.Command), rep.Started.UTC().Format("2006-01-02 15:04:05 UTC"), rep.Seed, e(rep.Mode))
	b.WriteString("<h2>Workloads</h2>\n<ul>\n")
	for _, wl := range rep.Workloads {
		fmt.Fprintf(&b, "<li><b>%s</b>: %s<br><small>%s</small></li>\n", e(wl.Name), e(wl.Summary), e(strings.Join(wl.Params, " ")))
	}
	b.WriteString("</ul>\n")
	if len(rep.Targets) > 1 {
		fmt.Fprintf(&b, "<h2>Side by side (ratio to baseline %s)</h2>\n", e(rep.baseline()))
		htmlSideBySide(&b, rep)
		for _, wl := range rep.Workloads {
			b.WriteString(comparisonChart(rep, wl.Name))
		}
	}
	failoverHTML(&b, rep)
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, "<h2>%s</h2>\n<p><code>%s</code>", e(t.Name), e(t.ShownURL()))
		if t.Deployed {
			b.WriteString(" (deployed)")
		}
		b.WriteString("</p>\n")
		if t.Skipped != "" {
			fmt.Fprintf(&b, "<p class=\"skip\">%s</p>\n", e(t.Skipped))
			continue
		}
		b.WriteString("<ul>\n")
		if t.Version != "" {
			fmt.Fprintf(&b, "<li>version: %s</li>\n", e(t.Version))
		}
		for _, s := range t.Settings {
			fmt.Fprintf(&b, "<li>%s</li>\n", e(s))
		}
		if t.Driver != "" {
			fmt.Fprintf(&b, "<li>driver: %s</li>\n", e(t.Driver))
		}
		b.WriteString("</ul>\n")
		var all []*workload.Result
		for _, wl := range rep.Workloads {
			res := rep.resultsFor(t.Name, wl.Name)
			if len(res) == 0 {
				continue
			}
			all = append(all, res...)
			fmt.Fprintf(&b, "<h3>%s</h3>\n", e(wl.Name))
			htmlTargetTable(&b, res)
		}
		b.WriteString(throughputChart(t.Name, all))
		b.WriteString(cdfChart(t.Name, all))
	}
	if len(rep.Notices) > 0 {
		b.WriteString("<h2>Notes</h2>\n<ul>\n")
		for _, n := range rep.Notices {
			fmt.Fprintf(&b, "<li>%s</li>\n", e(n))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func htmlTargetTable(b *strings.Builder, res []*workload.Result) {
	e := html.EscapeString
	b.WriteString("<table><tr>")
	for _, c := range Columns {
		fmt.Fprintf(b, "<th>%s</th>", e(c))
	}
	b.WriteString("</tr>\n")
	for _, r := range res {
		cls := ""
		if r.Op != "" {
			cls = ` class="op"`
		}
		fmt.Fprintf(b, "<tr%s><td>%s</td>", cls, e(testLabel(r)))
		if r.Skipped != "" {
			fmt.Fprintf(b, "<td class=\"l skip\" colspan=\"%d\">%s</td></tr>\n", len(Columns)-1, e(r.Skipped))
			continue
		}
		cells := row(r)
		for i, c := range cells {
			if i == len(cells)-2 && r.Fails > 0 {
				fmt.Fprintf(b, "<td class=\"fail\">%s</td>", c)
				continue
			}
			fmt.Fprintf(b, "<td>%s</td>", c)
		}
		b.WriteString("</tr>\n")
		for _, s := range r.Samples {
			fmt.Fprintf(b, "<tr><td class=\"l\" colspan=\"%d\"><small>%s</small></td></tr>\n", len(Columns), e(s))
		}
	}
	b.WriteString("</table>\n")
}

func htmlSideBySide(b *strings.Builder, rep *Report) {
	e := html.EscapeString
	base := rep.baseline()
	b.WriteString("<table><tr><th>Workload</th><th>Test</th><th>Thr</th>")
	for _, t := range rep.Targets {
		fmt.Fprintf(b, "<th>%s Req/Sec</th><th>%s p99 ms</th>", e(t.Name), e(t.Name))
	}
	b.WriteString("</tr>\n")
	for _, wl := range rep.Workloads {
		for _, k := range rep.rowKeys(wl.Name) {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"l\">%s</td><td>%d</td>", e(wl.Name), e(k.test), k.threads)
			br := rep.lookup(base, wl.Name, k)
			for _, t := range rep.Targets {
				r := rep.lookup(t.Name, wl.Name, k)
				switch {
				case r == nil:
					b.WriteString("<td>-</td><td>-</td>")
				case r.Skipped != "":
					fmt.Fprintf(b, "<td class=\"skip\" colspan=\"2\" title=\"%s\">skipped</td>", e(r.Skipped))
				default:
					rps, p99 := r.ReqPerSec(), ms(r.Quantile(99))
					c1, c2 := fmtRate(rps), fmt.Sprintf("%.3f", p99)
					if t.Name != base && comparable(br) && comparable(r) {
						if q := ratio(rps, br.ReqPerSec()); q != "" {
							c1 += " (" + q + ")"
						}
						if q := ratio(p99, ms(br.Quantile(99))); q != "" {
							c2 += " (" + q + ")"
						}
					}
					cls := ""
					if m := errMarker(r); m != "" {
						c1, c2, cls = c1+m, c2+m, ` class="fail"`
					}
					fmt.Fprintf(b, "<td%s>%s</td><td%s>%s</td>", cls, e(c1), cls, e(c2))
				}
			}
			b.WriteString("</tr>\n")
		}
	}
	b.WriteString("</table>\n")
}

// throughputChart plots completions per second over the target's run,
// phases laid out at their real start times.
func throughputChart(target string, res []*workload.Result) string {
	var lines []line
	var markers []marker
	var t0 float64
	first := true
	for _, r := range res {
		if r.Op != "" || r.Series == nil || len(r.Series.Counts) == 0 {
			continue
		}
		start := float64(r.Series.Start.UnixNano()) / 1e9
		if first {
			t0, first = start, false
		}
		off := start - t0
		iv := r.Series.Interval.Seconds()
		l := line{name: fmt.Sprintf("%s/%s t%d", r.Workload, r.Phase, r.Threads)}
		// A step per interval; the last interval is usually partial, so its
		// rate is over the time it covers.
		el := r.Elapsed.Seconds()
		for i, c := range r.Series.Counts {
			from := float64(i) * iv
			to := math.Min(from+iv, math.Max(el, from+iv/100))
			rate := float64(c) / (to - from)
			l.pts = append(l.pts, [2]float64{off + from, rate}, [2]float64{off + to, rate})
		}
		lines = append(lines, l)
		markers = append(markers, marker{x: off, label: fmt.Sprintf("%s t%d", r.Phase, r.Threads)})
	}
	return chart(target+": throughput over time", "seconds since first phase", "requests/s", lines, false, 0, markers)
}

// cdfChart plots each phase's latency distribution.
func cdfChart(target string, res []*workload.Result) string {
	var lines []line
	for _, r := range res {
		if r.Op != "" || r.Skipped != "" || r.Hist == nil || r.Hist.Count() == 0 {
			continue
		}
		l := line{name: fmt.Sprintf("%s/%s t%d", r.Workload, r.Phase, r.Threads)}
		for _, p := range r.Hist.CDF(120) {
			l.pts = append(l.pts, [2]float64{ms(p.Latency), p.Fraction})
		}
		lines = append(lines, l)
	}
	return chart(target+": latency CDF", "latency, ms (log scale)", "fraction of requests", lines, true, 1, nil)
}

// comparisonChart plots each phase's Req/Sec for every target as grouped bars.
func comparisonChart(rep *Report, wl string) string {
	var rows, names []string
	var values [][]float64
	for _, t := range rep.Targets {
		names = append(names, t.Name)
	}
	for _, k := range rep.rowKeys(wl) {
		if !k.total {
			continue // phase totals only (a mix phase's name has a colon too: 10:1/p1)
		}
		rows = append(rows, fmt.Sprintf("%s t%d", k.test, k.threads))
		vals := make([]float64, len(names))
		for i, n := range names {
			vals[i] = math.NaN()
			if r := rep.lookup(n, wl, k); r != nil && r.Skipped == "" {
				vals[i] = r.ReqPerSec()
			}
		}
		values = append(values, vals)
	}
	return barChart(wl+": requests/s by phase and target", rows, names, values)
}
