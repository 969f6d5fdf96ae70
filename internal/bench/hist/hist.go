// Package hist records operation latencies in HDR histograms (microsecond
// units, three significant digits) and operation counts over time.
package hist

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// Lowest and highest trackable latency, in microseconds. Longer
	// latencies are clamped to the highest value (one hour).
	lowestMicros  = 1
	highestMicros = int64(time.Hour / time.Microsecond)
	// SigFigs is the number of significant decimal digits kept; a value v
	// is reported within v*10^-SigFigs of its true value.
	SigFigs = 3
)

// H is a latency histogram. It is not safe for concurrent use.
type H struct {
	h       *hdrhistogram.Histogram
	clamped int64
}

// New returns an empty histogram.
func New() *H {
	return &H{h: hdrhistogram.New(lowestMicros, highestMicros, SigFigs)}
}

// Record adds one latency sample, rounded to the nearest microsecond
// (truncating would bias sub-50 µs figures low by up to 2%).
func (h *H) Record(d time.Duration) {
	us := toMicros(d)
	if us < lowestMicros {
		us = lowestMicros
	}
	if us > highestMicros {
		us = highestMicros
		h.clamped++
	}
	_ = h.h.RecordValue(us) // cannot fail: us is within the trackable range
}

// Merge adds every sample of o to h.
func (h *H) Merge(o *H) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Clone returns an independent copy.
func (h *H) Clone() *H {
	return &H{h: h.h.Clone(), clamped: h.clamped}
}

// Count is the number of samples.
func (h *H) Count() int64 { return h.h.TotalCount() }

// Clamped is the number of samples longer than one hour, recorded as one hour.
func (h *H) Clamped() int64 { return h.clamped }

// Quantile returns the latency at percentile p (0..100): the smallest
// recorded value v such that at least p% of samples are <= v, reported as
// the highest value HDR-equivalent to it. It is 0 for an empty histogram.
func (h *H) Quantile(p float64) time.Duration {
	return micros(h.h.ValueAtQuantile(p))
}

// Max returns the largest sample (within HDR precision).
func (h *H) Max() time.Duration { return micros(h.h.Max()) }

// Min returns the smallest sample (within HDR precision).
func (h *H) Min() time.Duration { return micros(h.h.Min()) }

// Mean returns the mean latency.
func (h *H) Mean() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Equivalent reports whether two latencies fall in the same HDR bucket.
func (h *H) Equivalent(a, b time.Duration) bool {
	return h.h.ValuesAreEquivalent(toMicros(a), toMicros(b))
}

// toMicros rounds d to the nearest microsecond, as Record stores it.
func toMicros(d time.Duration) int64 {
	return d.Round(time.Microsecond).Microseconds()
}

// Point is one point of a cumulative distribution: Fraction of the samples
// (0..1) are at or below Latency.
type Point struct {
	Latency  time.Duration
	Fraction float64
}

// CDF returns the cumulative distribution, one point per non-empty HDR
// bucket, thinned to at most max points (always keeping the last).
func (h *H) CDF(max int) []Point {
	total := h.Count()
	if total == 0 {
		return nil
	}
	var pts []Point
	var cum int64
	for _, b := range h.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		pts = append(pts, Point{Latency: micros(b.To), Fraction: float64(cum) / float64(total)})
	}
	if max > 1 && len(pts) > max {
		step := float64(len(pts)-1) / float64(max-1)
		thin := make([]Point, 0, max)
		for i := 0; i < max; i++ {
			thin = append(thin, pts[int(math.Round(float64(i)*step))])
		}
		pts = thin
	}
	return pts
}

func micros(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
