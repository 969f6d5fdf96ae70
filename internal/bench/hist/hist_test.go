package hist

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// reference returns the sample at percentile p of sorted using the same rank
// rule as HDR: rank = round(p/100*n), clamped to [1, n].
func reference(sorted []int64, p float64) int64 {
	n := len(sorted)
	rank := int(math.Floor(p/100*float64(n) + 0.5))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// within reports whether got is the HDR rendering of want: never below it and
// at most one part in 10^SigFigs (plus one unit) above it.
func within(got, want int64) bool {
	return got >= want && float64(got-want) <= float64(want)/math.Pow10(SigFigs)+1
}

func TestPercentilesAgreeWithSortedReference(t *testing.T) {
	dists := map[string]func(r *rand.Rand) int64{
		"uniform":     func(r *rand.Rand) int64 { return 1 + r.Int64N(100000) },
		"exponential": func(r *rand.Rand) int64 { return 1 + int64(r.ExpFloat64()*500) },
		"bimodal": func(r *rand.Rand) int64 {
			if r.IntN(100) < 97 {
				return 50 + r.Int64N(50)
			}
			return 20000 + r.Int64N(80000)
		},
		"lognormal": func(r *rand.Rand) int64 { return 1 + int64(math.Exp(r.NormFloat64()*2+6)) },
	}
	pcts := []float64{0, 1, 25, 50, 75, 90, 99, 99.5, 99.9, 99.99, 100}
	for name, draw := range dists {
		for _, n := range []int{1, 7, 1000, 100003} {
			r := rand.New(rand.NewPCG(uint64(n), 42))
			h := New()
			vals := make([]int64, n)
			var sum float64
			for i := range vals {
				vals[i] = draw(r)
				sum += float64(vals[i])
				h.Record(time.Duration(vals[i]) * time.Microsecond)
			}
			sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
			if h.Count() != int64(n) {
				t.Fatalf("%s n=%d: count %d", name, n, h.Count())
			}
			for _, p := range pcts {
				got := h.Quantile(p).Microseconds()
				want := reference(vals, p)
				if p == 0 {
					// p0 is reported as the lowest equivalent value.
					if !h.Equivalent(time.Duration(got)*time.Microsecond, time.Duration(want)*time.Microsecond) {
						t.Errorf("%s n=%d p0: got %d want ~%d", name, n, got, want)
					}
					continue
				}
				if !within(got, want) {
					t.Errorf("%s n=%d p%v: got %dus, sorted reference %dus", name, n, p, got, want)
				}
			}
			if got, want := h.Max().Microseconds(), vals[n-1]; !within(got, want) {
				t.Errorf("%s n=%d max: got %d want %d", name, n, got, want)
			}
			mean := sum / float64(n)
			if got := float64(h.Mean()) / float64(time.Microsecond); math.Abs(got-mean) > mean*2/math.Pow10(SigFigs)+1 {
				t.Errorf("%s n=%d mean: got %.2f want %.2f", name, n, got, mean)
			}
		}
	}
}

func TestMergeEqualsCombined(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b, all := New(), New(), New()
	for i := 0; i < 5000; i++ {
		d := time.Duration(1+r.IntN(1e6)) * time.Microsecond
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		all.Record(d)
	}
	m := a.Clone()
	m.Merge(b)
	for _, p := range []float64{50, 90, 99, 99.9, 100} {
		if m.Quantile(p) != all.Quantile(p) {
			t.Errorf("p%v: merged %v combined %v", p, m.Quantile(p), all.Quantile(p))
		}
	}
	if a.Count()+b.Count() != m.Count() {
		t.Errorf("merged count %d", m.Count())
	}
}

func TestClampAndEmpty(t *testing.T) {
	h := New()
	if h.Quantile(99) != 0 || h.Mean() != 0 || h.CDF(10) != nil {
		t.Fatal("empty histogram should report zeros")
	}
	h.Record(2 * time.Hour)
	h.Record(0)
	if h.Clamped() != 1 {
		t.Errorf("clamped = %d", h.Clamped())
	}
	if got := h.Max(); got < time.Hour || got > time.Hour+time.Hour/1000 {
		t.Errorf("max %v", got)
	}
	if got := h.Min(); got != time.Microsecond {
		t.Errorf("min %v", got)
	}
}

func TestCDFMonotoneAndComplete(t *testing.T) {
	h := New()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		h.Record(time.Duration(r.ExpFloat64()*1e6) * time.Nanosecond * 100)
	}
	for _, max := range []int{0, 5, 50} {
		pts := h.CDF(max)
		if max > 0 && len(pts) > max {
			t.Fatalf("CDF(%d) has %d points", max, len(pts))
		}
		if pts[len(pts)-1].Fraction != 1 {
			t.Errorf("CDF(%d) ends at %v", max, pts[len(pts)-1].Fraction)
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].Latency < pts[i-1].Latency || pts[i].Fraction < pts[i-1].Fraction {
				t.Fatalf("CDF(%d) not monotone at %d: %v %v", max, i, pts[i-1], pts[i])
			}
		}
		// The point at the median fraction must agree with Quantile(50).
		for _, p := range pts {
			if p.Fraction >= 0.5 {
				if q := h.Quantile(50); p.Latency < q {
					t.Errorf("CDF(%d) reaches 0.5 at %v, below p50 %v", max, p.Latency, q)
				}
				break
			}
		}
	}
}

func TestSeries(t *testing.T) {
	start := time.Unix(1000, 0)
	s := NewSeries(start, 100*time.Millisecond)
	s.Add(start)
	s.Add(start.Add(50 * time.Millisecond))
	s.Add(start.Add(250 * time.Millisecond))
	s.Add(start.Add(-time.Second)) // clock skew lands in the first bucket
	o := NewSeries(start, 100*time.Millisecond)
	o.Add(start.Add(450 * time.Millisecond))
	s.Merge(o)
	want := []int64{3, 0, 1, 0, 1}
	if len(s.Counts) != len(want) {
		t.Fatalf("counts %v want %v", s.Counts, want)
	}
	for i := range want {
		if s.Counts[i] != want[i] {
			t.Fatalf("counts %v want %v", s.Counts, want)
		}
	}
	if s.Total() != 5 || s.Rates()[0] != 30 {
		t.Errorf("total %d rates %v", s.Total(), s.Rates())
	}
}

// TestRecordRoundsToNearestMicrosecond: a 40.9 µs latency is 41 µs, not 40
// (truncation biased every figure low by up to 1 µs, 2% at 50 µs).
func TestRecordRoundsToNearestMicrosecond(t *testing.T) {
	for _, c := range []struct {
		d, want time.Duration
	}{
		{40900 * time.Nanosecond, 41 * time.Microsecond},
		{40499 * time.Nanosecond, 40 * time.Microsecond},
		{1500 * time.Nanosecond, 2 * time.Microsecond},
		{300 * time.Nanosecond, time.Microsecond}, // below the lowest trackable value
	} {
		h := New()
		h.Record(c.d)
		if got := h.Quantile(50); got != c.want {
			t.Errorf("Record(%v): p50 %v, want %v", c.d, got, c.want)
		}
		if c.d >= time.Microsecond && !h.Equivalent(c.d, c.want) {
			t.Errorf("Equivalent(%v, %v) is false", c.d, c.want)
		}
	}
}
