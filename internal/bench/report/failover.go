package report

import (
	"fmt"
	"html"
	"strings"
	"time"

	"anykv/internal/bench/failover"
)

// FailoverColumns head the failover table (--kill), one row per target.
var FailoverColumns = []string{"Target", "Killed", "Kills", "Requests", "Failed", "Acked", "Lost", "Unchecked", "Backwards",
	"Wrong", "MaxGap(s)", "Ops/s up", "Ops/s down", "Down/up"}

func failoverRow(f *failover.Result) []string {
	ratio := "-"
	if f.UpRate > 0 && f.DownSeconds > 0 {
		ratio = fmt.Sprintf("%.2f", f.DownRate/f.UpRate)
	}
	down := "-"
	if f.DownSeconds > 0 {
		down = fmtRate(f.DownRate)
	}
	return []string{f.Target, f.KillTarget, fmt.Sprint(len(f.Kills)), fmt.Sprint(f.Requests), fmt.Sprint(f.Failed),
		fmt.Sprint(f.Acked), fmt.Sprint(f.Lost), fmt.Sprint(f.Unchecked), fmt.Sprint(f.Backwards), fmt.Sprint(f.Wrong),
		fmt.Sprintf("%.2f", f.LongestGap.Seconds()), fmtRate(f.UpRate), down, ratio}
}

// killList describes the kills of a run: node, when, and how long it was down.
func killList(f *failover.Result) string {
	var ks []string
	for _, k := range f.Kills {
		s := fmt.Sprintf("%s at %.1fs, back at %.1fs", k.Node, k.At.Seconds(), k.Up.Seconds())
		if k.Err != "" {
			s += " (" + k.Err + ")"
		}
		ks = append(ks, s)
	}
	return strings.Join(ks, "; ")
}

// failoverText is the failover table and each target's kills and longest gap.
func failoverText(rep *Report) string {
	if len(rep.Failover) == 0 {
		return ""
	}
	rows := [][]string{FailoverColumns}
	for _, f := range rep.Failover {
		rows = append(rows, failoverRow(f))
	}
	var b strings.Builder
	b.WriteString("\n== failover: requests failed, acknowledged writes lost, reads gone backwards, longest gap without a successful request, throughput with a node down vs all up\n")
	b.WriteString(padTable(rows, 2))
	for _, f := range rep.Failover {
		fmt.Fprintf(&b, "   %s: longest gap %.2fs from %.2fs; kills: %s\n", f.Target, f.LongestGap.Seconds(), f.GapAt.Seconds(), killList(f))
		for _, l := range f.Losses {
			fmt.Fprintf(&b, "   %s: LOST %s\n", f.Target, l)
		}
	}
	return b.String()
}

// failoverHTML is the failover table and, per target, successful and failed requests over time with each kill
// and restart marked.
func failoverHTML(b *strings.Builder, rep *Report) {
	if len(rep.Failover) == 0 {
		return
	}
	e := html.EscapeString
	b.WriteString("<h2>Failover</h2>\n<table><tr>")
	for _, c := range FailoverColumns {
		fmt.Fprintf(b, "<th>%s</th>", e(c))
	}
	b.WriteString("</tr>\n")
	for _, f := range rep.Failover {
		b.WriteString("<tr>")
		for i, c := range failoverRow(f) {
			cls := ""
			if (i == 6 || i == 8) && c != "0" {
				cls = ` class="fail"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, e(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	for _, f := range rep.Failover {
		fmt.Fprintf(b, "<p><small>%s: %s</small></p>\n", e(f.Target), e(killList(f)))
		b.WriteString(failoverChart(f))
	}
}

// failoverChart plots successful and failed requests per second over the run, kills and restarts marked.
func failoverChart(f *failover.Result) string {
	var markers []marker
	for _, k := range f.Kills {
		markers = append(markers, marker{x: k.At.Seconds(), label: "kill " + k.Node}, marker{x: k.Up.Seconds(), label: "up " + k.Node})
	}
	lines := []line{seriesLine("ok", f.OK.Counts, f.OK.Interval, f.Elapsed), seriesLine("failed", f.Errs.Counts, f.Errs.Interval, f.Elapsed)}
	return chart(f.Target+": requests/s while killing "+f.KillTarget+" nodes", "seconds since start", "requests/s", lines, false, 0, markers)
}

// seriesLine is a step line of counts per interval as a rate, up to elapsed (the last interval is partial).
func seriesLine(name string, counts []int64, iv, elapsed time.Duration) line {
	l := line{name: name}
	n := int((elapsed + iv - 1) / iv)
	for i := range n {
		var c int64
		if i < len(counts) {
			c = counts[i]
		}
		from := float64(i) * iv.Seconds()
		to := min(from+iv.Seconds(), elapsed.Seconds())
		rate := 0.0
		if to > from {
			rate = float64(c) / (to - from)
		}
		l.pts = append(l.pts, [2]float64{from, rate}, [2]float64{to, rate})
	}
	return l
}
