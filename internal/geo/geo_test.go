package geo

import (
	"math"
	"math/big"
	"math/rand"
	"sort"
	"strconv"
	"testing"
)

// TestEncodeDecode: positions get redis-server 7.0's scores and decode to its coordinates (GEOADD and GEOPOS of
// Palermo and Catania), every score decodes to a cell holding its position, and the limits encode.
func TestEncodeDecode(t *testing.T) {
	for _, c := range []struct {
		lon, lat         float64
		score            uint64
		wantLon, wantLat string
	}{
		{13.361389, 38.115556, 3479099956230698, "13.36138933897018433", "38.11555639549629859"},
		{15.087269, 37.502669, 3479447370796909, "15.08726745843887329", "37.50266842333162032"},
	} {
		score, ok := Score(c.lon, c.lat)
		if !ok || score != c.score {
			t.Fatalf("Score(%v, %v) = %d, %v; want %d", c.lon, c.lat, score, ok, c.score)
		}
		lon, lat := DecodeScore(float64(score))
		if got := strconv.FormatFloat(lon, 'f', 17, 64); got != c.wantLon {
			t.Errorf("longitude %s, want %s", got, c.wantLon)
		}
		if got := strconv.FormatFloat(lat, 'f', 17, 64); got != c.wantLat {
			t.Errorf("latitude %s, want %s", got, c.wantLat)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 10000; i++ {
		lon, lat := rng.Float64()*360-180, rng.Float64()*2*LatMax-LatMax
		h, ok := EncodeWGS84(lon, lat, StepMax)
		a, ok2 := Decode(LonRange, LatRange, h)
		if !ok || !ok2 || lon < a.Lon.Min || lon > a.Lon.Max || lat < a.Lat.Min || lat > a.Lat.Max {
			t.Fatalf("(%v, %v) encodes to %+v, whose cell is %+v", lon, lat, h, a)
		}
		if h.Bits>>52 != 0 {
			t.Fatalf("(%v, %v) encodes to more than 52 bits: %x", lon, lat, h.Bits)
		}
	}
	for _, p := range [][2]float64{{LonMin, LatMin}, {LonMax, LatMax}, {0, 0}} {
		if _, ok := Score(p[0], p[1]); !ok {
			t.Errorf("the limit %v does not encode", p)
		}
	}
	for _, p := range [][2]float64{{LonMax + 1e-9, 0}, {0, LatMin - 1e-9}, {-200, 90}} {
		if _, ok := Score(p[0], p[1]); ok {
			t.Errorf("%v, beyond the limits, encodes", p)
		}
	}
}

// TestScoreBits: scores that are no geohashes turn into bits as gcc's x86-64 cast does.
func TestScoreBits(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want uint64
	}{
		{-1.5, 0xffffffffffffffff}, {-1e30, 1 << 63}, {1e30, 0}, {math.Inf(1), 0}, {math.Inf(-1), 1 << 63},
		{1.5, 1}, {9.3e18, 0x81103cb9fb220000}, {math.NaN(), 1 << 63}, {4503599627370495, 4503599627370495},
	} {
		if got := ScoreBits(c.f); got != c.want {
			t.Errorf("ScoreBits(%v) = %#x, want %#x", c.f, got, c.want)
		}
	}
}

// TestNeighbors: each neighbour's cell touches the cell on its side, moving back returns to the cell, and the
// cells wrap around at ±180 longitude and at the latitude limits.
func TestNeighbors(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		step := uint8(2 + rng.Intn(25))
		h, _ := EncodeWGS84(rng.Float64()*360-180, rng.Float64()*2*LatMax-LatMax, step)
		n := NeighborsOf(h)
		a, _ := Decode(LonRange, LatRange, h)
		cell := func(x Hash) Area { c, _ := Decode(LonRange, LatRange, x); return c }
		east, west, north, south := cell(n.East), cell(n.West), cell(n.North), cell(n.South)
		if east.Lat != a.Lat || west.Lat != a.Lat || north.Lon != a.Lon || south.Lon != a.Lon {
			t.Fatalf("step %d: the side neighbours of %+v leave its row or column: %+v", step, a, n)
		}
		if a.Lon.Max != LonMax && east.Lon.Min != a.Lon.Max || a.Lon.Min != LonMin && west.Lon.Max != a.Lon.Min {
			t.Fatalf("east %+v and west %+v do not touch %+v", east.Lon, west.Lon, a.Lon)
		}
		if a.Lat.Max != LatMax && north.Lat.Min != a.Lat.Max || a.Lat.Min != LatMin && south.Lat.Max != a.Lat.Min {
			t.Fatalf("north %+v and south %+v do not touch %+v", north.Lat, south.Lat, a.Lat)
		}
		if moveX(n.East, -1) != h || moveY(n.North, -1) != h || moveY(moveX(n.SouthWest, 1), 1) != h {
			t.Fatalf("moving back from the neighbours of %+v does not return to it", h)
		}
		if n.NorthEast != moveX(n.North, 1) || n.SouthWest != moveY(n.West, -1) {
			t.Fatalf("the corners of %+v are not the sides' sides", h)
		}
	}
	h, _ := EncodeWGS84(179.99, 0, 10)
	if e := NeighborsOf(h).East; func() float64 { a, _ := Decode(LonRange, LatRange, e); return a.Lon.Min }() != LonMin {
		t.Errorf("east of the last column is not the first: %+v", e)
	}
	h, _ = EncodeWGS84(0, 85, 10)
	if n := NeighborsOf(h).North; func() float64 { a, _ := Decode(LonRange, LatRange, n); return a.Lat.Min }() != LatMin {
		t.Errorf("north of the top row is not the bottom row: %+v", n)
	}
}

// TestSpans: the cells a search reads, in Redis's order, skipping left-out neighbours and repeats; a whole-earth
// radius reads the four cells of step 1 (the centre, north, east, north-east); the spans of the cells cover the
// shape's bounding box.
func TestSpans(t *testing.T) {
	whole := CellsOf(Shape{Lon: 0.1, Lat: 0.1, Radius: 20000, Conv: 1000})
	if sp := whole.Spans(); len(sp) != 4 || whole.Center.Step != 1 || sp[0].Min != 3<<50 || sp[1].Min != 2<<50 {
		t.Errorf("a whole-earth radius reads %v at step %d", sp, whole.Center.Step)
	}
	if s := EstimateSteps(0, 0); s != 26 {
		t.Errorf("EstimateSteps(0) = %d", s)
	}
	if a, b, c := EstimateSteps(100, 0), EstimateSteps(100, 70), EstimateSteps(100, -85); a != 17 || b != 16 || c != 15 {
		t.Errorf("EstimateSteps(100 m) at 0, 70, -85 degrees: %d %d %d, want 17 16 15", a, b, c)
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 3000; i++ {
		s := Shape{Lon: rng.Float64()*300 - 150, Lat: rng.Float64()*140 - 70, Radius: math.Pow(10, rng.Float64()*6), Conv: 1}
		c := CellsOf(s)
		b := BoundingBox(s)
		covered := func(lon, lat float64) bool {
			score, _ := Score(lon, lat)
			for _, sp := range c.Spans() {
				if score >= sp.Min && score < sp.Max {
					return true
				}
			}
			return false
		}
		for _, p := range [][2]float64{{b[0], s.Lat}, {b[2], s.Lat}, {s.Lon, b[1]}, {s.Lon, b[3]}, {s.Lon, s.Lat}} {
			if p[0] > LonMin && p[0] < LonMax && !covered(p[0], p[1]) {
				t.Fatalf("%+v: the point %v of its bounding box is in no cell read (%+v)", s, p, c)
			}
		}
	}
}

// TestDistance: the haversine distance as Redis computes it (GEODIST Palermo Catania is 166274.1516 m).
func TestDistance(t *testing.T) {
	lon1, lat1 := DecodeScore(3479099956230698)
	lon2, lat2 := DecodeScore(3479447370796909)
	if d := strconv.FormatFloat(Distance(lon1, lat1, lon2, lat2), 'f', 4, 64); d != "166274.1516" {
		t.Errorf("Palermo-Catania: %s m", d)
	}
	if d, ok := InRadius(0, 0, 0, 1, 112000); !ok || math.Abs(d-111226.3) > 0.1 {
		t.Errorf("one degree of latitude: %v %v", d, ok)
	}
	if _, ok := InRectangle(200000, 100000, 0, 0, 0.5, 0.5); ok {
		t.Error("a point 55 km north of the centre is inside a box 100 km high")
	}
}

const prec = 300

// bigSinCos is the sine and cosine of x from their Taylor series at 300 bits.
func bigSinCos(bx *big.Float) (s, c *big.Float) {
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	s, c = new(big.Float).SetPrec(prec).Set(bx), new(big.Float).SetPrec(prec).SetInt64(1)
	ts, tc := new(big.Float).SetPrec(prec).Set(bx), new(big.Float).SetPrec(prec).SetInt64(1)
	for n := int64(1); n < 80; n++ {
		ts.Mul(ts, x2).Quo(ts, new(big.Float).SetInt64((2*n)*(2*n+1))).Neg(ts)
		tc.Mul(tc, x2).Quo(tc, new(big.Float).SetInt64((2*n-1)*(2*n))).Neg(tc)
		s.Add(s, ts)
		c.Add(c, tc)
	}
	return s, c
}

// TestTrigCorrectlyRounded: Sin, Cos and Asin round the exact value correctly (against 300-bit series; Asin
// checked by the sine of its neighbours bracketing y).
func TestTrigCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	args := []float64{math.Pi, -math.Pi, math.Pi / 2, math.Pi / 4, 1e-300, 3.5, -7.9}
	for i := 0; i < 3000; i++ {
		args = append(args, (rng.Float64()*2-1)*3.2, (rng.Float64()*2-1)*1e-3)
	}
	for _, x := range args {
		s, c := bigSinCos(new(big.Float).SetPrec(prec).SetFloat64(x))
		if want, _ := s.Float64(); Sin(x) != want {
			t.Fatalf("Sin(%v) = %v, want %v", x, Sin(x), want)
		}
		if want, _ := c.Float64(); Cos(x) != want {
			t.Fatalf("Cos(%v) = %v, want %v", x, Cos(x), want)
		}
	}
	ys := []float64{1, 0.5, math.Nextafter(1, 0), math.Nextafter(0.5, 1), 1e-20, 0.999999999999}
	for i := 0; i < 3000; i++ {
		ys = append(ys, rng.Float64(), 1-rng.Float64()*1e-9)
	}
	for _, y := range ys {
		a := Asin(y)
		// Correct rounding: y lies between the sines of the midpoints to a's neighbours.
		mid := func(b float64) *big.Float {
			m := new(big.Float).SetPrec(prec).SetFloat64(a)
			return m.Add(m, new(big.Float).SetFloat64(b)).Quo(m, big.NewFloat(2))
		}
		lo, _ := bigSinCos(mid(math.Nextafter(a, 0)))
		by := new(big.Float).SetFloat64(y)
		if lo.Cmp(by) > 0 {
			t.Fatalf("Asin(%v) = %v is too big", y, a)
		}
		if a < math.Pi/2-1e-9 {
			hi, _ := bigSinCos(mid(math.Nextafter(a, 2)))
			if hi.Cmp(by) < 0 {
				t.Fatalf("Asin(%v) = %v is too small", y, a)
			}
		}
		if Asin(-y) != -a {
			t.Fatalf("Asin(-%v) = %v, not -Asin(%v)", y, Asin(-y), y)
		}
	}
	if !math.IsNaN(Asin(1.0000000000000002)) || Asin(0) != 0 || !math.Signbit(Asin(math.Copysign(0, -1))) {
		t.Error("Asin beyond 1 or of a signed zero")
	}
}

// TestSorts: MergeSort is stable; PartialSort puts in lo..hi what a full sort puts there.
func TestSorts(t *testing.T) {
	type kv struct{ k, v int }
	rng := rand.New(rand.NewSource(5))
	cmp := func(a, b *kv) int { return a.k - b.k }
	for i := 0; i < 500; i++ {
		n := rng.Intn(200)
		a := make([]kv, n)
		for j := range a {
			a[j] = kv{rng.Intn(20), j}
		}
		want := append([]kv(nil), a...)
		sort.SliceStable(want, func(x, y int) bool { return want[x].k < want[y].k })
		got := append([]kv(nil), a...)
		MergeSort(got, cmp)
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("MergeSort of %v: %v, want %v", a, got, want)
			}
		}
		if n == 0 {
			continue
		}
		hi := rng.Intn(n)
		part := append([]kv(nil), a...)
		PartialSort(part, cmp, 0, hi)
		for j := 0; j <= hi; j++ {
			if part[j].k != want[j].k {
				t.Fatalf("PartialSort(0, %d) of %v: %v", hi, a, part)
			}
		}
	}
}
