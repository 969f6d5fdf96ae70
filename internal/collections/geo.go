package collections

import (
	"encoding/binary"
	"errors"
	"math"

	"anykv/internal/engine"
	"anykv/internal/geo"
)

// Geo searches: GEOSEARCH, GEOSEARCHSTORE and the GEORADIUS family over a sorted set whose scores are geohashes
// (internal/geo). The search reads the score ranges of the cells Redis reads, in its order, keeps the members
// inside the shape, orders and cuts them as Redis does, and answers them or, for the STORE forms, stores them in
// the same batch as the read.

const fnGeoSearch = "geo.search"

func init() {
	engine.RegisterKeyReadFunc(fnGeoSearch, geosearch, func(args [][]byte) bool {
		if len(args) == 0 {
			return false
		}
		f, err := parseNum(args[0])
		return err == nil && f&geoStore == 0
	})
}

// Outcomes of a search other than its points, which the protocol answers in its own words.
var (
	// ErrGeoMember: a member the search is centred on (FROMMEMBER, GEORADIUSBYMEMBER) is not in the set.
	ErrGeoMember = errors.New("could not decode requested zset member")
	// ErrGeoRefused: the set exists, and the search's arguments hold an error that Redis answers only once it
	// has looked the set up (GeoQuery.Refuse).
	ErrGeoRefused = errors.New("geo search refused")
)

// Sort orders of GeoQuery.Sort.
const (
	GeoUnsorted = iota
	GeoAsc
	GeoDesc
)

// GeoQuery is one search.
type GeoQuery struct {
	Src       []byte // the geo set searched
	Store     bool   // replace the mutation's key with the result (a sorted set), answering its size
	StoreDist bool   // store each member's distance (in the shape's unit), not its position's score
	// Members are the members looked up, in argument order, before the search (or before Refuse's error); the
	// last one is the centre. None: the centre is the shape's.
	Members [][]byte
	Shape   geo.Shape
	Sort    int
	Count   int64 // at most this many results (0: all)
	Any     bool  // stop at the first Count found
	// Refuse makes an existing set's search answer ErrGeoRefused once its Members are found; RefuseMissing makes
	// a missing set's answer engine.ErrNotFound without touching the destination. Redis checks the key's type
	// first and some arguments only when the key exists, so its errors depend on the key.
	Refuse, RefuseMissing bool
}

const (
	geoStore = 1 << iota
	geoStoreDist
	geoAny
	geoRefuse
	geoRefuseMissing
	geoBox
)

// GeoSearch runs q on the set q.Src. Without Store, its key is q.Src and Members are the points found: Name the
// member, Item.Value its score and its distance (GeoPoint decodes them). With Store, its key is the destination
// and Int the number stored. A missing set answers engine.ErrNotFound (after storing nothing, which deletes the
// destination, unless RefuseMissing); a missing centre member ErrGeoMember.
func GeoSearch(table string, key []byte, q GeoQuery) engine.Mutation {
	flags := int64(0)
	for _, f := range []struct {
		on  bool
		bit int64
	}{{q.Store, geoStore}, {q.StoreDist, geoStoreDist}, {q.Any, geoAny}, {q.Refuse, geoRefuse},
		{q.RefuseMissing, geoRefuseMissing}, {q.Shape.Box, geoBox}} {
		if f.on {
			flags |= f.bit
		}
	}
	s := q.Shape
	args := [][]byte{num(flags), num(int64(q.Sort)), num(q.Count), q.Src}
	for _, f := range []float64{s.Lon, s.Lat, s.Radius, s.Width, s.Height, s.Conv} {
		args = append(args, binary.BigEndian.AppendUint64(nil, math.Float64bits(f)))
	}
	return engine.CallMutation(table, key, fnGeoSearch, append(args, q.Members...)...)
}

func parseGeoQuery(args [][]byte) (GeoQuery, error) {
	if len(args) < 10 {
		return GeoQuery{}, engine.ErrInvalid
	}
	flags, err1 := parseNum(args[0])
	sort, err2 := parseNum(args[1])
	count, err3 := parseNum(args[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return GeoQuery{}, engine.ErrInvalid
	}
	var f [6]float64
	for i := range f {
		if len(args[4+i]) != 8 {
			return GeoQuery{}, engine.ErrInvalid
		}
		f[i] = math.Float64frombits(binary.BigEndian.Uint64(args[4+i]))
	}
	return GeoQuery{
		Src: args[3], Store: flags&geoStore != 0, StoreDist: flags&geoStoreDist != 0, Members: args[10:],
		Shape: geo.Shape{Lon: f[0], Lat: f[1], Radius: f[2], Width: f[3], Height: f[4], Conv: f[5], Box: flags&geoBox != 0},
		Sort:  int(sort), Count: count, Any: flags&geoAny != 0,
		Refuse: flags&geoRefuse != 0, RefuseMissing: flags&geoRefuseMissing != 0,
	}, nil
}

// geoPoint is a member found by a search.
type geoPoint struct {
	member      []byte
	score, dist float64
}

// GeoPoint decodes a point of GeoSearch's Members: its score and its distance from the centre in the search's
// unit.
func GeoPoint(m engine.Member) (score, dist float64) {
	if len(m.Item.Value) != 16 {
		return 0, 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(m.Item.Value)),
		math.Float64frombits(binary.BigEndian.Uint64(m.Item.Value[8:]))
}

func geosearch(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	q, err := parseGeoQuery(args)
	if err != nil {
		return engine.Result{}, err
	}
	z, wrong, err := openZSet(tx, tx.Table(), q.Src)
	switch {
	case err != nil || wrong:
		return wrongOr(err)
	case !z.exists:
		if q.Store && !q.RefuseMissing {
			if _, err := storeEntries(tx, nil); err != nil {
				return engine.Result{}, err
			}
		}
		return engine.Result{Err: engine.ErrNotFound}, nil
	}
	for _, m := range q.Members {
		score, had, err := z.score(m)
		if err != nil {
			return engine.Result{}, err
		}
		if !had {
			return engine.Result{Err: ErrGeoMember}, nil
		}
		q.Shape.Lon, q.Shape.Lat = geo.DecodeScore(score)
	}
	if q.Refuse {
		return engine.Result{Err: ErrGeoRefused}, nil
	}
	points, err := z.geoPoints(q)
	if err != nil {
		return engine.Result{}, err
	}
	if q.Store {
		es := make([]entry, len(points))
		for i, p := range points {
			es[i] = entry{member: p.member, score: p.score}
			if q.StoreDist {
				es[i].score = p.dist
			}
		}
		return storeEntries(tx, es)
	}
	var res engine.Result
	for _, p := range points {
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), math.Float64bits(p.score))
		res.Members = append(res.Members, engine.Member{Name: p.member,
			Item: engine.Item{Value: binary.BigEndian.AppendUint64(v, math.Float64bits(p.dist))}})
	}
	return res, nil
}

// geoPoints finds the points of q in the set, ordered and cut to q.Count as Redis does, their distances in the
// shape's unit.
func (z *zset) geoPoints(q GeoQuery) ([]geoPoint, error) {
	limit := 0
	if q.Any {
		limit = int(q.Count)
	}
	var points []geoPoint
	full := func() bool { return limit > 0 && len(points) >= limit }
	for _, span := range geo.CellsOf(q.Shape).Spans() {
		if full() {
			break
		}
		lo, hi := float64(span.Min), float64(span.Max)
		err := z.scan(sortable(lo), sortable(hi), func(e entry) bool {
			if e.score >= hi {
				return false
			}
			lon, lat := geo.DecodeScore(e.score)
			if dist, ok := q.Shape.Within(lon, lat); ok {
				points = append(points, geoPoint{member: e.member, score: e.score, dist: dist})
			}
			return !full()
		})
		if err != nil {
			return nil, err
		}
	}
	n := len(points)
	if q.Count > 0 && int64(n) > q.Count {
		n = int(q.Count)
	}
	if q.Sort != GeoUnsorted {
		cmp := func(a, b *geoPoint) int { // Redis's comparator: a NaN is below everything
			switch {
			case a.dist > b.dist:
				return 1
			case a.dist == b.dist:
				return 0
			}
			return -1
		}
		if q.Sort == GeoDesc {
			asc := cmp
			cmp = func(a, b *geoPoint) int { return -asc(a, b) }
		}
		if n == len(points) {
			geo.MergeSort(points, cmp)
		} else {
			geo.PartialSort(points, cmp, 0, n-1)
		}
	}
	points = points[:n]
	for i := range points {
		points[i].dist /= q.Shape.Conv
	}
	return points, nil
}
