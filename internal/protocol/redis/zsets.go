package redis

import (
	"errors"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	z := func(c *command) *command { c.groupName = "sorted-set"; return c }
	register(
		z(&command{name: "zadd", arity: -4, flags: rw | flagFast, data: cmdZAdd, since: "1.2.0", summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."}),
		z(&command{name: "zincrby", arity: 4, flags: rw | flagFast, data: cmdZIncrBy, since: "1.2.0", summary: "Increments the score of a member in a sorted set."}),
		z(&command{name: "zrem", arity: -3, flags: rw | flagFast, data: cmdZRem, since: "1.2.0", summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."}),
		z(&command{name: "zscore", arity: 3, flags: ro | flagFast, data: cmdZScore, since: "1.2.0", summary: "Returns the score of a member in a sorted set."}),
		z(&command{name: "zmscore", arity: -3, flags: ro | flagFast, data: cmdZScore, since: "6.2.0", summary: "Returns the score of one or more members in a sorted set."}),
		z(&command{name: "zcard", arity: 2, flags: ro | flagFast, data: cmdCollLen(engine.KindZSet), since: "1.2.0", summary: "Returns the number of members in a sorted set."}),
		z(&command{name: "zcount", arity: 4, flags: ro | flagFast, data: cmdZCount, since: "2.0.0", summary: "Returns the count of members in a sorted set that have scores within a range."}),
		z(&command{name: "zlexcount", arity: 4, flags: ro | flagFast, data: cmdZCount, since: "2.8.9", summary: "Returns the number of members in a sorted set within a lexicographical range."}),
		z(&command{name: "zrank", arity: -3, flags: ro | flagFast, data: cmdZRank, since: "2.0.0", summary: "Returns the index of a member in a sorted set ordered by ascending scores."}),
		z(&command{name: "zrevrank", arity: -3, flags: ro | flagFast, data: cmdZRank, since: "2.0.0", summary: "Returns the index of a member in a sorted set ordered by descending scores."}),
		z(&command{name: "zrange", arity: -4, flags: ro, data: cmdZRange, since: "1.2.0", summary: "Returns members in a sorted set within a range of indexes."}),
		z(&command{name: "zrangestore", arity: -5, flags: rw, lastKey: 2, data: cmdZRange, since: "6.2.0", summary: "Stores a range of members from sorted set in a key."}),
		z(&command{name: "zrevrange", arity: -4, flags: ro, data: cmdZRange, since: "1.2.0", summary: "Returns members in a sorted set within a range of indexes in reverse order."}),
		z(&command{name: "zrangebyscore", arity: -4, flags: ro, data: cmdZRange, since: "1.0.5", summary: "Returns members in a sorted set within a range of scores."}),
		z(&command{name: "zrevrangebyscore", arity: -4, flags: ro, data: cmdZRange, since: "2.2.0", summary: "Returns members in a sorted set within a range of scores in reverse order."}),
		z(&command{name: "zrangebylex", arity: -4, flags: ro, data: cmdZRange, since: "2.8.9", summary: "Returns members in a sorted set within a lexicographical range."}),
		z(&command{name: "zrevrangebylex", arity: -4, flags: ro, data: cmdZRange, since: "2.8.9", summary: "Returns members in a sorted set within a lexicographical range in reverse order."}),
		z(&command{name: "zremrangebyscore", arity: 4, flags: rw, data: cmdZRemRange, since: "1.2.0", summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."}),
		z(&command{name: "zremrangebyrank", arity: 4, flags: rw, data: cmdZRemRange, since: "2.0.0", summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."}),
		z(&command{name: "zremrangebylex", arity: 4, flags: rw, data: cmdZRemRange, since: "2.8.9", summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."}),
		z(&command{name: "zpopmin", arity: -2, flags: rw | flagFast, data: cmdZPop, since: "5.0.0", summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		z(&command{name: "zpopmax", arity: -2, flags: rw | flagFast, data: cmdZPop, since: "5.0.0", summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		z(&command{name: "zrandmember", arity: -2, flags: ro, data: cmdZRandMember, since: "6.2.0", summary: "Returns one or more random members from a sorted set."}),
		z(&command{name: "zunionstore", arity: -4, flags: rw, firstKey: 1, lastKey: 1, step: 1, movable: numKeys(2, 1), data: cmdZCombine, since: "2.0.0", summary: "Stores the union of multiple sorted sets in a key."}),
		z(&command{name: "zinterstore", arity: -4, flags: rw, firstKey: 1, lastKey: 1, step: 1, movable: numKeys(2, 1), data: cmdZCombine, since: "2.0.0", summary: "Stores the intersect of multiple sorted sets in a key."}),
		z(&command{name: "zdiffstore", arity: -4, flags: rw, firstKey: 1, lastKey: 1, step: 1, movable: numKeys(2, 1), data: cmdZCombine, since: "6.2.0", summary: "Stores the difference of multiple sorted sets in a key."}),
		z(&command{name: "zunion", arity: -3, flags: ro, firstKey: -1, movable: numKeys(1), data: cmdZCombine, since: "6.2.0", summary: "Returns the union of multiple sorted sets."}),
		z(&command{name: "zinter", arity: -3, flags: ro, firstKey: -1, movable: numKeys(1), data: cmdZCombine, since: "6.2.0", summary: "Returns the intersect of multiple sorted sets."}),
		z(&command{name: "zdiff", arity: -3, flags: ro, firstKey: -1, movable: numKeys(1), data: cmdZCombine, since: "6.2.0", summary: "Returns the difference between multiple sorted sets."}),
		z(&command{name: "zintercard", arity: -3, flags: ro, firstKey: -1, movable: numKeys(1), data: cmdZCombine, since: "7.0.0", summary: "Returns the number of members of the intersect of multiple sorted sets."}),
		z(&command{name: "zscan", arity: -3, flags: ro, data: cmdZScan, since: "2.8.0", summary: "Iterates over members and scores of a sorted set."}),
	)
}

// zsetErr answers the sorted-set functions' own errors in Redis's words.
func zsetErr(err error) string {
	switch {
	case errors.Is(err, collections.ErrNotFloat):
		return "ERR value is not a valid float"
	case errors.Is(err, collections.ErrScoreNaN):
		return "ERR resulting score is not a number (NaN)"
	}
	return errText(err)
}

// writeScore writes a score: a double in RESP3, its text in RESP2.
func writeScore(w *resp.Writer, text []byte) {
	if w.Proto() >= 3 {
		f, _ := collections.ParseScore(text)
		w.Double(f)
		return
	}
	w.Bulk(text)
}

// writeScored writes members, with their scores if asked (pairs in RESP3, a flat list in RESP2).
func writeScored(w *resp.Writer, ms []engine.Member, withScores bool) {
	switch {
	case !withScores:
		w.ArrayHeader(len(ms))
		for _, m := range ms {
			w.Bulk(m.Name)
		}
	case w.Proto() >= 3:
		w.ArrayHeader(len(ms))
		for _, m := range ms {
			w.ArrayHeader(2)
			w.Bulk(m.Name)
			writeScore(w, m.Item.Value)
		}
	default:
		w.ArrayHeader(2 * len(ms))
		for _, m := range ms {
			w.Bulk(m.Name)
			w.Bulk(m.Item.Value)
		}
	}
}

func cmdZAdd(s *session, args [][]byte) {
	flags, i := 0, 2
flagLoop:
	for ; i < len(args); i++ {
		switch {
		case eq(args[i], "nx"):
			flags |= collections.ZNX
		case eq(args[i], "xx"):
			flags |= collections.ZXX
		case eq(args[i], "gt"):
			flags |= collections.ZGT
		case eq(args[i], "lt"):
			flags |= collections.ZLT
		case eq(args[i], "ch"):
			flags |= collections.ZCH
		case eq(args[i], "incr"):
			flags |= collections.ZIncr
		default:
			break flagLoop
		}
	}
	pairs := args[i:]
	switch {
	case len(pairs) == 0 || len(pairs)%2 != 0:
		s.fail("ERR syntax error")
		return
	case flags&collections.ZNX != 0 && flags&collections.ZXX != 0:
		s.fail("ERR XX and NX options at the same time are not compatible")
		return
	case flags&collections.ZNX != 0 && flags&(collections.ZGT|collections.ZLT) != 0, flags&collections.ZGT != 0 && flags&collections.ZLT != 0:
		s.fail("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case flags&collections.ZIncr != 0 && len(pairs) != 2:
		s.fail("ERR INCR option supports a single increment-element pair")
		return
	}
	for j := 0; j < len(pairs); j += 2 {
		if _, ok := collections.ParseScore(pairs[j]); !ok {
			s.fail("ERR value is not a valid float")
			return
		}
	}
	s.add(collections.ZAdd(s.table(), args[1], flags, pairs...))
	if flags&collections.ZIncr != 0 {
		s.plan(replyZIncr)
		return
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(zsetErr(r.Err))
			return
		}
		w.Int(collections.Int(res[0]))
	})
}

// replyZIncr answers the new score, or nil when NX/XX/GT/LT prevented the change.
func replyZIncr(w *resp.Writer, res []engine.Result) {
	switch r := res[0]; {
	case errors.Is(r.Err, engine.ErrNotFound):
		w.Null()
	case r.Err != nil:
		w.Error(zsetErr(r.Err))
	default:
		writeScore(w, r.New.Value)
	}
}

func cmdZIncrBy(s *session, args [][]byte) {
	if _, ok := collections.ParseScore(args[2]); !ok {
		s.fail("ERR value is not a valid float")
		return
	}
	s.add(collections.ZAdd(s.table(), args[1], collections.ZIncr, args[2], args[3]))
	s.plan(replyZIncr)
}

func cmdZRem(s *session, args [][]byte) {
	s.add(collections.ZRem(s.table(), args[1], args[2:]...))
	s.plan(replyListInt)
}

func cmdZScore(s *session, args [][]byte) {
	multi := eq(args[0], "zmscore")
	s.add(collections.ZScore(s.table(), args[1], args[2:]...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case r.Err != nil:
			w.Error(errText(r.Err))
			return
		case !multi && (len(r.Members) == 0 || r.Members[0].Item.Flags == 0):
			w.Null()
			return
		case !multi:
			writeScore(w, r.Members[0].Item.Value)
			return
		}
		w.ArrayHeader(len(args) - 2)
		for i := range args[2:] {
			if i < len(r.Members) && r.Members[i].Item.Flags == 1 {
				writeScore(w, r.Members[i].Item.Value)
			} else {
				w.Null()
			}
		}
	})
}

// parseBounds checks a score or lex range's ends at compile time, with Redis's errors.
func (s *session) parseBounds(by string, lo, hi []byte) bool {
	var ok1, ok2 bool
	if by == "lex" {
		_, ok1 = collections.ParseLexBound(lo)
		_, ok2 = collections.ParseLexBound(hi)
		if !ok1 || !ok2 {
			s.fail("ERR min or max not valid string range item")
			return false
		}
		return true
	}
	_, ok1 = collections.ParseScoreBound(lo)
	_, ok2 = collections.ParseScoreBound(hi)
	if !ok1 || !ok2 {
		s.fail("ERR min or max is not a float")
		return false
	}
	return true
}

func cmdZCount(s *session, args [][]byte) {
	by := "score"
	if eq(args[0], "zlexcount") {
		by = "lex"
	}
	if !s.parseBounds(by, args[2], args[3]) {
		return
	}
	s.add(collections.ZRange(s.table(), args[1], collections.RangeSpec{By: by, Min: args[2], Max: args[3], Count: -1, Tally: true}))
	s.plan(replyNewInt)
}

func cmdZRank(s *session, args [][]byte) {
	withScore := len(args) == 4 && eq(args[3], "withscore")
	if len(args) > 4 || len(args) == 4 && !withScore {
		s.fail("ERR syntax error")
		return
	}
	s.add(collections.ZRank(s.table(), args[1], args[2], eq(args[0], "zrevrank")))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound) && withScore:
			w.NullArray()
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Null()
		case r.Err != nil:
			w.Error(errText(r.Err))
		case withScore:
			w.ArrayHeader(2)
			w.Int(collections.Int(r))
			writeScore(w, r.Old.Value)
		default:
			w.Int(collections.Int(r))
		}
	})
}

// cmdZRange serves ZRANGE in all its forms: the classic ZREVRANGE/ZRANGEBYSCORE/... names set the mode that
// ZRANGE's BYSCORE, BYLEX and REV options set; ZRANGESTORE stores instead of answering.
func cmdZRange(s *session, args [][]byte) {
	name := lower(args[0])
	store := name == "zrangestore"
	spec := collections.RangeSpec{By: "rank", Count: -1}
	key, rest := args[1], args[4:]
	spec.Min, spec.Max = args[2], args[3]
	var dst []byte
	if store {
		dst, key, spec.Min, spec.Max, rest = args[1], args[2], args[3], args[4], args[5:]
	}
	switch name {
	case "zrevrange":
		spec.Rev = true
	case "zrangebyscore":
		spec.By = "score"
	case "zrevrangebyscore":
		spec.By, spec.Rev = "score", true
	case "zrangebylex":
		spec.By = "lex"
	case "zrevrangebylex":
		spec.By, spec.Rev = "lex", true
	}
	classic := name != "zrange" && name != "zrangestore"
	withScores, limited := false, false
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case eq(a, "withscores") && !store && name != "zrangebylex" && name != "zrevrangebylex":
			withScores = true
		case eq(a, "byscore") && !classic:
			spec.By = "score"
		case eq(a, "bylex") && !classic:
			spec.By = "lex"
		case eq(a, "rev") && !classic:
			spec.Rev = true
		case eq(a, "limit") && i+2 < len(rest) && name != "zrevrange":
			n, ok := s.intArgs(rest[i+1], rest[i+2])
			if !ok {
				return
			}
			spec.Offset, spec.Count, limited = n[0], n[1], true
			i += 2
		default:
			s.fail("ERR syntax error")
			return
		}
	}
	if spec.Rev && spec.By != "rank" { // ZREVRANGEBYSCORE key max min, ZRANGE key max min BYSCORE REV
		spec.Min, spec.Max = spec.Max, spec.Min
	}
	switch {
	case limited && spec.By == "rank":
		s.fail("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	case withScores && spec.By == "lex":
		s.fail("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	case spec.By == "rank":
		if _, ok := s.intArgs(spec.Min, spec.Max); !ok {
			return
		}
	case !s.parseBounds(spec.By, spec.Min, spec.Max):
		return
	}
	if store {
		s.add(collections.ZRangeStore(s.table(), dst, key, spec))
		s.plan(replyListInt)
		return
	}
	s.add(collections.ZRange(s.table(), key, spec))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		writeScored(w, res[0].Members, withScores)
	})
}

func cmdZRemRange(s *session, args [][]byte) {
	spec := collections.RangeSpec{By: "rank", Min: args[2], Max: args[3], Count: -1}
	switch lower(args[0]) {
	case "zremrangebyscore":
		spec.By = "score"
	case "zremrangebylex":
		spec.By = "lex"
	}
	if spec.By == "rank" {
		if _, ok := s.intArgs(args[2], args[3]); !ok {
			return
		}
	} else if !s.parseBounds(spec.By, args[2], args[3]) {
		return
	}
	s.add(collections.ZRemRange(s.table(), args[1], spec))
	s.plan(replyListInt)
}

func cmdZPop(s *session, args [][]byte) {
	count, withCount := int64(1), len(args) == 3
	switch {
	case len(args) > 3:
		s.fail("ERR syntax error")
		return
	case withCount:
		n, ok := argInt(args[2])
		if !ok || n < 0 {
			s.fail("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	s.add(collections.ZPop(s.table(), args[1], eq(args[0], "zpopmax"), count))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case r.Err != nil:
			w.Error(errText(r.Err))
		case !withCount && w.Proto() >= 3 && len(r.Members) == 1:
			w.ArrayHeader(2)
			w.Bulk(r.Members[0].Name)
			writeScore(w, r.Members[0].Item.Value)
		default:
			writeScored(w, r.Members, true)
		}
	})
}

func cmdZRandMember(s *session, args [][]byte) {
	count, withCount, withScores, ok := s.randArgs(args, "withscores")
	if !ok {
		return
	}
	s.randPicks(args[1], engine.KindZSet, count, withCount, false, func(w *resp.Writer, picked []engine.Member) {
		writeScored(w, picked, withScores)
	})
}

// cmdZCombine serves ZUNION/ZINTER/ZDIFF, their STORE forms and ZINTERCARD.
func cmdZCombine(s *session, args [][]byte) {
	name := lower(args[0])
	store := name[len(name)-5:] == "store"
	op := map[string]string{"zunionstore": "union", "zinterstore": "inter", "zdiffstore": "diff", "zunion": "union",
		"zinter": "inter", "zdiff": "diff", "zintercard": "inter"}[name]
	var dst []byte
	rest := args[1:]
	if store {
		dst, rest = args[1], args[2:]
	}
	n, ok := argInt(rest[0])
	switch {
	case !ok:
		s.fail(errNotInt)
		return
	case n <= 0:
		s.fail("ERR at least 1 input key is needed for '" + name + "' command")
		return
	case n > int64(len(rest)-1):
		s.fail("ERR syntax error")
		return
	}
	c := collections.Combine{Op: op, Keys: rest[1 : 1+n], Aggregate: "sum"}
	withScores, limit := false, int64(0)
	opts := rest[1+n:]
	for i := 0; i < len(opts); i++ {
		switch a := opts[i]; {
		case eq(a, "weights") && op != "diff" && name != "zintercard" && i+int(n) < len(opts):
			for j := 1; j <= int(n); j++ {
				w, ok := collections.ParseScore(opts[i+j])
				if !ok {
					s.fail("ERR weight value is not a float")
					return
				}
				c.Weights = append(c.Weights, w)
			}
			i += int(n)
		case eq(a, "aggregate") && op != "diff" && name != "zintercard" && i+1 < len(opts):
			agg := lower(opts[i+1])
			if agg != "sum" && agg != "min" && agg != "max" {
				s.fail("ERR syntax error")
				return
			}
			c.Aggregate = agg
			i++
		case eq(a, "withscores") && !store && name != "zintercard":
			withScores = true
		case eq(a, "limit") && name == "zintercard" && i+1 < len(opts):
			l, ok := argInt(opts[i+1])
			if !ok || l < 0 {
				s.fail("ERR LIMIT can't be negative")
				return
			}
			limit = l
			i++
		default:
			s.fail("ERR syntax error")
			return
		}
	}
	if store {
		s.add(collections.ZCombine(s.table(), dst, c, true))
		s.plan(replyListInt)
		return
	}
	s.add(collections.ZCombine(s.table(), c.Keys[0], c, false))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		if name == "zintercard" {
			card := int64(len(res[0].Members))
			if limit > 0 {
				card = min(card, limit)
			}
			w.Int(card)
			return
		}
		writeScored(w, res[0].Members, withScores)
	})
}

func cmdZScan(s *session, args [][]byte) { collScan(s, args, engine.KindZSet) }
