package collections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

	"anykv/internal/engine"
)

// Sorted sets.
//
// A sorted set is a meta item (KindZSet, generation, count) and two items per member in its member table: under
// "m"+member the score (8 bytes, the float's bits), and under "s"+sortable(score)+member nothing, the score
// index, whose key order is Redis's order (score, then member bytes). So ZSCORE is one read, ZRANGE BYSCORE and
// ZCOUNT are a range scan of the index, and ZADD of one member writes three items (score, index, meta).

// Errors of the sorted-set functions that protocols answer with their own text.
var (
	ErrNotFloat   = errors.New("value is not a valid float")
	ErrScoreNaN   = errors.New("resulting score is not a number (NaN)")
	ErrBadRange   = errors.New("min or max is not a float")
	ErrBadLex     = errors.New("min or max not valid string range item")
	ErrIncrOneArg = errors.New("INCR option supports a single increment-element pair")
)

const (
	fnZAdd     = "zset.add"
	fnZRem     = "zset.rem"
	fnZScore   = "zset.score"
	fnZRange   = "zset.range"
	fnZRank    = "zset.rank"
	fnZRemRng  = "zset.remrange"
	fnZPop     = "zset.pop"
	fnZCombine = "zset.combine"
)

func init() {
	engine.RegisterFunc(fnZAdd, zadd)
	engine.RegisterFunc(fnZRem, zrem)
	engine.RegisterKeyReadFunc(fnZScore, zscore, nil)
	engine.RegisterKeyReadFunc(fnZRange, zrange, func(args [][]byte) bool { return !storing(args) })
	engine.RegisterKeyReadFunc(fnZRank, zrank, nil)
	engine.RegisterFunc(fnZRemRng, zremrange)
	engine.RegisterFunc(fnZPop, zpop)
	engine.RegisterFunc(fnZCombine, zcombine)
}

// ParseScore parses a score (ZADD, ZINCRBY, WEIGHTS) as Redis's getDoubleFromObject does: C's strtod over the
// whole argument, "inf" and "infinity" in any case and sign, hexadecimal with or without an exponent; never
// empty, a leading blank, NaN, or a number out of the doubles' range (overflow, or underflow to zero).
func ParseScore(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || strings.ContainsAny(s[:1], " \t\n\v\f\r") || strings.Contains(s, "_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(hexExponent(s), 64)
	if err != nil || math.IsNaN(f) || f == 0 && !zeroMantissa(s) {
		return 0, false // ErrRange included, and an underflow to zero: strtod's ERANGE, which Redis refuses
	}
	return f, true
}

// zeroMantissa reports whether the digits of a float's text before its exponent are all zero (a zero, not a
// number too small for a double).
func zeroMantissa(s string) bool {
	s = strings.TrimLeft(s, "+-")
	hex := len(s) > 1 && (s[:2] == "0x" || s[:2] == "0X")
	if hex {
		s = s[2:]
	}
	for _, c := range s {
		switch {
		case c == 'p' || c == 'P' || !hex && (c == 'e' || c == 'E'):
			return true
		case c >= '1' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return false
		}
	}
	return true
}

// hexExponent gives a C hexadecimal float without a binary exponent ("0x10") the "p0" Go needs to read it.
func hexExponent(s string) string {
	if u := strings.TrimLeft(s, "+-"); len(s)-len(u) <= 1 && len(u) > 2 && (u[:2] == "0x" || u[:2] == "0X") &&
		!strings.ContainsAny(u, "pP") {
		return s + "p0"
	}
	return s
}

// FormatScore prints a score as Redis 7.2 does: the shortest text that reads back as the same double, in %g style
// (exponent from 1e17), and "inf"/"-inf".
func FormatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case f == 0:
		return []byte("0")
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX with the shortest digits, exponent as C prints it
	_, exp, _ := strings.Cut(e, "e")
	if x, _ := strconv.Atoi(exp); x < -4 || x >= 17 {
		return []byte(e)
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64)
}

// sortable encodes a score so that byte order is numeric order.
func sortable(f float64) []byte { return appendSortable(nil, f) }

// appendSortable appends sortable(f) to dst.
func appendSortable(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 sorts and reads as 0
	}
	bits := math.Float64bits(f)
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, bits)
}

func unsortable(b []byte) float64 {
	bits := binary.BigEndian.Uint64(b)
	if bits&(1<<63) != 0 {
		bits &^= 1 << 63
	} else {
		bits = ^bits
	}
	return math.Float64frombits(bits)
}

// zset is one sorted set as a function sees it.
type zset struct{ coll }

func openZSet(tx *engine.Tx, table string, key []byte) (zset, bool, error) {
	c, wrong, err := openColl(tx, table, key, engine.KindZSet)
	return zset{c}, wrong, err
}

func (z *zset) mt() string { return engine.MemberTable(z.table) }

// scoreKey and indexKey build a member's keys in one allocation each (ZADD writes three keys a member).
func (z *zset) scoreKey(member []byte) []byte {
	k := engine.MemberPrefix(make([]byte, 0, 10+len(z.key)+1+len(member)), z.key, z.meta.Gen)
	return append(append(k, 'm'), member...)
}

func (z *zset) indexKey(score float64, member []byte) []byte {
	k := engine.MemberPrefix(make([]byte, 0, 10+len(z.key)+9+len(member)), z.key, z.meta.Gen)
	return append(appendSortable(append(k, 's'), score), member...)
}

// score reads a member's score.
func (z *zset) score(member []byte) (float64, bool, error) {
	if !z.exists {
		return 0, false, nil
	}
	it, found, err := z.tx.Get(z.mt(), z.scoreKey(member))
	if err != nil || !found {
		return 0, false, err
	}
	f, err := decodeScore(it.Value)
	return f, err == nil, err
}

// decodeScore decodes a member → score item's value: the float's 8 bits, big endian.
func decodeScore(v []byte) (float64, error) {
	if len(v) != 8 {
		return 0, engine.ErrCorrupt
	}
	return math.Float64frombits(binary.BigEndian.Uint64(v)), nil
}

// set stores a member's score (replacing its index entry) and counts a new member.
func (z *zset) set(member []byte, score float64, old float64, had bool) {
	if !z.exists {
		z.meta = engine.CollMeta{Gen: z.tx.NextVersion()}
		z.item = engine.Item{Kind: engine.KindZSet}
		z.exists = true
	}
	if score == 0 {
		score = 0 // no -0
	}
	if had {
		z.tx.Delete(z.mt(), z.indexKey(old, member))
	} else {
		z.meta.Count++
	}
	z.tx.Put(z.mt(), z.scoreKey(member), engine.Item{Value: binary.BigEndian.AppendUint64(nil, math.Float64bits(score))})
	z.tx.Put(z.mt(), z.indexKey(score, member), engine.Item{Value: []byte{}})
	if z.meta.Floor != nil || z.meta.Ceil != nil {
		sfx := indexSuffix(score, member)
		if z.meta.Floor != nil && bytes.Compare(sfx, z.meta.Floor) < 0 {
			z.meta.Floor = sfx // the new entry is now the lowest
		}
		if z.meta.Ceil != nil && bytes.Compare(sfx, z.meta.Ceil) > 0 {
			z.meta.Ceil = sfx // or the highest
		}
	}
}

// indexSuffix is what follows the index's prefix in an entry's key: the sortable score, then the member.
func indexSuffix(score float64, member []byte) []byte {
	return append(sortable(score), member...)
}

func (z *zset) remove(member []byte, score float64) {
	z.tx.Delete(z.mt(), z.scoreKey(member))
	z.tx.Delete(z.mt(), z.indexKey(score, member))
	z.meta.Count--
}

// entry is one member with its score, in index order.
type entry struct {
	member []byte
	score  float64
}

// each calls fn for every member in (score, member) order until fn returns false.
func (z *zset) each(fn func(e entry) bool) error { return z.scan(nil, nil, fn) }

// scan calls fn, in (score, member) order until it returns false, for the members from the first whose index
// suffix is at least from (nil: the first) to the last whose score is at most upTo's (a sortable score; nil:
// the last): one range scan of the index, which starts at the meta's floor when that lies higher.
func (z *zset) scan(from, upTo []byte, fn func(e entry) bool) error {
	return z.scanDir(from, upTo, false, fn)
}

// scanDown is scan from the highest entry down.
func (z *zset) scanDown(from, upTo []byte, fn func(e entry) bool) error {
	return z.scanDir(from, upTo, true, fn)
}

// scanView is scan or scanDown (down) handing fn each entry's member as a view of the engine's key, valid only
// during the call: for readers that keep no entry (ZCOUNT, ZLEXCOUNT), which then allocate nothing per entry.
func (z *zset) scanView(down bool) func(from, upTo []byte, fn func(e entry) bool) error {
	return func(from, upTo []byte, fn func(e entry) bool) error {
		return z.scanEntries(from, upTo, down, true, fn)
	}
}

func (z *zset) scanDir(from, upTo []byte, down bool, fn func(e entry) bool) error {
	return z.scanEntries(from, upTo, down, false, fn)
}

func (z *zset) scanEntries(from, upTo []byte, down, view bool, fn func(e entry) bool) error {
	if !z.exists {
		return nil
	}
	prefix := append(engine.MemberPrefix(nil, z.key, z.meta.Gen), 's')
	r := engine.PrefixRange(prefix)
	if bytes.Compare(z.meta.Floor, from) > 0 {
		from = z.meta.Floor
	}
	if from != nil {
		r.Start = append(prefix[:len(prefix):len(prefix)], from...)
	}
	if upTo != nil {
		r.End = engine.PrefixEnd(append(prefix[:len(prefix):len(prefix)], upTo...))
	}
	if z.meta.Ceil != nil { // the smallest key above the ceiling's entry
		ceil := append(append(prefix[:len(prefix):len(prefix)], z.meta.Ceil...), 0)
		if r.End == nil || bytes.Compare(ceil, r.End) < 0 {
			r.End = ceil
		}
	}
	if r.End != nil && bytes.Compare(r.Start, r.End) >= 0 {
		return nil
	}
	read := z.tx.Scan
	if down {
		read = z.tx.ScanReverse
	}
	return read(z.mt(), r, func(k []byte, _ engine.Item) bool {
		rest := k[len(prefix):]
		if len(rest) < 8 {
			return true
		}
		member := rest[8:]
		if !view {
			member = append([]byte(nil), member...)
		}
		return fn(entry{member: member, score: unsortable(rest[:8])})
	})
}

// raiseFloor records that no live entry sorts below e (the last of the lowest entries just removed).
func (z *zset) raiseFloor(e entry) { z.meta.Floor = indexSuffix(e.score, e.member) }

// lowerCeil records that no live entry sorts above e (the last of the highest entries just removed).
func (z *zset) lowerCeil(e entry) { z.meta.Ceil = indexSuffix(e.score, e.member) }

func (z *zset) all() ([]entry, error) {
	var out []entry
	err := z.each(func(e entry) bool { out = append(out, e); return true })
	return out, err
}

// ZAdd flags.
const (
	ZNX = 1 << iota
	ZXX
	ZGT
	ZLT
	ZCH
	ZIncr
)

// ZAdd adds or updates members (pairs of score text and member) with Redis's ZADD flags; the result is the
// number added (or changed, with ZCH) as Int; with ZIncr, the new score in Result.New (ErrNotFound when a flag
// prevented the update). Without ZIncr, Result.Old.Value is the number added or updated whatever ZCH says (what
// decides Redis's "zadd" keyspace event), as Int text.
func ZAdd(table string, key []byte, flags int, pairs ...[]byte) engine.Mutation {
	args := make([][]byte, 0, 1+len(pairs))
	return callOwning(table, key, fnZAdd, append(append(args, num(int64(flags))), pairs...))
}

func zadd(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	flags, err := parseNum(args[0])
	if err != nil || len(args)%2 != 1 {
		return engine.Result{}, engine.ErrInvalid
	}
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	changed, touched := int64(0), int64(0)
	var last engine.Result
	for i := 1; i < len(args); i += 2 {
		score, ok := ParseScore(args[i])
		if !ok {
			return engine.Result{Err: ErrNotFloat}, nil
		}
		member := args[i+1]
		old, had, err := z.score(member)
		if err != nil {
			return engine.Result{}, err
		}
		if flags&ZNX != 0 && had {
			last = engine.Result{Err: engine.ErrNotFound} // before the increment's NaN check, as in Redis
			continue
		}
		if flags&ZIncr != 0 {
			if had {
				score += old
			}
			if math.IsNaN(score) {
				return engine.Result{Err: ErrScoreNaN}, nil
			}
		}
		skip := (flags&ZNX != 0 && had) || (flags&ZXX != 0 && !had) ||
			(had && flags&ZGT != 0 && !(score > old)) || (had && flags&ZLT != 0 && !(score < old))
		if skip {
			last = engine.Result{Err: engine.ErrNotFound}
			continue
		}
		if !had || score != old {
			z.set(member, score, old, had)
			touched++
			if !had || flags&ZCH != 0 {
				changed++
			}
		}
		last = engine.Result{New: engine.Item{Value: FormatScore(score)}, NewFound: true}
	}
	if touched > 0 {
		z.save() // as Redis, a ZADD that changes nothing leaves the key as it was (WATCH, versions)
	}
	if flags&ZIncr != 0 {
		return last, nil
	}
	r := intResult(changed)
	r.Old.Value = num(touched)
	return r, nil
}

func wrongOr(err error) (engine.Result, error) {
	if err != nil {
		return engine.Result{}, err
	}
	return wrongType, nil
}

// ZRem removes members; the result is how many were there (Int).
func ZRem(table string, key []byte, members ...[]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnZRem, members...)
}

func zrem(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	n := int64(0)
	for _, m := range args {
		s, had, err := z.score(m)
		if err != nil {
			return engine.Result{}, err
		}
		if had {
			z.remove(m, s)
			n++
		}
	}
	if n > 0 {
		z.save()
	}
	return intResult(n), nil
}

// ZScore reads members' scores into Members, in argument order: Item.Value is the score text, empty Item.Value
// with Flags 0 for a missing member (Flags 1 when present).
func ZScore(table string, key []byte, members ...[]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnZScore, members...)
}

func zscore(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	var res engine.Result
	for _, m := range args {
		s, had, err := z.score(m)
		if err != nil {
			return engine.Result{}, err
		}
		mb := engine.Member{Name: m}
		if had {
			mb.Item = engine.Item{Value: FormatScore(s), Flags: 1}
		}
		res.Members = append(res.Members, mb)
	}
	return res, nil
}

// ZPop removes up to count members with the lowest (or highest, max) scores into Members, in that order.
func ZPop(table string, key []byte, highest bool, count int64) engine.Mutation {
	return engine.CallMutation(table, key, fnZPop, side(!highest), num(count))
}

func zpop(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	count, err := parseNum(args[1])
	if err != nil {
		return engine.Result{}, err
	}
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	var picked []entry
	if string(args[0]) == "L" { // lowest first: stop scanning after count
		err = z.each(func(e entry) bool {
			if int64(len(picked)) >= count {
				return false
			}
			picked = append(picked, e)
			return true
		})
	} else {
		err = z.scanDown(nil, nil, func(e entry) bool {
			if int64(len(picked)) >= count {
				return false
			}
			picked = append(picked, e)
			return true
		})
	}
	if err != nil {
		return engine.Result{}, err
	}
	var res engine.Result
	for _, e := range picked {
		z.remove(e.member, e.score)
		res.Members = append(res.Members, engine.Member{Name: e.member, Item: engine.Item{Value: FormatScore(e.score)}})
	}
	if len(picked) > 0 {
		if string(args[0]) == "L" {
			z.raiseFloor(picked[len(picked)-1])
		} else {
			z.lowerCeil(picked[len(picked)-1])
		}
		z.save()
	}
	return res, nil
}

// Combine describes ZUNION/ZINTER/ZDIFF (and their STORE forms): the source keys, their weights (nil: 1 each)
// and the aggregate ("sum", "min" or "max").
type Combine struct {
	Op        string // "union", "inter" or "diff"
	Keys      [][]byte
	Weights   []float64
	Aggregate string
}

// ZCombine reads the combination into Members (Name member, Item.Value score text), in score order; with
// store, it replaces the mutation's key with it instead and Int is its size.
func ZCombine(table string, key []byte, c Combine, store bool) engine.Mutation {
	args := [][]byte{[]byte(c.Op), []byte(c.Aggregate), num(int64(len(c.Keys)))}
	args = append(args, c.Keys...)
	for _, w := range c.Weights {
		args = append(args, FormatScore(w))
	}
	if store {
		args = append(args, []byte("store"))
	}
	return engine.CallMutation(table, key, fnZCombine, args...)
}

func zcombine(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 3 {
		return engine.Result{}, engine.ErrInvalid
	}
	op, agg := string(args[0]), string(args[1])
	n, err := parseNum(args[2])
	if err != nil || n < 1 || int64(len(args)) < 3+n {
		return engine.Result{}, engine.ErrInvalid
	}
	keys, rest := args[3:3+n], args[3+n:]
	store := len(rest) > 0 && string(rest[len(rest)-1]) == "store"
	if store {
		rest = rest[:len(rest)-1]
	}
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
		if i < len(rest) {
			w, ok := ParseScore(rest[i])
			if !ok {
				return engine.Result{}, engine.ErrInvalid
			}
			weights[i] = w
		}
	}
	type source struct {
		es []entry
		w  float64
	}
	srcs := make([]source, len(keys))
	for i, k := range keys {
		it, found, err := tx.Get(tx.Table(), k)
		if err != nil {
			return engine.Result{}, err
		}
		var es []entry
		switch {
		case !found:
		case it.Kind == engine.KindZSet:
			z, _, err := openZSet(tx, tx.Table(), k)
			if err != nil {
				return engine.Result{}, err
			}
			if es, err = z.all(); err != nil {
				return engine.Result{}, err
			}
		case it.Kind == engine.KindSet: // a plain set counts as scores of 1, as in Redis
			meta, err := engine.DecodeCollMeta(it.Value)
			if err != nil {
				return engine.Result{}, err
			}
			prefix := engine.MemberPrefix(nil, k, meta.Gen)
			err = tx.Scan(engine.MemberTable(tx.Table()), engine.PrefixRange(prefix), func(mk []byte, _ engine.Item) bool {
				es = append(es, entry{member: append([]byte(nil), mk[len(prefix):]...), score: 1})
				return true
			})
			if err != nil {
				return engine.Result{}, err
			}
		default:
			return wrongType, nil
		}
		srcs[i] = source{es, weights[i]}
	}
	if op != "diff" { // Redis aggregates the smallest source first; with infinities the order shows in sums
		sort.SliceStable(srcs, func(i, j int) bool { return len(srcs[i].es) < len(srcs[j].es) })
	}
	scores := map[string]float64{}
	counts := map[string]int{}
	for i, src := range srcs {
		for _, e := range src.es {
			m, s := string(e.member), e.score*src.w
			if math.IsNaN(s) && (op != "inter" || i == 0) {
				s = 0 // Redis: inf * 0 is 0, but for ZINTER only in the first source; later ones aggregate the NaN
			}
			switch {
			case op == "diff" && i > 0:
				delete(scores, m)
				continue
			case op == "diff" && i == 0, counts[m] == 0:
				scores[m] = s
			case agg == "min":
				if s < scores[m] { // as Redis compares: a NaN changes nothing
					scores[m] = s
				}
			case agg == "max":
				if s > scores[m] {
					scores[m] = s
				}
			default:
				scores[m] += s
				if math.IsNaN(scores[m]) {
					scores[m] = 0
				}
			}
			counts[m]++
		}
	}
	var out []entry
	for m, s := range scores {
		if op == "inter" && counts[m] != len(keys) {
			continue
		}
		out = append(out, entry{member: []byte(m), score: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score < out[j].score
		}
		return string(out[i].member) < string(out[j].member)
	})
	if store {
		return storeEntries(tx, out)
	}
	var res engine.Result
	for _, e := range out {
		res.Members = append(res.Members, engine.Member{Name: e.member, Item: engine.Item{Value: FormatScore(e.score)}})
	}
	return res, nil
}
