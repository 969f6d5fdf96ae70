package hist

import "time"

// Series counts completed operations in fixed intervals from a start time,
// for throughput-over-time plots. It is not safe for concurrent use.
type Series struct {
	Start    time.Time
	Interval time.Duration
	Counts   []int64
}

// NewSeries returns an empty series with the given bucket width.
func NewSeries(start time.Time, interval time.Duration) *Series {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	return &Series{Start: start, Interval: interval}
}

// Add counts one operation completed at t.
func (s *Series) Add(t time.Time) {
	i := int(t.Sub(s.Start) / s.Interval)
	if i < 0 {
		i = 0
	}
	for len(s.Counts) <= i {
		s.Counts = append(s.Counts, 0)
	}
	s.Counts[i]++
}

// Merge adds o's counts to s. Both must share Start and Interval.
func (s *Series) Merge(o *Series) {
	if o == nil {
		return
	}
	for len(s.Counts) < len(o.Counts) {
		s.Counts = append(s.Counts, 0)
	}
	for i, c := range o.Counts {
		s.Counts[i] += c
	}
}

// Rates returns operations per second for each interval.
func (s *Series) Rates() []float64 {
	r := make([]float64, len(s.Counts))
	for i, c := range s.Counts {
		r[i] = float64(c) / s.Interval.Seconds()
	}
	return r
}

// Total is the number of operations counted.
func (s *Series) Total() int64 {
	var n int64
	for _, c := range s.Counts {
		n += c
	}
	return n
}
