package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// line is one curve of a chart.
type line struct {
	name string
	pts  [][2]float64
}

// marker is a labelled vertical line (a phase boundary).
type marker struct {
	x     float64
	label string
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

const (
	chartW, chartH         = 760, 300
	padL, padR, padT, padB = 64, 190, 28, 44
	plotW                  = chartW - padL - padR
	plotH                  = chartH - padT - padB
	legendMax              = 16
)

// chart renders an SVG line chart. With xlog the x axis is logarithmic
// (x values must be positive). y always starts at 0.
func chart(title, xlabel, ylabel string, lines []line, xlog bool, ymax float64, markers []marker) string {
	var xmin, xmax, ymx = math.Inf(1), math.Inf(-1), 0.0
	for _, l := range lines {
		for _, p := range l.pts {
			xmin, xmax = math.Min(xmin, p[0]), math.Max(xmax, p[0])
			ymx = math.Max(ymx, p[1])
		}
	}
	if ymax > 0 {
		ymx = ymax
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`, padL, html.EscapeString(title))
	if math.IsInf(xmin, 0) || ymx <= 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no data</text></svg>`, padL+10, padT+plotH/2)
		return b.String()
	}
	if xlog {
		xmin = math.Pow(10, math.Floor(math.Log10(xmin)))
		xmax = math.Pow(10, math.Ceil(math.Log10(xmax)))
		if xmax <= xmin {
			xmax = xmin * 10
		}
	} else {
		xmin = math.Min(xmin, 0)
		if xmax <= xmin {
			xmax = xmin + 1
		}
	}
	ytop := niceCeil(ymx)
	sx := func(x float64) float64 {
		if xlog {
			return padL + (math.Log10(x)-math.Log10(xmin))/(math.Log10(xmax)-math.Log10(xmin))*plotW
		}
		return padL + (x-xmin)/(xmax-xmin)*plotW
	}
	sy := func(y float64) float64 { return padT + plotH - y/ytop*plotH }

	// Frame, grid and ticks.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`, padL, padT, plotW, plotH)
	ydiv := 4 // quarters of 1, 2 and 4; fifths of 2.5, 5 and 10
	if m := ytop / math.Pow(10, math.Floor(math.Log10(ytop))); m == 2.5 || m == 5 || m == 1 && ytop > 1 {
		ydiv = 5
	}
	for i := 0; i <= ydiv; i++ {
		y := ytop * float64(i) / float64(ydiv)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`, padL, padL+plotW, sy(y), sy(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, sy(y)+4, tick(y))
	}
	for _, x := range xticks(xmin, xmax, xlog) {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>`, sx(x), sx(x), padT, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, sx(x), padT+plotH+14, tick(x))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-8, html.EscapeString(xlabel))
	fmt.Fprintf(&b, `<text x="12" y="%d" text-anchor="middle" transform="rotate(-90 12 %d)">%s</text>`, padT+plotH/2, padT+plotH/2, html.EscapeString(ylabel))
	for i, m := range markers {
		x := sx(m.x)
		fmt.Fprintf(&b, `<g><title>%s</title><line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#bbb" stroke-dasharray="3,3"/>`,
			html.EscapeString(m.label), x, x, padT, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="9" fill="#666">%s</text></g>`, x+2, padT+10+(i%3)*10, html.EscapeString(m.label))
	}
	// Curves and legend.
	for i, l := range lines {
		color := palette[i%len(palette)]
		dash := ""
		if i >= len(palette) {
			dash = ` stroke-dasharray="6,3"`
		}
		var pts []string
		for _, p := range l.pts {
			if xlog && p[0] <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p[0]), sy(math.Min(p[1], ytop))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"><title>%s</title></polyline>`,
			color, dash, strings.Join(pts, " "), html.EscapeString(l.name))
		if i < legendMax {
			y := padT + 6 + i*14
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, padL+plotW+10, padL+plotW+26, y, y, color, dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, padL+plotW+30, y+4, html.EscapeString(clipLabel(l.name)))
		} else if i == legendMax {
			fmt.Fprintf(&b, `<text x="%d" y="%d">… %d more</text>`, padL+plotW+10, padT+10+i*14, len(lines)-legendMax)
		}
	}
	b.WriteString("</svg>")
	return b.String()
}

func clipLabel(s string) string {
	if len(s) > 26 {
		return s[:25] + "…"
	}
	return s
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*0.9999999 {
			return m * p
		}
	}
	return 10 * p
}

func xticks(xmin, xmax float64, xlog bool) []float64 {
	var t []float64
	if xlog {
		for x := xmin; x <= xmax*1.0001; x *= 10 {
			t = append(t, x)
		}
		return t
	}
	step := niceCeil((xmax - xmin) / 6)
	for x := math.Ceil(xmin/step) * step; x <= xmax+step*1e-9; x += step {
		t = append(t, x)
	}
	return t
}

// tick formats an axis value compactly.
func tick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return trimZeros(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case math.Abs(v) >= 1e4:
		return trimZeros(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case math.Abs(v) >= 1:
		return trimZeros(fmt.Sprintf("%.2f", v))
	default:
		return trimZeros(fmt.Sprintf("%.4f", v))
	}
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// barChart renders horizontal grouped bars: one group per row label, one
// bar per series (target); NaN values (skipped) are left out.
func barChart(title string, rows []string, series []string, values [][]float64) string {
	const barH, gap, labelW, rightPad = 7, 8, 170, 110
	width := chartW
	groupH := barH*len(series) + gap
	height := padT + groupH*len(rows) + 20 + 14*((len(series)+3)/4)
	var vmax float64
	for _, r := range values {
		for _, v := range r {
			if !math.IsNaN(v) {
				vmax = math.Max(vmax, v)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, width, height, width, height)
	fmt.Fprintf(&b, `<text x="4" y="16" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	if vmax <= 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no data</text></svg>`, labelW, padT+10)
		return b.String()
	}
	top := niceCeil(vmax)
	plot := float64(width - labelW - rightPad)
	for i, label := range rows {
		y0 := padT + i*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y0+groupH/2+2, html.EscapeString(clipLabel(label)))
		for j, v := range values[i] {
			if math.IsNaN(v) {
				continue
			}
			w := v / top * plot
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s</title></rect>`,
				labelW, y0+j*barH, w, barH-1, palette[j%len(palette)], html.EscapeString(series[j]), html.EscapeString(label), tick(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="8" fill="#444">%s</text>`, float64(labelW)+w+3, y0+j*barH+barH-1, tick(math.Round(v)))
		}
	}
	ly := padT + groupH*len(rows) + 12
	for j, s := range series {
		x := labelW + (j%4)*130
		y := ly + (j/4)*14
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="8" fill="%s"/><text x="%d" y="%d">%s</text>`,
			x, y-7, palette[j%len(palette)], x+14, y+1, html.EscapeString(clipLabel(s)))
	}
	b.WriteString("</svg>")
	return b.String()
}
