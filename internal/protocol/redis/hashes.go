package redis

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	h := func(c *command) *command { c.groupName = "hash"; return c }
	register(
		h(&command{name: "hset", arity: -4, flags: rw | flagFast, data: cmdHSet, since: "2.0.0", summary: "Creates or modifies the value of a field in a hash."}),
		h(&command{name: "hmset", arity: -4, flags: rw | flagFast, data: cmdHSet, since: "2.0.0", summary: "Sets the values of multiple fields."}),
		h(&command{name: "hsetnx", arity: 4, flags: rw | flagFast, data: cmdHSetNX, since: "2.0.0", summary: "Sets the value of a field in a hash only when the field doesn't exist."}),
		h(&command{name: "hget", arity: 3, flags: ro | flagFast, data: cmdHGet, since: "2.0.0", summary: "Returns the value of a field in a hash."}),
		h(&command{name: "hmget", arity: -3, flags: ro | flagFast, data: cmdHMGet, since: "2.0.0", summary: "Returns the values of all fields in a hash."}),
		h(&command{name: "hdel", arity: -3, flags: rw | flagFast, data: cmdHDel, since: "2.0.0", summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."}),
		h(&command{name: "hlen", arity: 2, flags: ro | flagFast, data: cmdCollLen(engine.KindHash), since: "2.0.0", summary: "Returns the number of fields in a hash."}),
		h(&command{name: "hexists", arity: 3, flags: ro | flagFast, data: cmdHExists, since: "2.0.0", summary: "Determines whether a field exists in a hash."}),
		h(&command{name: "hstrlen", arity: 3, flags: ro | flagFast, data: cmdHStrlen, since: "3.2.0", summary: "Returns the length of the value of a field."}),
		h(&command{name: "hincrby", arity: 4, flags: rw | flagFast, data: cmdHIncrBy, since: "2.0.0", summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."}),
		h(&command{name: "hincrbyfloat", arity: 4, flags: rw | flagFast, data: cmdHIncrByFloat, since: "2.6.0", summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."}),
		h(&command{name: "hgetall", arity: 2, flags: ro, data: cmdHGetAll, since: "2.0.0", summary: "Returns all fields and values in a hash."}),
		h(&command{name: "hkeys", arity: 2, flags: ro, data: cmdHGetAll, since: "2.0.0", summary: "Returns all fields in a hash."}),
		h(&command{name: "hvals", arity: 2, flags: ro, data: cmdHGetAll, since: "2.0.0", summary: "Returns all values in a hash."}),
		h(&command{name: "hrandfield", arity: -2, flags: ro, data: cmdHRandField, since: "6.2.0", summary: "Returns one or more random fields from a hash."}),
		h(&command{name: "hscan", arity: -3, flags: ro, data: cmdHScan, since: "2.8.0", summary: "Iterates over fields and values of a hash."}),
	)
}

// member builds a member op on the collection of kind at key.
func (s *session) member(op engine.Op, kind engine.Kind, key, member []byte) engine.Mutation {
	return engine.Mutation{Op: op, Table: s.table(), Key: key, Coll: engine.CollArgs{Kind: kind, Member: member}}
}

// firstErr returns the first error among results that is not a failed condition, which the command reports whole
// (WRONGTYPE, an engine error); nil if there is none.
func firstErr(res []engine.Result) error {
	for i := range res {
		if e := res[i].Err; e != nil && !engine.IsConditionFailure(e) {
			return e
		}
	}
	return nil
}

// replyAdded answers how many results created their member (HSET, SADD).
func replyAdded(w *resp.Writer, res []engine.Result) {
	if err := firstErr(res); err != nil {
		w.Error(errText(err))
		return
	}
	n := int64(0)
	for i := range res {
		if !res[i].OldFound {
			n++
		}
	}
	w.Int(n)
}

// replyRemoved answers how many results removed their member (HDEL, SREM).
func replyRemoved(w *resp.Writer, res []engine.Result) {
	if err := firstErr(res); err != nil {
		w.Error(errText(err))
		return
	}
	n := int64(0)
	for i := range res {
		if res[i].Err == nil {
			n++
		}
	}
	w.Int(n)
}

func cmdHSet(s *session, args [][]byte) {
	if len(args)%2 != 0 {
		s.fail("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return
	}
	for i := 2; i < len(args); i += 2 {
		if s.valueTooBig(args[i+1]) {
			return
		}
	}
	for i := 2; i < len(args); i += 2 {
		m := s.member(engine.OpMemberSet, engine.KindHash, args[1], args[i])
		m.Value = args[i+1]
		s.add(m)
	}
	if eq(args[0], "hmset") {
		s.plan(func(w *resp.Writer, res []engine.Result) {
			if err := firstErr(res); err != nil {
				w.Error(errText(err))
			} else {
				w.SimpleString("OK")
			}
		})
		return
	}
	s.plan(replyAdded)
}

func cmdHSetNX(s *session, args [][]byte) {
	if s.valueTooBig(args[3]) {
		return
	}
	m := s.member(engine.OpMemberSet, engine.KindHash, args[1], args[2])
	m.Value, m.Cond = args[3], engine.CondAbsent
	s.add(m)
	s.plan(replyOneIfOK)
}

func cmdHGet(s *session, args [][]byte) {
	s.add(s.member(engine.OpMemberGet, engine.KindHash, args[1], args[2]))
	s.plan(replyBulkOrNil)
}

func cmdHMGet(s *session, args [][]byte) {
	for _, f := range args[2:] {
		s.add(s.member(engine.OpMemberGet, engine.KindHash, args[1], f))
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if err := firstErr(res); err != nil {
			w.Error(errText(err))
			return
		}
		w.ArrayHeader(len(res))
		for i := range res {
			if res[i].Err != nil {
				w.Null()
			} else {
				w.Bulk(res[i].New.Value)
			}
		}
	})
}

func cmdHDel(s *session, args [][]byte) {
	for _, f := range args[2:] {
		s.add(s.member(engine.OpMemberDel, engine.KindHash, args[1], f))
	}
	s.plan(replyRemoved)
}

// cmdCollLen answers the member count of a collection of kind (HLEN, SCARD).
func cmdCollLen(kind engine.Kind) func(s *session, args [][]byte) {
	return func(s *session, args [][]byte) {
		s.getAny(args[1])
		s.plan(func(w *resp.Writer, res []engine.Result) {
			r := res[0]
			switch {
			case errors.Is(r.Err, engine.ErrNotFound):
				w.Int(0)
			case r.Err != nil:
				w.Error(errText(r.Err))
			case r.New.Kind != kind:
				w.Error(errText(engine.ErrWrongType))
			default:
				meta, err := engine.DecodeCollMeta(r.New.Value)
				if err != nil {
					w.Error(errText(err))
					return
				}
				w.Int(meta.Count)
			}
		})
	}
}

func cmdHExists(s *session, args [][]byte) {
	s.add(s.member(engine.OpMemberGet, engine.KindHash, args[1], args[2]))
	s.plan(replyOneIfOK)
}

func cmdHStrlen(s *session, args [][]byte) {
	s.add(s.member(engine.OpMemberGet, engine.KindHash, args[1], args[2]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case r.Err == nil:
			w.Int(int64(len(r.New.Value)))
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Int(0)
		default:
			w.Error(errText(r.Err))
		}
	})
}

func cmdHIncrBy(s *session, args [][]byte) {
	delta, ok := argInt(args[3])
	if !ok {
		s.fail(errNotInt)
		return
	}
	m := s.member(engine.OpMemberIncr, engine.KindHash, args[1], args[2])
	m.Incr = engine.IncrArgs{Delta: delta, Create: true}
	s.add(m)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case r.Err == nil:
			n, _ := argInt(r.New.Value)
			w.Int(n)
		case errors.Is(r.Err, engine.ErrNotInteger):
			w.Error("ERR hash value is not an integer")
		default:
			w.Error(errText(r.Err))
		}
	})
}

func cmdHIncrByFloat(s *session, args [][]byte) {
	if inf, _ := engine.IsInfText(string(args[3])); inf { // Redis refuses an infinite increment before anything else
		s.fail("ERR value is NaN or Infinity")
		return
	}
	if !engine.IsFloatText(args[3]) { // then a bad one, before the key's kind or the field's value
		s.fail("ERR value is not a valid float")
		return
	}
	m := s.member(engine.OpMemberIncrFloat, engine.KindHash, args[1], args[2])
	m.Value = args[3]
	s.add(m)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case r.Err == nil:
			w.Bulk(r.New.Value)
		case errors.Is(r.Err, engine.ErrNotFloat) && r.OldFound:
			w.Error("ERR hash value is not a float")
		default:
			w.Error(errText(r.Err))
		}
	})
}

// members adds an OpMembers read of the collection of kind at key.
func (s *session) members(kind engine.Kind, key []byte) {
	s.add(engine.Mutation{Op: engine.OpMembers, Table: s.table(), Key: key, Coll: engine.CollArgs{Kind: kind}})
}

func cmdHGetAll(s *session, args [][]byte) {
	name := lower(args[0])
	s.members(engine.KindHash, args[1])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		ms := res[0].Members
		switch name {
		case "hgetall":
			w.MapHeader(len(ms))
			for _, m := range ms {
				w.Bulk(m.Name)
				w.Bulk(m.Item.Value)
			}
		case "hkeys":
			w.ArrayHeader(len(ms))
			for _, m := range ms {
				w.Bulk(m.Name)
			}
		default:
			w.ArrayHeader(len(ms))
			for _, m := range ms {
				w.Bulk(m.Item.Value)
			}
		}
	})
}

// maxRandPicks bounds a negative count of HRANDFIELD, SRANDMEMBER and ZRANDMEMBER: the picks (repeats allowed)
// are built whole before the reply, about 80 bytes each, so SRANDMEMBER s -9223372036854775807 ran the process
// out of memory (a fatal error, which no recover catches). Redis streams them into the client's output buffer,
// a few bytes each, and dies the same way, more slowly.
const maxRandPicks = 1 << 20

// roomForPicks keeps the repeated picks one batch holds within maxRandPicks, and reports whether the command
// may join the batch. A batch holds every result until its replies are written, so 1,024 pipelined
// SRANDMEMBER s -1048576 (a 40 KB request) held a billion picks, 72 bytes each. In a pipeline the batch built
// so far runs first; inside EXEC, whose commands run as one batch, the command is refused instead. A count of
// zero or more picks distinct members: the collection itself bounds it.
func (s *session) roomForPicks(count int64) bool {
	if count >= 0 {
		return true
	}
	if s.batch.Len() == 0 {
		s.picks = 0
	}
	if s.picks-count > maxRandPicks && s.batch.Len() > 0 {
		if s.noBlock { // EXEC
			s.fail("ERR the transaction's random picks would exceed " + strconv.Itoa(maxRandPicks))
			return false
		}
		s.flush()
		s.picks = 0
	}
	s.picks -= count
	return true
}

// randCount parses the count of HRANDFIELD, SRANDMEMBER and ZRANDMEMBER: any integer but -2^63, as Redis.
func (s *session) randCount(arg []byte) (int64, bool) {
	n, ok := argInt(arg)
	switch {
	case !ok:
		s.fail(errNotInt)
	case n == math.MinInt64:
		s.fail("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	default:
		return n, true
	}
	return 0, false
}

// picksBounded refuses a count below -maxRandPicks, after Redis's own checks (so that their errors come first).
func (s *session) picksBounded(count int64) bool {
	if count < -maxRandPicks {
		s.fail("ERR value is out of range, value must between -" + strconv.Itoa(maxRandPicks) + " and 9223372036854775807")
		return false
	}
	return true
}

// picksTooBig answers an error, and reports so, when the reply of picks (their names, and values if values)
// would pass proto-max-bulk-len. A negative count repeats members: maxRandPicks bounds how many, not their bytes,
// and SRANDMEMBER s -5000 over one 1 MiB member asked for a 5 GB reply, built whole before it is sent: a fatal
// out-of-memory for the whole process (the audit's case). As LCS's table, the reply is refused instead.
func (s *session) picksTooBig(w *resp.Writer, picks []engine.Member, values bool) bool {
	limit, n := int64(s.h.limits.Load().MaxBulk), int64(0)
	for i := range picks {
		n += int64(len(picks[i].Name)) + 32 // the bulk's header, a score
		if values {
			n += int64(len(picks[i].Item.Value)) + 16
		}
		if n > limit {
			w.Error("ERR Insufficient memory, the reply of the random picks exceeds proto-max-bulk-len")
			return true
		}
	}
	return false
}

// randArgs parses HRANDFIELD's and ZRANDMEMBER's `[count [flag]]`. With the flag (WITHVALUES, WITHSCORES) the
// count is bounded by ±2^62 as in Redis, where the doubled reply length must not overflow.
func (s *session) randArgs(args [][]byte, flag string) (count int64, withCount, paired, ok bool) {
	if len(args) < 3 {
		return 1, false, false, true
	}
	if count, ok = s.randCount(args[2]); !ok {
		return 0, false, false, false
	}
	switch {
	case len(args) > 4 || len(args) == 4 && !eq(args[3], flag):
		s.fail("ERR syntax error")
		return 0, false, false, false
	case len(args) == 4 && (count < -math.MaxInt64/2 || count > math.MaxInt64/2):
		s.fail("ERR value is out of range")
		return 0, false, false, false
	case !s.picksBounded(count) || !s.roomForPicks(count):
		return 0, false, false, false
	}
	return count, true, len(args) == 4, true
}

func cmdHRandField(s *session, args [][]byte) {
	count, withCount, withValues, ok := s.randArgs(args, "withvalues")
	if !ok {
		return
	}
	s.randPicks(args[1], engine.KindHash, count, withCount, withValues, func(w *resp.Writer, picked []engine.Member) {
		switch {
		case withValues && w.Proto() >= 3:
			w.ArrayHeader(len(picked))
			for _, m := range picked {
				w.ArrayHeader(2)
				w.Bulk(m.Name)
				w.Bulk(m.Item.Value)
			}
		case withValues:
			w.ArrayHeader(2 * len(picked))
			for _, m := range picked {
				w.Bulk(m.Name)
				w.Bulk(m.Item.Value)
			}
		default:
			writePickedNames(w, picked)
		}
	})
}

// randPicks adds the random picks of the set, hash or sorted set (kind) at key and plans their reply, the same
// for SRANDMEMBER, HRANDFIELD and ZRANDMEMBER but for the form with a count: without one, a name or null; with
// one, what many writes, unless the picks' reply (with their values if values) would pass proto-max-bulk-len.
func (s *session) randPicks(key []byte, kind engine.Kind, count int64, withCount, values bool,
	many func(w *resp.Writer, picked []engine.Member)) {
	s.add(collections.RandMembers(s.table(), key, kind, count, rand.Uint64()))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		picked := res[0].Members
		switch {
		case res[0].Err != nil:
			w.Error(errText(res[0].Err))
		case !withCount && len(picked) == 0:
			w.Null()
		case !withCount:
			w.Bulk(picked[0].Name)
		case s.picksTooBig(w, picked, values):
		default:
			many(w, picked)
		}
	})
}

// writePickedNames writes the names of picks as an array.
func writePickedNames(w *resp.Writer, picked []engine.Member) {
	w.ArrayHeader(len(picked))
	for _, m := range picked {
		w.Bulk(m.Name)
	}
}

func cmdHScan(s *session, args [][]byte) { collScan(s, args, engine.KindHash) }
