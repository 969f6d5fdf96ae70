package geo

import (
	"math"
	"math/big"
)

// Sines, cosines and arcsines rounded correctly, for the haversine distance.
//
// Redis computes distances with the C library's sin, cos and asin. glibc's are correctly rounded in all but about
// one case in a thousand, where Go's math package differs from it in the last bit for a fifth to a third of the
// arguments: a stored distance (GEOSEARCHSTORE ... STOREDIST) would then differ from redis-server's in its last
// digits about a third of the time. These functions compute in double-double arithmetic (about 106 bits) and
// round once, so they agree with glibc wherever glibc is correctly rounded. Arguments beyond a few radians (which
// the distance never takes) fall back to the math package.

// dd is an unevaluated sum hi+lo with |lo| at most half an ulp of hi.
type dd struct{ hi, lo float64 }

// twoSum returns a+b exactly, as a rounded sum and its error.
func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

// quickTwoSum is twoSum for |a| >= |b|.
func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

// twoProd returns a*b exactly, as a rounded product and its error.
func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (x dd) add(y dd) dd {
	s := twoSum(x.hi, y.hi)
	t := twoSum(x.lo, y.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (x dd) mul(y dd) dd {
	p := twoProd(x.hi, y.hi)
	p.lo += x.hi*y.lo + x.lo*y.hi
	return quickTwoSum(p.hi, p.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

// sinCoef and cosCoef are the Taylor coefficients (-1)^n/(2n+1)! and (-1)^n/(2n)!, n = 0..14: enough for an
// error below 2^-110 on |x| <= pi/4. piOver2 is pi/2 to about 160 bits.
var (
	sinCoef, cosCoef [15]dd
	piOver2          [3]float64
)

func init() {
	const prec = 200
	fact := new(big.Float).SetPrec(prec).SetInt64(1)
	toDD := func(f *big.Float) dd {
		hi, _ := f.Float64()
		r := new(big.Float).SetPrec(prec).Sub(f, new(big.Float).SetFloat64(hi))
		lo, _ := r.Float64()
		return dd{hi, lo}
	}
	for k := 0; k <= 29; k++ {
		if k > 0 {
			fact.Mul(fact, new(big.Float).SetInt64(int64(k)))
		}
		c := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).SetInt64(1), fact)
		if (k/2)%2 == 1 {
			c.Neg(c)
		}
		if k%2 == 0 {
			cosCoef[k/2] = toDD(c)
		} else {
			sinCoef[k/2] = toDD(c)
		}
	}
	// pi/2 from the series pi = 16 atan(1/5) - 4 atan(1/239).
	atanInv := func(n int64) *big.Float {
		x := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), new(big.Float).SetPrec(prec).SetInt64(n))
		x2 := new(big.Float).SetPrec(prec).Mul(x, x)
		sum, term := new(big.Float).SetPrec(prec).Set(x), new(big.Float).SetPrec(prec).Set(x)
		for k := int64(1); k < 200; k++ {
			term.Mul(term, x2)
			t := new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(2*k+1))
			if k%2 == 1 {
				sum.Sub(sum, t)
			} else {
				sum.Add(sum, t)
			}
		}
		return sum
	}
	pi := new(big.Float).SetPrec(prec).Mul(atanInv(5), big.NewFloat(16))
	pi.Sub(pi, new(big.Float).SetPrec(prec).Mul(atanInv(239), big.NewFloat(4)))
	half := new(big.Float).SetPrec(prec).Quo(pi, big.NewFloat(2))
	for i := range piOver2 {
		piOver2[i], _ = half.Float64()
		half.Sub(half, new(big.Float).SetFloat64(piOver2[i]))
	}
}

// reducedLimit bounds the arguments computed here: |x| < 8 needs at most 5 multiples of pi/2 taken off, which
// the 160 bits of piOver2 do exactly enough.
const reducedLimit = 8

// sinCos returns sin x and cos x in double-double, for |x.hi| < reducedLimit.
func sinCos(x dd) (s, c dd) {
	k := math.Round(x.hi / piOver2[0])
	r := x
	if k != 0 {
		p := twoProd(k, piOver2[0]) // exact: the first cancellation loses nothing
		r = twoSum(x.hi, -p.hi).add(dd{x.lo, 0}).add(dd{-p.lo, 0})
		r = r.add(twoProd(k, piOver2[1]).neg()).add(dd{-k * piOver2[2], 0})
	}
	z := r.mul(r)
	ps, pc := sinCoef[len(sinCoef)-1], cosCoef[len(cosCoef)-1]
	for i := len(sinCoef) - 2; i >= 0; i-- {
		ps = ps.mul(z).add(sinCoef[i])
		pc = pc.mul(z).add(cosCoef[i])
	}
	s, c = r.mul(ps), pc
	switch int64(k) & 3 {
	case 1:
		s, c = c, s.neg()
	case 2:
		s, c = s.neg(), c.neg()
	case 3:
		s, c = c.neg(), s
	}
	return s, c
}

// Sin is the sine of x, correctly rounded for |x| < 8 (math.Sin beyond).
func Sin(x float64) float64 {
	if !(math.Abs(x) < reducedLimit) {
		return math.Sin(x)
	}
	if x == 0 {
		return x
	}
	s, _ := sinCos(dd{x, 0})
	return s.hi
}

// Cos is the cosine of x, correctly rounded for |x| < 8 (math.Cos beyond).
func Cos(x float64) float64 {
	if !(math.Abs(x) < reducedLimit) {
		return math.Cos(x)
	}
	_, c := sinCos(dd{x, 0})
	return c.hi
}

// asinSmall is the arcsine of y, 0 <= y <= 0.5 (given in double-double), in double-double: Newton's method on
// sin t = y from math.Asin's answer, whose error two steps square twice.
func asinSmall(y dd) dd {
	t := dd{math.Asin(y.hi), 0}
	for range 2 {
		s, c := sinCos(t)
		diff := y.add(s.neg())
		t = t.add(dd{diff.hi / c.hi, 0})
	}
	return t
}

// Asin is the arcsine of y, correctly rounded; NaN beyond [-1, 1], as glibc's (a positive NaN).
func Asin(y float64) float64 {
	switch {
	case math.IsNaN(y):
		return y
	case y < 0:
		return -Asin(-y)
	case y > 1:
		return math.Float64frombits(0x7ff8000000000000)
	case y == 0:
		return y
	case y <= 0.5:
		return asinSmall(dd{y, 0}).hi
	}
	// asin y = pi/2 - 2 asin(sqrt((1-y)/2)), well conditioned where Newton's method on y itself is not.
	w := (1 - y) / 2 // exact for y in (0.5, 1]
	r := math.Sqrt(w)
	e := math.FMA(-r, r, w) // w - r*r, exact
	root := quickTwoSum(r, e/(2*r))
	if w == 0 {
		root = dd{}
	}
	a := asinSmall(root)
	return dd{piOver2[0], piOver2[1]}.add(dd{-2 * a.hi, -2 * a.lo}).hi
}
