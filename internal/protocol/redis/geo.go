package redis

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/geo"
	"anykv/internal/protocol/resp"
)

// The GEO commands. A geo set is a sorted set whose scores are 52-bit geohashes (internal/geo): GEOADD is a ZADD
// of computed scores, GEOPOS, GEOHASH and GEODIST read scores as ZSCORE does, and the searches (GEOSEARCH,
// GEOSEARCHSTORE, the GEORADIUS family) run as one engine function that reads the cells' score ranges and, for
// the STORE forms, writes the result in the same batch.

func init() {
	rw, ro := flagWrite, flagReadonly
	g := func(c *command) *command { c.groupName = "geo"; return c }
	register(
		g(&command{name: "geoadd", arity: -5, flags: rw, data: cmdGeoAdd, since: "3.2.0", summary: "Add one or more geospatial items in the geospatial index represented using a sorted set"}),
		g(&command{name: "geodist", arity: -4, flags: ro, data: cmdGeoDist, since: "3.2.0", summary: "Returns the distance between two members of a geospatial index"}),
		g(&command{name: "geohash", arity: -2, flags: ro, data: cmdGeoPos, since: "3.2.0", summary: "Returns members of a geospatial index as standard geohash strings"}),
		g(&command{name: "geopos", arity: -2, flags: ro, data: cmdGeoPos, since: "3.2.0", summary: "Returns longitude and latitude of members of a geospatial index"}),
		g(&command{name: "georadius", arity: -6, flags: rw, firstKey: 1, lastKey: 1, step: 1, movable: geoStoreKeys(6), data: cmdGeoSearch, since: "3.2.0", summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point"}),
		g(&command{name: "georadiusbymember", arity: -5, flags: rw, firstKey: 1, lastKey: 1, step: 1, movable: geoStoreKeys(5), data: cmdGeoSearch, since: "3.2.0", summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member"}),
		g(&command{name: "georadius_ro", arity: -6, flags: ro, data: cmdGeoSearch, since: "3.2.10", summary: "A read-only variant for GEORADIUS"}),
		g(&command{name: "georadiusbymember_ro", arity: -5, flags: ro, data: cmdGeoSearch, since: "3.2.10", summary: "A read-only variant for GEORADIUSBYMEMBER"}),
		g(&command{name: "geosearch", arity: -7, flags: ro, data: cmdGeoSearch, since: "6.2.0", summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle."}),
		g(&command{name: "geosearchstore", arity: -8, flags: rw, lastKey: 2, data: cmdGeoSearch, since: "6.2.0", summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key."}),
	)
	// Keyspace events: GEOADD's are ZADD's, a search's STORE sends georadiusstore or geosearchstore.
	notes["geoadd"] = func(n *noteCtx) {
		if touched, _ := strconv.Atoi(string(n.res[0].Old.Value)); touched > 0 {
			n.emit(notifyZSet, "zadd", n.args[1])
		}
	}
	for name, from := range map[string]int{"georadius": 6, "georadiusbymember": 5} {
		notes[name] = func(n *noteCtx) {
			if d := geoRadiusDest(n.args, from); d > 0 {
				storeInto(notifyZSet, "georadiusstore", func(*noteCtx) []byte { return n.args[d] })(n)
			}
		}
	}
	notes["geosearchstore"] = storeInto(notifyZSet, "geosearchstore", firstArg)
}

// geoStoreKeys finds GEORADIUS's keys as Redis 7's key specs do: the source, the argument after the first STORE
// and the one after the first STOREDIST from index from on (not the last argument), and, where the command
// stores elsewhere (a second STORE: the last one counts), that destination too, so a write is never to a key
// the command did not name.
func geoStoreKeys(from int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if len(args) < 2 {
			return nil
		}
		idx := []int{1}
		for _, word := range []string{"store", "storedist"} {
			for i := from; i < len(args)-1; i++ {
				if eq(args[i], word) {
					idx = append(idx, i+1)
					break
				}
			}
		}
		if d := geoRadiusDest(args, from); d > 0 {
			for _, i := range idx {
				if string(args[i]) == string(args[d]) {
					return idx
				}
			}
			idx = append(idx, d)
		}
		return idx
	}
}

// geoRadiusDest is the index of the key a GEORADIUS or GEORADIUSBYMEMBER stores into (its last STORE or
// STOREDIST), found as its option parsing does from base on; 0 when there is none.
func geoRadiusDest(args [][]byte, base int) int {
	dst := 0
	for i := base; i < len(args); i++ {
		switch {
		case eq(args[i], "count") && i+1 < len(args):
			i++
		case (eq(args[i], "store") || eq(args[i], "storedist")) && i+1 < len(args):
			dst = i + 1
			i++
		}
	}
	return dst
}

// parseLonLat reads a longitude and a latitude as Redis does (extractLongLatOrReply); "" or its error.
func parseLonLat(lonArg, latArg []byte) (lon, lat float64, errMsg string) {
	lon, ok1 := collections.ParseScore(lonArg)
	if !ok1 {
		return 0, 0, "ERR value is not a valid float"
	}
	lat, ok2 := collections.ParseScore(latArg)
	if !ok2 {
		return 0, 0, "ERR value is not a valid float"
	}
	if lon < geo.LonMin || lon > geo.LonMax || lat < geo.LatMin || lat > geo.LatMax {
		return 0, 0, "ERR invalid longitude,latitude pair " + cFixed(lon, 6) + "," + cFixed(lat, 6)
	}
	return lon, lat, ""
}

// geoUnit is a unit's size in metres, or Redis's error for an unknown unit.
func geoUnit(u []byte) (float64, string) {
	switch strings.ToLower(string(u)) {
	case "m":
		return 1, ""
	case "km":
		return 1000, ""
	case "ft":
		return 0.3048, ""
	case "mi":
		return 1609.34, ""
	}
	return 0, "ERR unsupported unit provided. please use M, KM, FT, MI"
}

// cFixed formats f as C's printf("%.*f"): inf, -inf and nan spelled as glibc spells them.
func cFixed(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// writeHumanDouble writes a coordinate as Redis's addReplyHumanLongDouble: 17 decimals with the trailing zeros
// cut, a bulk string in RESP2 and a double in RESP3.
func writeHumanDouble(w *resp.Writer, f float64) {
	s := strconv.FormatFloat(f, 'f', 17, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	if w.Proto() >= 3 {
		w.Raw([]byte("," + s + "\r\n"))
		return
	}
	w.BulkString(s)
}

// writeDistance writes a distance as Redis's addReplyDoubleDistance: a bulk string with 4 decimals.
func writeDistance(w *resp.Writer, d float64) { w.BulkString(cFixed(d, 4)) }

func cmdGeoAdd(s *session, args [][]byte) {
	flags, i := 0, 2
	nx, xx := false, false
options:
	for ; i < len(args); i++ {
		switch {
		case eq(args[i], "nx"):
			nx, flags = true, flags|collections.ZNX
		case eq(args[i], "xx"):
			xx, flags = true, flags|collections.ZXX
		case eq(args[i], "ch"):
			flags |= collections.ZCH
		default:
			break options
		}
	}
	rest := args[i:]
	if len(rest)%3 != 0 || nx && xx || len(rest) == 0 {
		s.fail("ERR syntax error")
		return
	}
	pairs := make([][]byte, 0, 2*len(rest)/3)
	for j := 0; j < len(rest); j += 3 {
		lon, lat, msg := parseLonLat(rest[j], rest[j+1])
		if msg != "" {
			s.fail(msg)
			return
		}
		score, _ := geo.Score(lon, lat)
		pairs = append(pairs, strconv.AppendUint(nil, score, 10), rest[j+2])
	}
	s.add(collections.ZAdd(s.table(), args[1], flags, pairs...))
	s.plan(replyListInt) // the scores are valid: WRONGTYPE is the only error
}

// geoScores reads the scores of members of the geo set at key, then answers with reply: scores[i] is NaN for a
// member that is not there (or when the key is not).
func geoScores(s *session, key []byte, members [][]byte, reply func(w *resp.Writer, scores []float64)) {
	s.add(collections.ZScore(s.table(), key, members...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		if r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		scores := make([]float64, len(members))
		for i := range scores {
			scores[i] = math.NaN()
			if i < len(r.Members) && r.Members[i].Item.Flags == 1 {
				scores[i], _ = collections.ParseScore(r.Members[i].Item.Value)
			}
		}
		reply(w, scores)
	})
}

func cmdGeoDist(s *session, args [][]byte) {
	toMeters := 1.0
	switch {
	case len(args) == 5:
		var msg string
		if toMeters, msg = geoUnit(args[4]); msg != "" {
			s.fail(msg)
			return
		}
	case len(args) > 5:
		s.fail("ERR syntax error")
		return
	}
	geoScores(s, args[1], args[2:4], func(w *resp.Writer, scores []float64) {
		if math.IsNaN(scores[0]) || math.IsNaN(scores[1]) {
			w.Null()
			return
		}
		lon1, lat1 := geo.DecodeScore(scores[0])
		lon2, lat2 := geo.DecodeScore(scores[1])
		writeDistance(w, geo.Distance(lon1, lat1, lon2, lat2)/toMeters)
	})
}

// cmdGeoPos serves GEOPOS (each member's position) and GEOHASH (each member's standard 11-character geohash).
func cmdGeoPos(s *session, args [][]byte) {
	hash := eq(args[0], "geohash")
	geoScores(s, args[1], args[2:], func(w *resp.Writer, scores []float64) {
		w.ArrayHeader(len(scores))
		for _, score := range scores {
			switch {
			case math.IsNaN(score) && hash:
				w.Null()
			case math.IsNaN(score):
				w.NullArray()
			case hash:
				w.BulkString(geohashString(score))
			default:
				lon, lat := geo.DecodeScore(score)
				w.ArrayHeader(2)
				writeHumanDouble(w, lon)
				writeHumanDouble(w, lat)
			}
		}
	})
}

// geohashString is GEOHASH's answer for a score: the position re-encoded over the standard latitudes (-90..90),
// in base 32, with an eleventh character that is always '0' (52 bits make ten and a bit).
func geohashString(score float64) string {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat := geo.DecodeScore(score)
	h, _ := geo.Encode(geo.LonRange, geo.Range{Min: -90, Max: 90}, lon, lat, geo.StepMax)
	var b [11]byte
	for i := range b {
		idx := uint64(0)
		if i < 10 {
			idx = (h.Bits >> (52 - (i+1)*5)) & 0x1f
		}
		b[i] = alphabet[idx]
	}
	return string(b[:])
}

// The search commands' forms.
const (
	geoCoords      = 1 << iota // GEORADIUS: centred on a longitude and latitude
	geoByMember                // GEORADIUSBYMEMBER: centred on a member
	geoNoStore                 // the _RO forms: no STORE or STOREDIST
	geoSearch                  // GEOSEARCH syntax
	geoSearchStore             // GEOSEARCHSTORE: GEOSEARCH syntax and a destination
)

var geoForms = map[string]int{
	"georadius": geoCoords, "georadiusbymember": geoByMember, "georadius_ro": geoCoords | geoNoStore,
	"georadiusbymember_ro": geoByMember | geoNoStore, "geosearch": geoSearch, "geosearchstore": geoSearch | geoSearchStore,
}

// geoParse is what a search's arguments say, read as Redis's georadiusGeneric reads them, assuming the key
// exists (every member looked up in it found) or not.
type geoParse struct {
	err        string // Redis's first error; "" if none
	q          collections.GeoQuery
	dst        []byte
	store      bool
	with       [3]bool // WITHDIST, WITHHASH, WITHCOORD
	fromMember bool
}

func parseGeoSearch(args [][]byte, form int, exists bool) (p geoParse) {
	q := &p.q
	q.Src = args[1]
	shape := &q.Shape
	fail := func(msg string) geoParse { p.err = msg; return p }
	distance := func(radius, unit []byte) string { // extractDistanceOrReply
		r, ok := collections.ParseScore(radius)
		switch {
		case !ok:
			return "ERR need numeric radius"
		case r < 0:
			return "ERR radius cannot be negative"
		}
		shape.Radius = r
		conv, msg := geoUnit(unit)
		shape.Conv = conv
		return msg
	}
	base := 0
	switch {
	case form&geoCoords != 0:
		base = 6
		var msg string
		if shape.Lon, shape.Lat, msg = parseLonLat(args[2], args[3]); msg != "" {
			return fail(msg)
		}
		if msg := distance(args[4], args[5]); msg != "" {
			return fail(msg)
		}
	case form&geoByMember != 0 && !exists: // the member and radius are not even read
		base = 5
	case form&geoByMember != 0:
		base = 5
		q.Members = append(q.Members, args[2])
		if msg := distance(args[3], args[4]); msg != "" {
			return fail(msg)
		}
	case form&geoSearchStore != 0:
		base, q.Src, p.dst, p.store = 3, args[2], args[1], true
	default:
		base = 2
	}
	fromLonLat, byRadius, byBox := false, false, false
	for i := base; i < len(args); i++ {
		a, left := args[i], len(args)-1-i
		search := form&geoSearch != 0
		switch {
		case eq(a, "withdist"):
			p.with[0] = true
		case eq(a, "withhash"):
			p.with[1] = true
		case eq(a, "withcoord"):
			p.with[2] = true
		case eq(a, "any"):
			q.Any = true
		case eq(a, "asc"):
			q.Sort = collections.GeoAsc
		case eq(a, "desc"):
			q.Sort = collections.GeoDesc
		case eq(a, "count") && left >= 1:
			n, ok := argInt(args[i+1])
			switch {
			case !ok:
				return fail(errNotInt)
			case n <= 0:
				return fail("ERR COUNT must be > 0")
			}
			q.Count = n
			i++
		case (eq(a, "store") || eq(a, "storedist")) && left >= 1 && form&(geoNoStore|geoSearch) == 0:
			p.dst, p.store, q.StoreDist = args[i+1], true, eq(a, "storedist")
			i++
		case eq(a, "storedist") && form&geoSearchStore != 0:
			q.StoreDist = true
		case eq(a, "frommember") && left >= 1 && search && !fromLonLat:
			if exists {
				q.Members = append(q.Members, args[i+1])
			}
			p.fromMember = true
			i++
		case eq(a, "fromlonlat") && left >= 2 && search && !p.fromMember:
			var msg string
			if shape.Lon, shape.Lat, msg = parseLonLat(args[i+1], args[i+2]); msg != "" {
				return fail(msg)
			}
			fromLonLat = true
			i += 2
		case eq(a, "byradius") && left >= 2 && search && !byBox:
			if msg := distance(args[i+1], args[i+2]); msg != "" {
				return fail(msg)
			}
			shape.Box, byRadius = false, true
			i += 2
		case eq(a, "bybox") && left >= 3 && search && !byRadius:
			w, ok1 := collections.ParseScore(args[i+1])
			if !ok1 {
				return fail("ERR need numeric width")
			}
			h, ok2 := collections.ParseScore(args[i+2])
			switch {
			case !ok2:
				return fail("ERR need numeric height")
			case h < 0 || w < 0:
				return fail("ERR height or width cannot be negative")
			}
			shape.Width, shape.Height = w, h
			var msg string
			if shape.Conv, msg = geoUnit(args[i+3]); msg != "" {
				return fail(msg)
			}
			shape.Box, byBox = true, true
			i += 3
		default:
			return fail("ERR syntax error")
		}
	}
	name := string(args[0])
	switch {
	case p.store && (p.with[0] || p.with[1] || p.with[2]) && form&geoSearchStore != 0:
		return fail("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	case p.store && (p.with[0] || p.with[1] || p.with[2]):
		return fail("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	case form&geoSearch != 0 && !p.fromMember && !fromLonLat:
		return fail("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + name)
	case form&geoSearch != 0 && !byRadius && !byBox:
		return fail("ERR exactly one of BYRADIUS and BYBOX can be specified for " + name)
	case q.Any && q.Count == 0:
		return fail("ERR the ANY argument requires COUNT argument")
	}
	if q.Count != 0 && q.Sort == collections.GeoUnsorted && !q.Any {
		q.Sort = collections.GeoAsc // the nearest COUNT, as Redis: COUNT without ANY sorts
	}
	return p
}

// cmdGeoSearch serves GEOSEARCH, GEOSEARCHSTORE and the GEORADIUS family. Redis checks the key's type before
// anything else, and reads some arguments only once it knows whether the key exists (a missing key's
// GEORADIUSBYMEMBER reads neither member nor radius; FROMMEMBER looks its member up where it stands among the
// options), so the arguments are read twice, for either case, and the search function, which sees the key,
// tells which reading applies.
func cmdGeoSearch(s *session, args [][]byte) {
	form := geoForms[lower(args[0])]
	ex, miss := parseGeoSearch(args, form, true), parseGeoSearch(args, form, false)
	q := ex.q
	q.Refuse, q.RefuseMissing = ex.err != "", miss.err != ""
	dst, store := ex.dst, ex.store
	if ex.err != "" {
		dst, store, q.StoreDist = miss.dst, miss.store, miss.q.StoreDist
	}
	q.Store = store && (ex.err == "" || miss.err == "")
	key := q.Src
	if q.Store {
		key = dst
	}
	s.add(collections.GeoSearch(s.table(), key, q))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound) && miss.err != "":
			w.Error(miss.err)
		case errors.Is(r.Err, engine.ErrNotFound) && q.Store:
			w.Int(0)
		case errors.Is(r.Err, engine.ErrNotFound):
			w.ArrayHeader(0)
		case errors.Is(r.Err, collections.ErrGeoMember):
			w.Error("ERR could not decode requested zset member")
		case errors.Is(r.Err, collections.ErrGeoRefused):
			w.Error(ex.err)
		case r.Err != nil:
			w.Error(errText(r.Err))
		case q.Store:
			w.Int(collections.Int(r))
		default:
			writeGeoPoints(w, r.Members, ex.with)
		}
	})
}

// writeGeoPoints answers a search's points: each a member, or an array of the member and what with asks for
// (distance, hash, coordinates, in that order).
func writeGeoPoints(w *resp.Writer, points []engine.Member, with [3]bool) {
	extra := 0
	for _, on := range with {
		if on {
			extra++
		}
	}
	w.ArrayHeader(len(points))
	for _, p := range points {
		if extra > 0 {
			w.ArrayHeader(extra + 1)
		}
		w.Bulk(p.Name)
		score, dist := collections.GeoPoint(p)
		if with[0] {
			writeDistance(w, dist)
		}
		if with[1] {
			w.Int(int64(score)) // a score in a cell's range: a whole number below 2^52
		}
		if with[2] {
			lon, lat := geo.DecodeScore(score)
			w.ArrayHeader(2)
			writeHumanDouble(w, lon)
			writeHumanDouble(w, lat)
		}
	}
}
