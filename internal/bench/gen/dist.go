// Package gen holds the key choosers (YCSB's uniform, zipfian, scrambled
// zipfian and latest distributions), key names and the self-checking value
// format used by every workload.
package gen

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Chooser picks an item number. Choosers are not safe for concurrent use;
// give each worker its own (they may share a Counter).
type Chooser interface {
	Next(r *rand.Rand) int64
}

// Uniform picks uniformly in [Min, Max].
type Uniform struct{ Min, Max int64 }

func (u Uniform) Next(r *rand.Rand) int64 { return u.Min + r.Int64N(u.Max-u.Min+1) }

// ZipfianConstant is YCSB's default skew (theta).
const ZipfianConstant = 0.99

// Zipfian picks in [base, base+items) with item base most popular, using
// the Gray et al. algorithm exactly as YCSB's ZipfianGenerator does.
type Zipfian struct {
	base       int64
	items      int64
	theta      float64
	alpha      float64
	zeta2theta float64
	zetan      float64
	eta        float64
	countZeta  int64
}

// NewZipfian returns a zipfian chooser over [min, max] with skew theta.
func NewZipfian(min, max int64, theta float64) *Zipfian {
	items := max - min + 1
	return newZipfianZeta(min, items, theta, zeta(0, items, theta, 0))
}

func newZipfianZeta(base, items int64, theta, zetan float64) *Zipfian {
	z := &Zipfian{base: base, items: items, theta: theta, zetan: zetan, countZeta: items}
	z.alpha = 1 / (1 - theta)
	z.zeta2theta = zeta(0, 2, theta, 0)
	z.eta = z.etaFor(items)
	return z
}

func (z *Zipfian) etaFor(n int64) float64 {
	return (1 - math.Pow(2/float64(n), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
}

// zeta computes sum_{i=st+1}^{n} 1/i^theta added to initial.
func zeta(st, n int64, theta, initial float64) float64 {
	sum := initial
	for i := st; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// Next picks an item over the configured item count.
func (z *Zipfian) Next(r *rand.Rand) int64 { return z.NextN(r, z.items) }

// NextN picks an item in [base, base+n), growing zeta incrementally when n
// grows (as YCSB does for the latest distribution) and recomputing it when
// n shrinks.
func (z *Zipfian) NextN(r *rand.Rand, n int64) int64 {
	if n < 1 {
		n = 1
	}
	if n != z.countZeta {
		if n > z.countZeta {
			z.zetan = zeta(z.countZeta, n, z.theta, z.zetan)
		} else {
			z.zetan = zeta(0, n, z.theta, 0)
		}
		z.countZeta = n
		z.eta = z.etaFor(n)
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if n > 1 && uz < 1+math.Pow(0.5, z.theta) {
		return z.base + 1
	}
	ret := int64(float64(n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if ret >= n {
		ret = n - 1
	}
	if ret < 0 {
		ret = 0
	}
	return z.base + ret
}

// YCSB's scrambled zipfian draws from a zipfian over ten billion items
// (whose zeta is precomputed) and hashes the result into the key range, so
// popular items are spread over the key space.
const (
	scrambledItems = 10_000_000_000
	scrambledZetan = 26.46902820178302
)

// ScrambledZipfian picks in [Min, Max] with zipfian popularity scattered by
// FNV hashing, as YCSB's ScrambledZipfianGenerator.
type ScrambledZipfian struct {
	min, items int64
	z          *Zipfian
}

// NewScrambledZipfian returns YCSB's requestdistribution=zipfian chooser.
func NewScrambledZipfian(min, max int64) *ScrambledZipfian {
	return &ScrambledZipfian{min: min, items: max - min + 1,
		z: newZipfianZeta(0, scrambledItems, ZipfianConstant, scrambledZetan)}
}

func (s *ScrambledZipfian) Next(r *rand.Rand) int64 {
	v := s.z.Next(r)
	return s.min + FNVHash64(v)%s.items
}

// Counter hands out increasing item numbers for inserts and tracks which
// inserts were acknowledged, like YCSB's AcknowledgedCounterGenerator: Last
// is the highest number below which every insert is acknowledged. It is
// safe for concurrent use.
type Counter struct {
	mu      sync.Mutex
	next    int64
	limit   int64 // all ids < limit are acknowledged
	pending map[int64]bool
}

// NewCounter starts handing out ids at start; ids below start count as
// acknowledged (they were loaded before).
func NewCounter(start int64) *Counter {
	return &Counter{next: start, limit: start, pending: map[int64]bool{}}
}

// Next returns a fresh id.
func (c *Counter) Next() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.next
	c.next++
	return v
}

// Ack marks id as inserted.
func (c *Counter) Ack(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[id] = true
	for c.pending[c.limit] {
		delete(c.pending, c.limit)
		c.limit++
	}
}

// Last is the highest id such that it and every id below it are
// acknowledged, or start-1.
func (c *Counter) Last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit - 1
}

// Latest picks recently inserted items more often: the distance back from
// the newest acknowledged insert is zipfian (YCSB's SkewedLatestGenerator).
type Latest struct {
	c *Counter
	z *Zipfian
}

// NewLatest returns a latest chooser over the counter's acknowledged ids.
func NewLatest(c *Counter) *Latest {
	n := c.Last() + 1
	if n < 1 {
		n = 1
	}
	return &Latest{c: c, z: NewZipfian(0, n-1, ZipfianConstant)}
}

func (l *Latest) Next(r *rand.Rand) int64 {
	last := l.c.Last()
	if last < 0 {
		return 0
	}
	return last - l.z.NextN(r, last+1)
}

// Bounded redraws from an inner chooser until the item is at most the
// counter's last acknowledged insert, as YCSB's nextKeynum does.
type Bounded struct {
	Inner Chooser
	C     *Counter
}

func (b Bounded) Next(r *rand.Rand) int64 {
	last := b.C.Last()
	for i := 0; i < 1000; i++ {
		if v := b.Inner.Next(r); v <= last {
			return v
		}
	}
	if last < 0 {
		return 0
	}
	return r.Int64N(last + 1)
}
