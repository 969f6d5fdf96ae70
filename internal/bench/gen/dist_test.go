package gen

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// grayPMF is the exact law of YCSB's zipfian algorithm (Gray et al.) over n
// items: ranks 0 and 1 come from the first two branches, the rest from the
// closed-form inverse, whose CDF we invert analytically.
func grayPMF(n int, theta float64) []float64 {
	zetan := zeta(0, int64(n), theta, 0)
	zeta2 := zeta(0, 2, theta, 0)
	eta := (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetan)
	u2 := (1 + math.Pow(0.5, theta)) / zetan
	cdf3 := func(k int) float64 { // P(third branch and ret <= k)
		if k < 0 {
			return 0
		}
		if k >= n-1 {
			return 1 - u2
		}
		u := 1 + (math.Pow(float64(k+1)/float64(n), 1-theta)-1)/eta
		return math.Min(math.Max(u-u2, 0), 1-u2)
	}
	p := make([]float64, n)
	for k := range p {
		p[k] = cdf3(k) - cdf3(k-1)
	}
	p[0] += 1 / zetan
	p[1] += math.Pow(0.5, theta) / zetan
	return p
}

func ks(counts []int64, probs []float64, total int64) float64 {
	var co, cp, d float64
	for i := range probs {
		co += float64(counts[i]) / float64(total)
		cp += probs[i]
		d = math.Max(d, math.Abs(co-cp))
	}
	return d
}

func TestZipfianFollowsItsLaw(t *testing.T) {
	for _, c := range []struct {
		n     int
		theta float64
	}{{10, 0.99}, {100, 0.99}, {1000, 0.99}, {1000, 0.5}} {
		r := rand.New(rand.NewPCG(uint64(c.n), 7))
		z := NewZipfian(0, int64(c.n-1), c.theta)
		const total = 400000
		counts := make([]int64, c.n)
		for i := 0; i < total; i++ {
			v := z.Next(r)
			if v < 0 || v >= int64(c.n) {
				t.Fatalf("n=%d: %d out of range", c.n, v)
			}
			counts[v]++
		}
		law := grayPMF(c.n, c.theta)
		ob, pb := binned(counts, law, total, 20)
		if x, crit := chiSquare(ob, pb, total), chiCritical(len(ob)-1, 3.09); x > crit {
			t.Errorf("n=%d theta=%v: chi-square %.1f > %.1f against the algorithm's law", c.n, c.theta, x, crit)
		}
		// The algorithm approximates a true zipf: the CDFs stay close, and
		// far from uniform.
		if d := ks(counts, zipfPMF(c.n, c.theta), total); d > 0.03 {
			t.Errorf("n=%d theta=%v: KS distance %.3f from zipf", c.n, c.theta, d)
		}
		uni := make([]float64, c.n)
		for i := range uni {
			uni[i] = 1 / float64(c.n)
		}
		if d := ks(counts, uni, total); c.theta > 0.9 && d < 0.2 {
			t.Errorf("n=%d: KS distance %.3f from uniform; not skewed", c.n, d)
		}
		// The most popular item is item 0 with probability 1/zeta(n).
		if p0, want := float64(counts[0])/total, law[0]; math.Abs(p0-want) > 4*math.Sqrt(want*(1-want)/total) {
			t.Errorf("n=%d: p(0)=%.4f want %.4f", c.n, p0, want)
		}
	}
}

func TestZipfianRejectsWrongSkew(t *testing.T) {
	// The chi-square check must be able to fail: samples drawn with theta
	// 0.8 are not the theta 0.99 law.
	r := rand.New(rand.NewPCG(5, 5))
	z := NewZipfian(0, 99, 0.8)
	const total = 200000
	counts := make([]int64, 100)
	for i := 0; i < total; i++ {
		counts[z.Next(r)]++
	}
	ob, pb := binned(counts, grayPMF(100, 0.99), total, 20)
	if x, crit := chiSquare(ob, pb, total), chiCritical(len(ob)-1, 3.09); x <= crit {
		t.Errorf("chi-square %.1f <= %.1f: test cannot tell theta 0.8 from 0.99", x, crit)
	}
}

func TestUniform(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	u := Uniform{Min: 100, Max: 149}
	const total = 100000
	counts := make([]int64, 50)
	probs := make([]float64, 50)
	for i := range probs {
		probs[i] = 1.0 / 50
	}
	for i := 0; i < total; i++ {
		v := u.Next(r)
		if v < 100 || v > 149 {
			t.Fatalf("%d out of [100,149]", v)
		}
		counts[v-100]++
	}
	if x, crit := chiSquare(counts, probs, total), chiCritical(49, 3.09); x > crit {
		t.Errorf("chi-square %.1f > %.1f", x, crit)
	}
	// And a zipfian sample must fail the same uniform test.
	z := NewZipfian(0, 49, 0.99)
	zc := make([]int64, 50)
	for i := 0; i < total; i++ {
		zc[z.Next(r)]++
	}
	if x, crit := chiSquare(zc, probs, total), chiCritical(49, 3.09); x <= crit {
		t.Errorf("zipfian passes the uniform test: %.1f <= %.1f", x, crit)
	}
}

func TestScrambledZipfianSpreadsSkew(t *testing.T) {
	const n = 1000
	r := rand.New(rand.NewPCG(17, 19))
	s := NewScrambledZipfian(0, n-1)
	const total = 300000
	counts := make([]int64, n)
	for i := 0; i < total; i++ {
		v := s.Next(r)
		if v < 0 || v >= n {
			t.Fatalf("%d out of range", v)
		}
		counts[v]++
	}
	// Item 0 of the underlying zipfian (p = 1/zetan) lands on
	// fnv(0) mod n; the rest of the mass is scattered roughly evenly.
	hot := FNVHash64(0) % n
	p0 := 1 / scrambledZetan
	if got := float64(counts[hot]) / total; got < p0 || got > p0+0.01 {
		t.Errorf("hottest key %d has p=%.4f, want about %.4f", hot, got, p0)
	}
	if hot == 0 {
		t.Errorf("scrambling left the hot key at 0")
	}
	sorted := append([]int64(nil), counts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] > sorted[j] })
	var top int64
	for _, c := range sorted[:n/10] {
		top += c
	}
	if frac := float64(top) / total; frac < 0.25 {
		t.Errorf("top 10%% of keys get %.2f of requests; not skewed", frac)
	}
	// YCSB key names for the hot items are scattered, not adjacent.
	if counts[hot+1%n] > counts[hot]/4 && counts[(hot+n-1)%n] > counts[hot]/4 {
		t.Errorf("neighbours of the hot key are hot too")
	}
}

func TestLatestFavoursNewestInserts(t *testing.T) {
	c := NewCounter(0)
	for i := 0; i < 1000; i++ {
		c.Ack(c.Next())
	}
	r := rand.New(rand.NewPCG(23, 29))
	l := NewLatest(c)
	const total = 300000
	dist := make([]int64, 1000)
	for i := 0; i < total; i++ {
		v := l.Next(r)
		if v < 0 || v > 999 {
			t.Fatalf("%d out of range", v)
		}
		dist[999-v]++
	}
	ob, pb := binned(dist, grayPMF(1000, ZipfianConstant), total, 20)
	if x, crit := chiSquare(ob, pb, total), chiCritical(len(ob)-1, 3.09); x > crit {
		t.Errorf("distance from newest: chi-square %.1f > %.1f", x, crit)
	}
	// After more inserts the newest item becomes the most popular.
	for i := 0; i < 500; i++ {
		c.Ack(c.Next())
	}
	var newest int
	for i := 0; i < 20000; i++ {
		v := l.Next(r)
		if v > 1499 {
			t.Fatalf("%d beyond last insert", v)
		}
		if v == 1499 {
			newest++
		}
	}
	if p := float64(newest) / 20000; math.Abs(p-1/zeta(0, 1500, ZipfianConstant, 0)) > 0.01 {
		t.Errorf("newest item p=%.4f", p)
	}
}

func TestCounterAcknowledgesInOrder(t *testing.T) {
	c := NewCounter(10)
	if c.Last() != 9 {
		t.Fatalf("last %d", c.Last())
	}
	a, b, d := c.Next(), c.Next(), c.Next()
	c.Ack(b)
	if c.Last() != 9 {
		t.Errorf("last %d after acking %d only", c.Last(), b)
	}
	c.Ack(a)
	if c.Last() != 11 {
		t.Errorf("last %d want 11", c.Last())
	}
	c.Ack(d)
	if c.Last() != 12 {
		t.Errorf("last %d want 12", c.Last())
	}
	bd := Bounded{Inner: Uniform{Min: 0, Max: 1000}, C: c}
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 1000; i++ {
		if v := bd.Next(r); v > 12 {
			t.Fatalf("bounded chooser returned %d > 12", v)
		}
	}
}

func TestYCSBKeys(t *testing.T) {
	// "user6284781860667377211" is the first key YCSB loads with the
	// default insertorder=hashed.
	if got := YCSBKey(0); got != "user6284781860667377211" {
		t.Errorf("YCSBKey(0) = %s", got)
	}
	if got := FNVHash64(1); got != 8517097267634966620 {
		t.Errorf("FNVHash64(1) = %d", got)
	}
	seen := map[string]bool{}
	for i := int64(0); i < 10000; i++ {
		k := YCSBKey(i)
		if seen[k] {
			t.Fatalf("duplicate key %s", k)
		}
		seen[k] = true
	}
	if SeqKey("k", 42) != "k0000000042" {
		t.Errorf("SeqKey = %q", SeqKey("k", 42))
	}
}
