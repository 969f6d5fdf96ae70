package geo

import "math"

// EarthRadius is the radius, in metres, of the sphere distances are measured on (Redis's
// EARTH_RADIUS_IN_METERS).
const EarthRadius = 6372797.560856

// mercatorMax is half the Equator's length in Web Mercator metres: the radius at which one cell covers it all.
const mercatorMax = 20037726.37

// degToRad is C's M_PI / 180.0, a double divided by a double (the same bits as math.Pi/180).
var degToRad = float64(math.Pi) / 180.0

func degRad(deg float64) float64 { return deg * degToRad }
func radDeg(rad float64) float64 { return rad / degToRad }

// Shape is what a search covers: a circle of Radius or a box of Width by Height (in the unit Conv converts to
// metres, multiplying) around (Lon, Lat).
type Shape struct {
	Lon, Lat              float64
	Box                   bool
	Radius, Width, Height float64
	Conv                  float64
}

// EstimateSteps is the step of the cells a search of rangeMeters around latitude lat reads: the finest at
// which about one cell spans the range, one coarser towards the poles (beyond 66 degrees) and another beyond
// 80, held within 1..26.
func EstimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2 // make sure the range is included in most of the base cases
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// BoundingBox returns the shape's extent: minimum longitude, minimum latitude, maximum longitude, maximum
// latitude. The longitude span is measured at the edge nearer the pole, where degrees of longitude are shortest.
func BoundingBox(s Shape) [4]float64 {
	height, width := s.Conv*s.Radius, s.Conv*s.Radius
	if s.Box {
		height, width = s.Conv*(s.Height/2), s.Conv*(s.Width/2)
	}
	latDelta := radDeg(height / EarthRadius)
	lonDeltaTop := radDeg(width / EarthRadius / Cos(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / EarthRadius / Cos(degRad(s.Lat-latDelta)))
	lonDelta := lonDeltaTop
	if s.Lat < 0 { // southern hemisphere: the bottom edge is nearer the pole
		lonDelta = lonDeltaBottom
	}
	return [4]float64{s.Lon - lonDelta, s.Lat - latDelta, s.Lon + lonDelta, s.Lat + latDelta}
}

// Cells are the centre cell of a search and its neighbours, those that cannot hold a point of the shape zeroed.
type Cells struct {
	Center    Hash
	Area      Area
	Neighbors Neighbors
}

// CellsOf computes the cells a search of s reads (Redis's geohashCalculateAreasByShapeWGS84): the step is
// estimated from the shape's radius (a box's half diagonal), made one coarser when the neighbours at that step
// do not reach the bounding box's edges, and, from step 2 on, the neighbours beyond the bounding box on a side
// whose edge the centre cell passes are left out.
func CellsOf(s Shape) Cells {
	b := BoundingBox(s)
	minLon, minLat, maxLon, maxLat := b[0], b[1], b[2], b[3]
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	radius *= s.Conv
	steps := EstimateSteps(radius, s.Lat)
	at := func(step uint8) Cells {
		h, _ := EncodeWGS84(s.Lon, s.Lat, step)
		a, _ := Decode(LonRange, LatRange, h)
		return Cells{Center: h, Area: a, Neighbors: NeighborsOf(h)}
	}
	c := at(steps)
	north, _ := Decode(LonRange, LatRange, c.Neighbors.North)
	south, _ := Decode(LonRange, LatRange, c.Neighbors.South)
	east, _ := Decode(LonRange, LatRange, c.Neighbors.East)
	west, _ := Decode(LonRange, LatRange, c.Neighbors.West)
	decrease := north.Lat.Max < maxLat || south.Lat.Min > minLat || east.Lon.Max < maxLon || west.Lon.Min > minLon
	if steps > 1 && decrease {
		steps--
		c = at(steps)
	}
	if steps >= 2 {
		n := &c.Neighbors
		if c.Area.Lat.Min < minLat {
			n.South, n.SouthWest, n.SouthEast = Hash{}, Hash{}, Hash{}
		}
		if c.Area.Lat.Max > maxLat {
			n.North, n.NorthEast, n.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if c.Area.Lon.Min < minLon {
			n.West, n.SouthWest, n.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if c.Area.Lon.Max > maxLon {
			n.East, n.SouthEast, n.NorthEast = Hash{}, Hash{}, Hash{}
		}
	}
	return c
}

// Span is the score range of one cell: Min included, Max excluded.
type Span struct{ Min, Max uint64 }

// Spans lists the score ranges a search reads, in Redis's order: the centre, then north, south, east, west,
// north-east, north-west, south-east, south-west; zeroed neighbours are skipped, and so is a cell equal to the
// last one read (with a huge radius adjacent neighbours coincide), though, as in Redis, not one equal to the
// centre when the centre was the last read.
func (c Cells) Spans() []Span {
	n := c.Neighbors
	cells := [9]Hash{c.Center, n.North, n.South, n.East, n.West, n.NorthEast, n.NorthWest, n.SouthEast, n.SouthWest}
	var spans []Span
	last := 0
	for i, h := range cells {
		if h.IsZero() || last != 0 && h == cells[last] {
			continue
		}
		spans = append(spans, Span{h.Align52(), Hash{Bits: h.Bits + 1, Step: h.Step}.Align52()})
		last = i
	}
	return spans
}

// Distance is the haversine distance in metres between two positions given in degrees. Its sines, cosines and
// arcsine are correctly rounded (see Sin), as glibc's nearly always are, so it matches redis-server's bits in
// all but a few cases in a thousand; its products are kept apart (no fused multiply-add), as C compiles them.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lat1r, lon1r := degRad(lat1), degRad(lon1)
	lat2r, lon2r := degRad(lat2), degRad(lon2)
	u := Sin((lat2r - lat1r) / 2)
	v := Sin((lon2r - lon1r) / 2)
	a := float64(u*u) + float64(float64(float64(Cos(lat1r)*Cos(lat2r))*v)*v)
	return 2.0 * EarthRadius * Asin(math.Sqrt(a))
}

// InRadius returns the distance between the centre (x1, y1) and (x2, y2), and whether it is at most radius.
func InRadius(x1, y1, x2, y2, radius float64) (float64, bool) {
	d := Distance(x1, y1, x2, y2)
	return d, !(d > radius)
}

// InRectangle returns the distance between the box's centre (x1, y1) and (x2, y2), and whether the point lies
// in the box: its distances from the centre's meridian and parallel, measured along the point's parallel and
// meridian, at most half the width and half the height (in metres).
func InRectangle(widthM, heightM, x1, y1, x2, y2 float64) (float64, bool) {
	lonDist := Distance(x2, y2, x1, y2)
	latDist := Distance(x2, y2, x2, y1)
	if lonDist > widthM/2 || latDist > heightM/2 {
		return 0, false
	}
	return Distance(x1, y1, x2, y2), true
}

// Within tests a point against the shape: its distance from the centre (metres) and whether it is inside.
func (s Shape) Within(lon, lat float64) (float64, bool) {
	if s.Box {
		return InRectangle(s.Width*s.Conv, s.Height*s.Conv, s.Lon, s.Lat, lon, lat)
	}
	return InRadius(s.Lon, s.Lat, lon, lat, s.Radius*s.Conv)
}
