package gen

import (
	"math"
	"testing"
)

// chiSquare returns the statistic for observed counts against expected
// probabilities (which must sum to 1) over total samples.
func chiSquare(observed []int64, probs []float64, total int64) float64 {
	var x float64
	for i, o := range observed {
		e := probs[i] * float64(total)
		d := float64(o) - e
		x += d * d / e
	}
	return x
}

// chiCritical approximates the chi-square quantile for df degrees of freedom
// at the given standard-normal z (3.09 for p=0.001), Wilson-Hilferty.
func chiCritical(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// zipfPMF is the exact zipf probability of ranks 0..n-1 with skew theta.
func zipfPMF(n int, theta float64) []float64 {
	p := make([]float64, n)
	var sum float64
	for i := range p {
		p[i] = 1 / math.Pow(float64(i+1), theta)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// binned groups ranks into bins [0],[1],...,[k-1] and then geometric ranges
// so every bin expects at least minExpect samples.
func binned(counts []int64, probs []float64, total int64, minExpect float64) ([]int64, []float64) {
	var ob []int64
	var pb []float64
	var co int64
	var cp float64
	for i := range probs {
		co += counts[i]
		cp += probs[i]
		if cp*float64(total) >= minExpect {
			ob, pb = append(ob, co), append(pb, cp)
			co, cp = 0, 0
		}
	}
	if cp > 0 {
		ob[len(ob)-1] += co
		pb[len(pb)-1] += cp
	}
	return ob, pb
}

func TestChiCriticalApproximation(t *testing.T) {
	// Known table values at p=0.001: df=10 -> 29.59, df=50 -> 86.66.
	for _, c := range []struct {
		df   int
		want float64
	}{{10, 29.59}, {50, 86.66}, {100, 149.45}} {
		if got := chiCritical(c.df, 3.09); math.Abs(got-c.want)/c.want > 0.02 {
			t.Errorf("df=%d: %v want %v", c.df, got, c.want)
		}
	}
}
