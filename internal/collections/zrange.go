package collections

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"anykv/internal/engine"
)

// Sorted-set ranges: ZRANGE in all its forms (by rank, score or lex, REV, LIMIT, STORE), ZRANK and ZREMRANGE*.
// Each reads only the span of the score index it answers, from the nearer end (zset.scan, zset.scanDown).

// Bound is one end of a score or lex range.
type Bound struct {
	Score     float64
	Lex       []byte
	Excl      bool
	Inf       int // -1: "-" (lowest), +1: "+" (highest), for lex ranges
	IsLexType bool
}

// ParseScoreBound parses ZRANGEBYSCORE's min or max: a score, or "(" and a score for an exclusive end. The score
// is read as Redis reads range ends, with C's strtod on a C string: it ends at a NUL byte, leading white space
// is skipped, an empty score is 0, hexadecimal needs no exponent ("0x10"), a score beyond the doubles is an
// infinity; trailing bytes and NaN are errors.
func ParseScoreBound(b []byte) (Bound, bool) {
	var bd Bound
	if len(b) > 0 && b[0] == '(' {
		bd.Excl, b = true, b[1:]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return bd, true // strtod converts nothing and stops at the end
	}
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	f, err := strconv.ParseFloat(hexExponent(s), 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		err = nil // ±Inf or 0, as strtod
	}
	if s == "" || err != nil || math.IsNaN(f) || strings.Contains(s, "_") {
		return bd, false
	}
	bd.Score = f
	return bd, true
}

// ParseLexBound parses ZRANGEBYLEX's min or max: "-", "+", "[member" or "(member".
func ParseLexBound(b []byte) (Bound, bool) {
	bd := Bound{IsLexType: true}
	switch {
	case len(b) == 1 && b[0] == '-':
		bd.Inf = -1
	case len(b) == 1 && b[0] == '+':
		bd.Inf = 1
	case len(b) > 0 && (b[0] == '[' || b[0] == '('):
		bd.Excl, bd.Lex = b[0] == '(', b[1:]
	default:
		return bd, false
	}
	return bd, true
}

// RangeSpec selects members as ZRANGE does: by rank (Min, Max as indexes), by score or by lex, in reverse, with
// an offset and count (Count < 0: all).
type RangeSpec struct {
	By            string // "rank", "score" or "lex"
	Min, Max      []byte // as the client wrote them (for REV, still min then max)
	Rev           bool
	Offset, Count int64
	// Tally asks for the number of members selected instead of the members (ZCOUNT, ZLEXCOUNT): no score
	// is formatted and no reply list is built.
	Tally bool
}

func (r RangeSpec) args() [][]byte {
	rev := []byte("0")
	if r.Rev {
		rev = []byte("1")
	}
	a := [][]byte{[]byte(r.By), r.Min, r.Max, rev, num(r.Offset), num(r.Count)}
	if r.Tally {
		a = append(a, []byte("tally"))
	}
	return a
}

func parseSpec(a [][]byte) (RangeSpec, error) {
	if len(a) < 6 {
		return RangeSpec{}, engine.ErrInvalid
	}
	off, err1 := parseNum(a[4])
	cnt, err2 := parseNum(a[5])
	if err1 != nil || err2 != nil {
		return RangeSpec{}, engine.ErrInvalid
	}
	return RangeSpec{By: string(a[0]), Min: a[1], Max: a[2], Rev: string(a[3]) == "1", Offset: off, Count: cnt,
		Tally: len(a) == 7 && string(a[6]) == "tally"}, nil
}

// ZRange reads the members spec selects into Members (Name the member, Item.Value the score text), or with
// spec.Tally their number (Result.New, as ZRANGESTORE's).
func ZRange(table string, key []byte, spec RangeSpec) engine.Mutation {
	return engine.CallMutation(table, key, fnZRange, spec.args()...)
}

// ZRangeStore stores what spec selects of the sorted set at src into the key (ZRANGESTORE); Int is the count.
func ZRangeStore(table string, dst, src []byte, spec RangeSpec) engine.Mutation {
	return engine.CallMutation(table, dst, fnZRange, append(spec.args(), []byte("store"), src)...)
}

// inRange reports whether e lies between the bounds of a score or lex range.
func inRange(e entry, lo, hi Bound) (above, below bool) {
	if lo.IsLexType {
		above = lo.Inf == -1 || lo.Inf != 1 && (string(e.member) > string(lo.Lex) || !lo.Excl && string(e.member) == string(lo.Lex))
		below = hi.Inf == 1 || hi.Inf != -1 && (string(e.member) < string(hi.Lex) || !hi.Excl && string(e.member) == string(hi.Lex))
		return above, below
	}
	above = e.score > lo.Score || !lo.Excl && e.score == lo.Score
	below = e.score < hi.Score || !hi.Excl && e.score == hi.Score
	return above, below
}

// selectRange returns the entries spec selects, in the order a reply lists them, their number n, and whether they
// are the set's lowest or highest entries (what a removal may move the floor or the ceiling past). With
// spec.Tally (ZCOUNT, ZLEXCOUNT) it keeps none, only counts them: a count over millions of members holds nothing. A rank range reads from the
// nearer end up to its last rank (negative ranks count from the meta's count); a score range reads only the
// index span of its scores, backwards for REV, and stops once it has its LIMIT. A lex range reads every entry:
// its order is the index's only when all scores are equal.
func (z *zset) selectRange(spec RangeSpec) (picked []entry, n int64, lowest, highest bool, err error) {
	keep := func(e entry) {
		n++
		if !spec.Tally {
			picked = append(picked, e)
			z.tx.Hold(engine.EntryCost) // what the entry holds, beyond the bytes scanned, counts in the read bound
		}
	}
	switch spec.By {
	case "rank":
		start, e1 := parseNum(spec.Min)
		stop, e2 := parseNum(spec.Max)
		if e1 != nil || e2 != nil {
			return nil, 0, false, false, engine.ErrInvalid
		}
		size := int64(0)
		if z.exists {
			size = z.meta.Count
		}
		start, stop, ok := clampRanks(start, stop, size)
		if !ok {
			return nil, 0, false, false, nil
		}
		lo, hi := start, stop // ranks in index order
		if spec.Rev {
			lo, hi = size-1-stop, size-1-start
		}
		// Read from the end nearer the range: skip, then take the ranks wanted.
		down := size-1-hi < lo
		skip, take, read := lo, hi-lo+1, z.scan
		if down {
			skip, read = size-1-hi, z.scanDown
		}
		i := int64(0)
		err = read(nil, nil, func(e entry) bool {
			if i >= skip {
				keep(e)
			}
			i++
			return i < skip+take
		})
		if spec.Rev != down {
			reverse(picked)
		}
		return picked, n, lo == 0, hi == size-1, err
	case "score", "lex":
		var lo, hi Bound
		var ok1, ok2 bool
		if spec.By == "score" {
			lo, ok1 = ParseScoreBound(spec.Min)
			hi, ok2 = ParseScoreBound(spec.Max)
		} else {
			lo, ok1 = ParseLexBound(spec.Min)
			hi, ok2 = ParseLexBound(spec.Max)
		}
		if !ok1 || !ok2 {
			return nil, 0, false, false, engine.ErrInvalid
		}
		if spec.Offset < 0 {
			return nil, 0, false, false, nil
		}
		var from, upTo []byte
		ordered := !lo.IsLexType // the index order is the range's order
		if !lo.IsLexType {
			if lo.Score > hi.Score {
				return nil, 0, false, false, nil
			}
			from, upTo = sortable(lo.Score), sortable(hi.Score)
		} else if score, same, err := z.oneScore(); err != nil {
			return nil, 0, false, false, err
		} else if same {
			if lo.Inf == 1 || hi.Inf == -1 {
				return nil, 0, false, false, nil // '+' as the minimum or '-' as the maximum: nothing in range
			}
			from, upTo = lexSpan(score, lo, hi)
			ordered = true
		}
		want := int64(-1) // entries enough for the reply; -1: all in range
		if spec.Count >= 0 && ordered {
			want = spec.Offset + spec.Count
		}
		read := z.scan // in the reply's order
		if spec.Rev && ordered {
			read = z.scanDown
		}
		if spec.Tally { // nothing is kept: no copy of each member
			read = z.scanView(spec.Rev && ordered)
		}
		err = read(from, upTo, func(e entry) bool {
			if want >= 0 && n >= want {
				return false
			}
			if above, below := inRange(e, lo, hi); above && below {
				keep(e)
			}
			return true
		})
		if err != nil {
			return nil, 0, false, false, err
		}
		lowest = !lo.IsLexType && math.IsInf(lo.Score, -1) && !lo.Excl
		highest = !lo.IsLexType && math.IsInf(hi.Score, 1) && !hi.Excl
		if spec.Rev && !ordered {
			reverse(picked)
		}
		if spec.Offset >= n {
			return nil, 0, false, false, nil
		}
		n -= spec.Offset
		if spec.Count >= 0 && spec.Count < n {
			n = spec.Count
		}
		if !spec.Tally {
			picked = picked[spec.Offset:][:n]
		}
		whole := spec.Offset == 0 && spec.Count < 0
		return picked, n, lowest && whole, highest && whole, nil
	}
	return nil, 0, false, false, engine.ErrInvalid
}

// oneScore reports whether every entry of the set has the same score (the lex ranges' premise), and which: the
// index sorts by score first, so its first and last entries tell.
func (z *zset) oneScore() (score float64, same bool, err error) {
	var first, last entry
	var n int
	err = z.scan(nil, nil, func(e entry) bool { first, n = e, n+1; return false })
	if err == nil && n > 0 {
		err = z.scanDown(nil, nil, func(e entry) bool { last = e; return false })
	}
	return first.score, err == nil && n > 0 && first.score == last.score, err
}

// lexSpan turns a lex range over a set whose entries all have the given score into the index span to read: the
// score followed by the bounds' strings. A bound's string sorts at or below the members in range above it, and
// is a prefix of the members it ends at or just above, so the span holds every member in range; inRange drops
// the exclusive ends and the longer members past the upper bound.
func lexSpan(score float64, lo, hi Bound) (from, upTo []byte) {
	s := sortable(score)
	from, upTo = s, s
	if lo.Inf == 0 {
		from = append(s[:len(s):len(s)], lo.Lex...)
	}
	if hi.Inf == 0 {
		upTo = append(s[:len(s):len(s)], hi.Lex...)
	}
	return from, upTo
}

func reverse(es []entry) {
	for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
		es[i], es[j] = es[j], es[i]
	}
}

func zrange(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	spec, err := parseSpec(args)
	if err != nil {
		return engine.Result{}, err
	}
	store := storing(args)
	srcKey := tx.Key()
	if store {
		srcKey = args[7]
	}
	z, wrong, err := openZSet(tx, tx.Table(), srcKey)
	if err != nil || wrong {
		return wrongOr(err)
	}
	picked, n, _, _, err := z.selectRange(spec)
	if err != nil {
		return engine.Result{}, err
	}
	if store {
		return storeEntries(tx, picked)
	}
	if spec.Tally {
		return intResult(n), nil
	}
	var res engine.Result
	for _, e := range picked {
		res.Members = append(res.Members, engine.Member{Name: e.member, Item: engine.Item{Value: FormatScore(e.score)}})
	}
	return res, nil
}

// storing reports whether zrange's arguments ask it to store the range (ZRANGESTORE), reading the source key
// args[7] and writing the mutation's key, rather than to read the mutation's key.
func storing(args [][]byte) bool { return len(args) == 8 && string(args[6]) == "store" }

// storeEntries replaces whatever is at the mutation's key with a sorted set of entries (none: the key is deleted).
func storeEntries(tx *engine.Tx, es []entry) (engine.Result, error) {
	if _, found, err := tx.Get(tx.Table(), tx.Key()); err != nil {
		return engine.Result{}, err
	} else if found {
		tx.Delete(tx.Table(), tx.Key()) // the old value's members, of any kind, are outdated with it
	}
	dst := zset{coll{tx: tx, table: tx.Table(), key: tx.Key()}}
	for _, e := range es {
		dst.set(e.member, e.score, 0, false)
	}
	dst.save()
	return intResult(int64(len(es))), nil
}

// ZRank finds a member's rank (from the highest score if rev): Result.New is the rank (Int), Result.Old.Value
// the score text; ErrNotFound if it is not a member.
func ZRank(table string, key, member []byte, rev bool) engine.Mutation {
	r := []byte("0")
	if rev {
		r = []byte("1")
	}
	return engine.CallMutation(table, key, fnZRank, member, r)
}

func zrank(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	s, had, err := z.score(args[0])
	if err != nil || !had {
		return engine.Result{Err: engine.ErrNotFound}, err
	}
	read := z.scan // counts the entries before the member from its end: O(rank), from the top for ZREVRANK
	if string(args[1]) == "1" {
		read = z.scanDown
	}
	rank := int64(0)
	err = read(nil, nil, func(e entry) bool {
		if e.score == s && string(e.member) == string(args[0]) {
			return false
		}
		rank++
		return true
	})
	r := intResult(rank)
	r.Old = engine.Item{Value: FormatScore(s)}
	return r, err
}

// ZRemRange removes what spec selects (its Offset and Count unused); Int is the count removed.
func ZRemRange(table string, key []byte, spec RangeSpec) engine.Mutation {
	spec.Count = -1
	return engine.CallMutation(table, key, fnZRemRng, spec.args()...)
}

func zremrange(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	spec, err := parseSpec(args)
	if err != nil {
		return engine.Result{}, err
	}
	z, wrong, err := openZSet(tx, tx.Table(), tx.Key())
	if err != nil || wrong {
		return wrongOr(err)
	}
	picked, _, lowest, highest, err := z.selectRange(spec)
	if err != nil {
		return engine.Result{}, err
	}
	var top, bottom entry
	for i, e := range picked {
		z.remove(e.member, e.score)
		sfx := indexSuffix(e.score, e.member)
		if i == 0 || bytes.Compare(sfx, indexSuffix(top.score, top.member)) > 0 {
			top = e
		}
		if i == 0 || bytes.Compare(sfx, indexSuffix(bottom.score, bottom.member)) < 0 {
			bottom = e
		}
	}
	if len(picked) > 0 {
		if lowest {
			z.raiseFloor(top)
		}
		if highest {
			z.lowerCeil(bottom)
		}
		z.save()
	}
	return intResult(int64(len(picked))), nil
}
