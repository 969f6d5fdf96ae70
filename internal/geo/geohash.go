// Package geo is the arithmetic behind Redis's GEO commands, done as Redis 7.0 does it (geohash.c,
// geohash_helper.c, geo.c), so that a geo set built here has the very scores a redis-server would give it and a
// search finds the same members in the same order.
//
// A position is stored as a sorted-set score: a 52-bit geohash, 26 bits of longitude and 26 of latitude
// interleaved (longitude in the odd bits), over longitudes -180..180 and latitudes -85.05112878..85.05112878
// (the Web Mercator limits). A search estimates a geohash precision (step) from its radius, takes the cell of the
// centre at that step and its eight neighbours, drops the neighbours that cannot hold anything in range, reads
// the score range of each remaining cell, and keeps the members whose haversine distance (on a sphere of
// EarthRadius metres) passes the shape's test.
package geo

// The coordinate limits (EPSG:900913 / EPSG:3785): outside them a position cannot be indexed.
const (
	LonMin = -180.0
	LonMax = 180.0
	LatMin = -85.05112878
	LatMax = 85.05112878
)

// StepMax is the precision of stored positions: 26 bits per coordinate, a 52-bit score.
const StepMax = 26

// Range is the span of one coordinate.
type Range struct{ Min, Max float64 }

func (r Range) zero() bool { return r.Min == 0 && r.Max == 0 }

// The ranges positions are encoded over; GEOHASH re-encodes over -90..90 for a standard geohash string.
var (
	LonRange = Range{LonMin, LonMax}
	LatRange = Range{LatMin, LatMax}
)

// Hash is a geohash of Step bits per coordinate: Bits holds 2*Step bits, longitude in the odd positions.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports whether h is the empty hash, which marks a neighbour a search leaves out.
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Align52 shifts h's bits to the 52-bit scale of stored scores: the lowest score of the cell.
func (h Hash) Align52() uint64 { return h.Bits << (52 - 2*uint(h.Step)) }

// Area is the cell of a hash: its longitude and latitude spans.
type Area struct {
	Hash     Hash
	Lon, Lat Range
}

// interleave spreads x over the even bits and y over the odd bits of the result.
func interleave(x, y uint32) uint64 {
	return spread(x) | spread(y)<<1
}

// spread moves bit i of v to bit 2i.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squeeze is spread's inverse: bit 2i of v to bit i (the odd bits are dropped).
func squeeze(v uint64) uint32 {
	x := v & 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// Encode computes the geohash of (lon, lat) over the given ranges at step bits per coordinate; false when the
// step is not 1..32, a range is empty, or the point lies outside the indexable limits or the ranges.
func Encode(lonR, latR Range, lon, lat float64, step uint8) (Hash, bool) {
	if step > 32 || step == 0 || latR.zero() || lonR.zero() {
		return Hash{}, false
	}
	if lon > LonMax || lon < LonMin || lat > LatMax || lat < LatMin {
		return Hash{}, false
	}
	if lat < latR.Min || lat > latR.Max || lon < lonR.Min || lon > lonR.Max {
		return Hash{Step: step}, false
	}
	latOff := (lat - latR.Min) / (latR.Max - latR.Min)
	lonOff := (lon - lonR.Min) / (lonR.Max - lonR.Min)
	scale := float64(uint64(1) << step)
	latOff *= scale
	lonOff *= scale
	// The offsets are in [0, 2^step]: a conversion truncates them as C's does.
	return Hash{Bits: interleave(uint32(latOff), uint32(lonOff)), Step: step}, true
}

// EncodeWGS84 encodes a position at the given step over the stored ranges.
func EncodeWGS84(lon, lat float64, step uint8) (Hash, bool) {
	return Encode(LonRange, LatRange, lon, lat, step)
}

// Score is the sorted-set score of (lon, lat): its 52-bit hash; false outside the limits.
func Score(lon, lat float64) (uint64, bool) {
	h, ok := EncodeWGS84(lon, lat, StepMax)
	return h.Align52(), ok
}

// Decode finds the cell of h over the given ranges; false for the zero hash or an empty range.
func Decode(lonR, latR Range, h Hash) (Area, bool) {
	if h.IsZero() || latR.zero() || lonR.zero() {
		return Area{}, false
	}
	latScale := latR.Max - latR.Min
	lonScale := lonR.Max - lonR.Min
	ilat := squeeze(h.Bits)
	ilon := squeeze(h.Bits >> 1)
	cells := float64(uint64(1) << h.Step)
	return Area{
		Hash: h,
		// ilat+1 wraps as C's unsigned arithmetic does (only a score that is no geohash gets there).
		Lat: Range{latR.Min + (float64(ilat)*1.0/cells)*latScale, latR.Min + (float64(ilat+1)*1.0/cells)*latScale},
		Lon: Range{lonR.Min + (float64(ilon)*1.0/cells)*lonScale, lonR.Min + (float64(ilon+1)*1.0/cells)*lonScale},
	}, true
}

// Center is the middle of the area, held within the indexable limits.
func (a Area) Center() (lon, lat float64) {
	lon = (a.Lon.Min + a.Lon.Max) / 2
	lon = min(max(lon, LonMin), LonMax)
	lat = (a.Lat.Min + a.Lat.Max) / 2
	lat = min(max(lat, LatMin), LatMax)
	return lon, lat
}

// DecodeScore returns the position a stored score stands for: the centre of its cell. The score is turned into
// bits as Redis's C cast turns a double into a uint64 on x86-64 (see scoreBits), so a score that is no geohash
// (set by ZADD) decodes to what redis-server answers for it.
func DecodeScore(score float64) (lon, lat float64) {
	a, _ := Decode(LonRange, LatRange, Hash{Bits: ScoreBits(score), Step: StepMax})
	return a.Center()
}

// ScoreBits converts a score to an unsigned 64-bit integer as gcc compiles C's (uint64_t) cast on x86-64: below
// 2^63 (NaN and -inf included) a signed truncation, whose out-of-range answer is 1<<63, and from 2^63 up a
// signed truncation of score-2^63 with the top bit flipped (so 2^64 and more, and +inf, give 0).
func ScoreBits(score float64) uint64 {
	const two63 = 9223372036854775808.0
	cvt := func(f float64) uint64 { // cvttsd2si
		if f >= -two63 && f < two63 {
			return uint64(int64(f))
		}
		return 1 << 63
	}
	if score >= two63 {
		return cvt(score-two63) ^ 1<<63
	}
	return cvt(score)
}

// moveX moves h d cells east (d > 0) or west (d < 0), wrapping around at the edges.
func moveX(h Hash, d int) Hash { return move(h, d, 0xaaaaaaaaaaaaaaaa) }

// moveY moves h d cells north (d > 0) or south (d < 0), wrapping around at the edges.
func moveY(h Hash, d int) Hash { return move(h, d, 0x5555555555555555) }

// move adds d's sign to the coordinate whose bits mask selects (the odd bits: longitude, the even: latitude),
// carrying across the other coordinate's bits, and wraps it within the hash's step.
func move(h Hash, d int, mask uint64) Hash {
	if d == 0 {
		return h
	}
	c, other := h.Bits&mask, h.Bits&^mask
	zz := ^mask >> (64 - 2*uint(h.Step)) // the other coordinate's bit positions: a carry passes through them
	if d > 0 {
		c += zz + 1
	} else {
		c |= zz
		c -= zz + 1
	}
	c &= mask >> (64 - 2*uint(h.Step))
	h.Bits = c | other
	return h
}

// Neighbors are the eight cells around one, at its step.
type Neighbors struct {
	North, South, East, West                   Hash
	NorthEast, NorthWest, SouthEast, SouthWest Hash
}

// NeighborsOf finds the cells around h.
func NeighborsOf(h Hash) Neighbors {
	return Neighbors{
		East:      moveX(h, 1),
		West:      moveX(h, -1),
		South:     moveY(h, -1),
		North:     moveY(h, 1),
		NorthWest: moveY(moveX(h, -1), 1),
		NorthEast: moveY(moveX(h, 1), 1),
		SouthEast: moveY(moveX(h, 1), -1),
		SouthWest: moveY(moveX(h, -1), -1),
	}
}
