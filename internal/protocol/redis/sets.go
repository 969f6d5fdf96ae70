package redis

import (
	"errors"
	"math/rand/v2"
	"sort"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	g := func(c *command) *command { c.groupName = "set"; return c }
	register(
		g(&command{name: "sadd", arity: -3, flags: rw | flagFast, data: cmdSAdd, summary: "Adds one or more members to a set. Creates the key if it doesn't exist."}),
		g(&command{name: "srem", arity: -3, flags: rw | flagFast, data: cmdSRem, summary: "Removes one or more members from a set. Deletes the set if the last member was removed."}),
		g(&command{name: "smembers", arity: 2, flags: ro, data: cmdSMembers, summary: "Returns all members of a set."}),
		g(&command{name: "sismember", arity: 3, flags: ro | flagFast, data: cmdSIsMember, summary: "Determines whether a member belongs to a set."}),
		g(&command{name: "smismember", arity: -3, flags: ro | flagFast, data: cmdSMIsMember, since: "6.2.0", summary: "Determines whether multiple members belong to a set."}),
		g(&command{name: "scard", arity: 2, flags: ro | flagFast, data: cmdCollLen(engine.KindSet), summary: "Returns the number of members in a set."}),
		g(&command{name: "srandmember", arity: -2, flags: ro, data: cmdSRandMember, summary: "Get one or multiple random members from a set"}),
		g(&command{name: "smove", arity: 4, flags: rw | flagFast, lastKey: 2, data: cmdSMove, summary: "Moves a member from one set to another."}),
		g(&command{name: "sinter", arity: -2, flags: ro, lastKey: -1, data: cmdSetAlgebra, summary: "Returns the intersect of multiple sets."}),
		g(&command{name: "sunion", arity: -2, flags: ro, lastKey: -1, data: cmdSetAlgebra, summary: "Returns the union of multiple sets."}),
		g(&command{name: "sdiff", arity: -2, flags: ro, lastKey: -1, data: cmdSetAlgebra, summary: "Returns the difference of multiple sets."}),
		g(&command{name: "sintercard", arity: -3, flags: ro, firstKey: -1, movable: numKeys(1), data: cmdSInterCard, since: "7.0.0", summary: "Returns the number of members of the intersect of multiple sets."}),
		g(&command{name: "sscan", arity: -3, flags: ro, data: cmdSScan, since: "2.8.0", summary: "Iterates over members of a set."}),
		g(&command{name: "spop", arity: -2, flags: rw | flagFast, data: cmdSPop, summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."}),
		g(&command{name: "sinterstore", arity: -3, flags: rw, lastKey: -1, data: cmdSStore, summary: "Stores the intersect of multiple sets in a key."}),
		g(&command{name: "sunionstore", arity: -3, flags: rw, lastKey: -1, data: cmdSStore, summary: "Stores the union of multiple sets in a key."}),
		g(&command{name: "sdiffstore", arity: -3, flags: rw, lastKey: -1, data: cmdSStore, summary: "Stores the difference of multiple sets in a key."}),
	)
}

// setMember is the empty value every set member holds.
var setMember = []byte{}

func cmdSAdd(s *session, args [][]byte) {
	for _, m := range args[2:] {
		mut := s.member(engine.OpMemberSet, engine.KindSet, args[1], m)
		// An existing member is left alone, as Redis leaves the set: no write, no new version (WATCH).
		mut.Value, mut.Cond = setMember, engine.CondAbsent
		s.add(mut)
	}
	s.plan(replyAdded)
}

func cmdSRem(s *session, args [][]byte) {
	for _, m := range args[2:] {
		s.add(s.member(engine.OpMemberDel, engine.KindSet, args[1], m))
	}
	s.plan(replyRemoved)
}

// writeSet writes names as a RESP3 set (an array in RESP2).
func writeSet(w *resp.Writer, names [][]byte) {
	w.SetHeader(len(names))
	for _, n := range names {
		w.Bulk(n)
	}
}

func memberNames(ms []engine.Member) [][]byte {
	out := make([][]byte, len(ms))
	for i := range ms {
		out[i] = ms[i].Name
	}
	return out
}

func cmdSMembers(s *session, args [][]byte) {
	s.members(engine.KindSet, args[1])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		writeSet(w, memberNames(res[0].Members))
	})
}

func cmdSIsMember(s *session, args [][]byte) {
	s.add(s.member(engine.OpMemberGet, engine.KindSet, args[1], args[2]))
	s.plan(replyOneIfOK)
}

func cmdSMIsMember(s *session, args [][]byte) {
	for _, m := range args[2:] {
		s.add(s.member(engine.OpMemberGet, engine.KindSet, args[1], m))
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if err := firstErr(res); err != nil {
			w.Error(errText(err))
			return
		}
		w.ArrayHeader(len(res))
		for i := range res {
			if res[i].Err == nil {
				w.Int(1)
			} else {
				w.Int(0)
			}
		}
	})
}

func cmdSRandMember(s *session, args [][]byte) {
	count, withCount := int64(1), len(args) == 3
	if len(args) > 3 {
		s.fail("ERR syntax error")
		return
	}
	if withCount {
		n, ok := s.randCount(args[2])
		if !ok || !s.picksBounded(n) || !s.roomForPicks(n) {
			return
		}
		count = n
	}
	s.randPicks(args[1], engine.KindSet, count, withCount, false, writePickedNames)
}

// cmdSMove moves a member atomically, in Redis's order: a missing source answers 0 whatever the target holds;
// then the source's and the target's kinds are checked and the member removed from the source, as guards of one
// group, so the add to the target happens only if all held, even inside a pipeline batch. A target that holds
// the member already is left as it was (a WATCH on it stays clean, as in Redis).
func cmdSMove(s *session, args [][]byte) {
	src, dst, member := args[1], args[2], args[3]
	if string(src) == string(dst) {
		s.add(s.member(engine.OpMemberGet, engine.KindSet, src, member))
		s.plan(replyOneIfOK)
		return
	}
	s.nextGroup()
	source := engine.Mutation{Op: engine.OpCheck, Table: s.table(), Key: src, Coll: engine.CollArgs{Kind: engine.KindSet},
		Cond: engine.CondPresent, Guard: true, Group: s.group}
	target := engine.Mutation{Op: engine.OpCheck, Table: s.table(), Key: dst, Coll: engine.CollArgs{Kind: engine.KindSet},
		Guard: true, Group: s.group}
	del := s.member(engine.OpMemberDel, engine.KindSet, src, member)
	del.Guard, del.Group = true, s.group
	add := s.member(engine.OpMemberSet, engine.KindSet, dst, member)
	add.Value, add.Cond, add.Group = setMember, engine.CondAbsent, s.group
	s.add(source)
	s.add(target)
	s.add(del)
	s.add(add)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if errors.Is(res[0].Err, engine.ErrNotFound) {
			w.Int(0) // no source: the rest of the group was aborted
			return
		}
		for _, r := range res[:3] {
			if r.Err != nil && !errors.Is(r.Err, engine.ErrNotFound) {
				w.Error(errText(r.Err))
				return
			}
		}
		if res[2].Err != nil {
			w.Int(0)
			return
		}
		if r := res[3]; r.Err != nil && !engine.IsConditionFailure(r.Err) {
			w.Error(errText(r.Err))
			return
		}
		w.Int(1)
	})
}

// setAlgebra computes SINTER, SUNION or SDIFF of the member lists, in member order.
func setAlgebra(op string, sets [][]engine.Member) [][]byte {
	count := map[string]int{}
	for i, ms := range sets {
		for _, m := range ms {
			switch {
			case op == "sdiff" && i > 0:
				delete(count, string(m.Name))
			case op == "sdiff":
				count[string(m.Name)] = 1
			default:
				count[string(m.Name)]++
			}
		}
	}
	var out [][]byte
	for name, n := range count {
		if op != "sinter" || n == len(sets) {
			out = append(out, []byte(name))
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i]) < string(out[j]) })
	return out
}

func cmdSetAlgebra(s *session, args [][]byte) {
	op := lower(args[0])
	for _, k := range args[1:] {
		s.members(engine.KindSet, k)
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if err := firstErr(res); err != nil {
			w.Error(errText(err))
			return
		}
		sets := make([][]engine.Member, len(res))
		for i := range res {
			sets[i] = res[i].Members
		}
		writeSet(w, setAlgebra(op, sets))
	})
}

func cmdSInterCard(s *session, args [][]byte) {
	n, ok := argInt(args[1])
	if !ok || n <= 0 {
		s.fail("ERR numkeys should be greater than 0")
		return
	}
	if n > int64(len(args)-2) {
		s.fail("ERR Number of keys can't be greater than number of args")
		return
	}
	keys, rest := args[2:2+n], args[2+n:]
	limit := int64(0)
	switch {
	case len(rest) == 2 && eq(rest[0], "limit"):
		l, ok := argInt(rest[1])
		if !ok || l < 0 {
			s.fail("ERR LIMIT can't be negative")
			return
		}
		limit = l
	case len(rest) != 0:
		s.fail("ERR syntax error")
		return
	}
	for _, k := range keys {
		s.members(engine.KindSet, k)
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if err := firstErr(res); err != nil {
			w.Error(errText(err))
			return
		}
		sets := make([][]engine.Member, len(res))
		for i := range res {
			sets[i] = res[i].Members
		}
		card := int64(len(setAlgebra("sinter", sets)))
		if limit > 0 {
			card = min(card, limit)
		}
		w.Int(card)
	})
}

func cmdSScan(s *session, args [][]byte) { collScan(s, args, engine.KindSet) }

func cmdSPop(s *session, args [][]byte) {
	count := int64(-1)
	switch {
	case len(args) > 3:
		s.fail("ERR syntax error")
		return
	case len(args) == 3:
		n, ok := argInt(args[2])
		if !ok || n < 0 {
			s.fail("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	s.add(collections.SPop(s.table(), args[1], count, rand.Uint64()))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, engine.ErrNotFound) && count < 0:
			w.Null()
		case errors.Is(r.Err, engine.ErrNotFound):
			writeSet(w, nil)
		case r.Err != nil:
			w.Error(errText(r.Err))
		case count < 0:
			w.Bulk(r.New.Value)
		default:
			writeSet(w, memberNames(r.Members))
		}
	})
}

func cmdSStore(s *session, args [][]byte) {
	op := map[string]string{"sinterstore": "inter", "sunionstore": "union", "sdiffstore": "diff"}[lower(args[0])]
	s.add(collections.SStore(s.table(), args[1], op, args[2:]...))
	s.plan(replyListInt)
}
