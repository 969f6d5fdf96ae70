package workload

import (
	"slices"
	"time"

	"anykv/internal/bench/hist"
)

// MedianPercentiles are the latency percentiles a merged row keeps medians of.
var MedianPercentiles = []float64{50, 90, 99, 99.5, 99.9}

// Median holds the medians over repeated runs of one row.
type Median struct {
	Runs      int
	ReqPerSec float64
	Quantiles map[float64]time.Duration // at MedianPercentiles
}

// Quantile is the latency at percentile p: the median over runs for a
// merged row (for the MedianPercentiles), else from the histogram.
func (r *Result) Quantile(p float64) time.Duration {
	if r.Median != nil {
		if q, ok := r.Median.Quantiles[p]; ok {
			return q
		}
	}
	return r.Hist.Quantile(p)
}

// MergeRuns combines the same row from several runs: Ops, Errs, Fails and
// Elapsed are summed and the histograms merged (so Max and Mean are over
// all runs), while ReqPerSec and the percentiles become medians over runs
// (the mean of the middle two for an even count). The series and the
// other fields are the first run's. One run is returned as it is.
func MergeRuns(runs []*Result) *Result {
	if len(runs) == 1 {
		return runs[0]
	}
	m := *runs[0]
	m.Hist, m.Samples = hist.New(), nil
	m.Ops, m.Errs, m.Fails, m.Elapsed = 0, 0, 0, 0
	med := &Median{Runs: len(runs), Quantiles: map[float64]time.Duration{}}
	rates := make([]float64, len(runs))
	for i, r := range runs {
		m.Ops += r.Ops
		m.Errs += r.Errs
		m.Fails += r.Fails
		m.Elapsed += r.Elapsed
		m.Hist.Merge(r.Hist)
		m.Partial = m.Partial || r.Partial
		rates[i] = r.ReqPerSec()
		for _, s := range r.Samples {
			if len(m.Samples) < 5 {
				m.Samples = append(m.Samples, s)
			}
		}
	}
	med.ReqPerSec = median(rates)
	for _, p := range MedianPercentiles {
		qs := make([]float64, len(runs))
		for i, r := range runs {
			qs[i] = float64(r.Hist.Quantile(p))
		}
		med.Quantiles[p] = time.Duration(median(qs))
	}
	m.Median = med
	return &m
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
