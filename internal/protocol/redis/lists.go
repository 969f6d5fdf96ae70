package redis

import (
	"errors"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	l := func(c *command) *command { c.groupName = "list"; return c }
	register(
		l(&command{name: "lpush", arity: -3, flags: rw | flagFast, data: cmdPush, summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist."}),
		l(&command{name: "rpush", arity: -3, flags: rw | flagFast, data: cmdPush, summary: "Appends one or more elements to a list. Creates the key if it doesn't exist."}),
		l(&command{name: "lpushx", arity: -3, flags: rw | flagFast, data: cmdPush, since: "2.2.0", summary: "Prepends one or more elements to a list only when the list exists."}),
		l(&command{name: "rpushx", arity: -3, flags: rw | flagFast, data: cmdPush, since: "2.2.0", summary: "Appends an element to a list only when the list exists."}),
		l(&command{name: "lpop", arity: -2, flags: rw | flagFast, data: cmdPop, summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."}),
		l(&command{name: "rpop", arity: -2, flags: rw | flagFast, data: cmdPop, summary: "Returns and removes the last elements of the list. Deletes the list if the last element was popped."}),
		l(&command{name: "llen", arity: 2, flags: ro | flagFast, data: cmdCollLen(engine.KindList), summary: "Returns the length of a list."}),
		l(&command{name: "lrange", arity: 4, flags: ro, data: cmdLRange, summary: "Returns a range of elements from a list."}),
		l(&command{name: "lindex", arity: 3, flags: ro, data: cmdLIndex, summary: "Returns an element from a list by its index."}),
		l(&command{name: "lset", arity: 4, flags: rw, data: cmdLSet, summary: "Sets the value of an element in a list by its index."}),
		l(&command{name: "linsert", arity: 5, flags: rw, data: cmdLInsert, since: "2.2.0", summary: "Inserts an element before or after another element in a list."}),
		l(&command{name: "lrem", arity: 4, flags: rw, data: cmdLRem, summary: "Removes elements from a list. Deletes the list if the last element was removed."}),
		l(&command{name: "ltrim", arity: 4, flags: rw, data: cmdLTrim, summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed."}),
		l(&command{name: "lpos", arity: -3, flags: ro, data: cmdLPos, since: "6.0.6", summary: "Returns the index of matching elements in a list."}),
		l(&command{name: "lmove", arity: 5, flags: rw, lastKey: 2, data: cmdLMove, since: "6.2.0", summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."}),
		l(&command{name: "rpoplpush", arity: 3, flags: rw, lastKey: 2, data: cmdLMove, since: "1.2.0", summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."}),
	)
}

func cmdPush(s *session, args [][]byte) {
	name := lower(args[0])
	for _, v := range args[2:] {
		if s.valueTooBig(v) {
			return
		}
	}
	s.add(collections.Push(s.table(), args[1], name[0] == 'l', name[len(name)-1] == 'x', args[2:]...))
	s.plan(replyListInt)
}

// replyListInt answers a list function's integer result (a length, a count).
func replyListInt(w *resp.Writer, res []engine.Result) {
	if r := res[0]; r.Err != nil {
		w.Error(errText(r.Err))
		return
	}
	w.Int(collections.Int(res[0]))
}

func cmdPop(s *session, args [][]byte) {
	count := int64(-1)
	switch {
	case len(args) == 3:
		n, ok := argInt(args[2])
		if !ok || n < 0 {
			s.fail("ERR value is out of range, must be positive")
			return
		}
		count = n
	case len(args) > 3:
		s.fail("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return
	}
	s.add(collections.Pop(s.table(), args[1], lower(args[0]) == "lpop", count))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, engine.ErrNotFound) && count < 0:
			w.Null()
		case errors.Is(r.Err, engine.ErrNotFound):
			w.NullArray()
		case r.Err != nil:
			w.Error(errText(r.Err))
		case count < 0:
			w.Bulk(r.New.Value)
		default:
			writeElems(w, r.Members)
		}
	})
}

func writeElems(w *resp.Writer, ms []engine.Member) {
	w.ArrayHeader(len(ms))
	for _, m := range ms {
		w.Bulk(m.Item.Value)
	}
}

// intArgs parses integer arguments, failing the command with Redis's error if one is not an integer.
func (s *session) intArgs(args ...[]byte) ([]int64, bool) {
	out := make([]int64, len(args))
	for i, a := range args {
		n, ok := argInt(a)
		if !ok {
			s.fail(errNotInt)
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

func cmdLRange(s *session, args [][]byte) {
	n, ok := s.intArgs(args[2], args[3])
	if !ok {
		return
	}
	s.add(collections.RangeValues(s.table(), args[1], n[0], n[1]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		packed := res[0].New.Value
		w.ArrayHeader(collections.CountValues(packed))
		for v, rest, ok := collections.NextValue(packed); ok; v, rest, ok = collections.NextValue(rest) {
			w.Bulk(v)
		}
	})
}

func cmdLIndex(s *session, args [][]byte) {
	n, ok := argInt(args[2])
	if !ok {
		s.badArgAfterKey(args[1], engine.KindList, (*resp.Writer).Null, errNotInt)
		return
	}
	s.add(collections.Index(s.table(), args[1], n))
	s.plan(replyBulkOrNil)
}

// badArgAfterKey answers a bad argument of a command that, in Redis, looks at its key first: the reply for a
// missing key (missing), WRONGTYPE for a key of another kind than kind (a collection), and only then msg.
func (s *session) badArgAfterKey(key []byte, kind engine.Kind, missing func(*resp.Writer), msg string) {
	s.add(engine.Mutation{Op: engine.OpCheck, Table: s.table(), Key: key, Coll: engine.CollArgs{Kind: kind},
		Cond: engine.CondPresent})
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound):
			missing(w)
		case r.Err != nil:
			w.Error(errText(r.Err))
		default:
			w.Error(msg)
		}
	})
}

func cmdLSet(s *session, args [][]byte) {
	n, ok := argInt(args[2])
	if !ok {
		s.badArgAfterKey(args[1], engine.KindList, func(w *resp.Writer) { w.Error("ERR no such key") }, errNotInt)
		return
	}
	if s.valueTooBig(args[3]) {
		return
	}
	s.add(collections.Set(s.table(), args[1], n, args[3]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case r.Err == nil:
			w.SimpleString("OK")
		case errors.Is(r.Err, collections.ErrOutOfRange):
			w.Error("ERR index out of range")
		default:
			w.Error(errText(r.Err))
		}
	})
}

func cmdLInsert(s *session, args [][]byte) {
	before := eq(args[2], "before")
	if !before && !eq(args[2], "after") {
		s.fail("ERR syntax error")
		return
	}
	if s.valueTooBig(args[4]) {
		return
	}
	s.add(collections.Insert(s.table(), args[1], before, args[3], args[4]))
	s.plan(replyListInt)
}

func cmdLRem(s *session, args [][]byte) {
	n, ok := s.intArgs(args[2])
	if !ok {
		return
	}
	s.add(collections.Rem(s.table(), args[1], n[0], args[3]))
	s.plan(replyListInt)
}

func cmdLTrim(s *session, args [][]byte) {
	n, ok := s.intArgs(args[2], args[3])
	if !ok {
		return
	}
	s.add(collections.Trim(s.table(), args[1], n[0], n[1]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		w.SimpleString("OK")
	})
}

// cmdLPos reads the whole list and answers from it: O(list), as Redis's LPOS is in the worst case.
func cmdLPos(s *session, args [][]byte) {
	rank, count, maxLen, withCount := int64(1), int64(1), int64(0), false
	for i := 3; i < len(args); i += 2 {
		if i+1 >= len(args) {
			s.fail("ERR syntax error")
			return
		}
		n, ok := argInt(args[i+1])
		if !ok {
			s.fail(errNotInt)
			return
		}
		switch {
		case eq(args[i], "rank"):
			if n == 0 || n == -1<<63 {
				s.fail("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case eq(args[i], "count"):
			if n < 0 {
				s.fail("ERR COUNT can't be negative")
				return
			}
			count, withCount = n, true
		case eq(args[i], "maxlen"):
			if n < 0 {
				s.fail("ERR MAXLEN can't be negative")
				return
			}
			maxLen = n
		default:
			s.fail("ERR syntax error")
			return
		}
	}
	want := args[2]
	s.add(collections.Range(s.table(), args[1], 0, -1))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		ms := res[0].Members
		var found []int64
		skip := max(rank, -rank) - 1
		for k := 0; k < len(ms) && (maxLen == 0 || int64(k) < maxLen); k++ {
			i := k
			if rank < 0 {
				i = len(ms) - 1 - k
			}
			if string(ms[i].Item.Value) != string(want) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			found = append(found, int64(i))
			if count != 0 && int64(len(found)) == count {
				break
			}
		}
		switch {
		case withCount:
			w.ArrayHeader(len(found))
			for _, i := range found {
				w.Int(i)
			}
		case len(found) == 0:
			w.Null()
		default:
			w.Int(found[0])
		}
	})
}

func cmdLMove(s *session, args [][]byte) {
	fromLeft, toLeft := false, true // RPOPLPUSH
	if eq(args[0], "lmove") {
		var ok1, ok2 bool
		fromLeft, ok1 = leftOrRight(args[3])
		toLeft, ok2 = leftOrRight(args[4])
		if !ok1 || !ok2 {
			s.fail("ERR syntax error")
			return
		}
	}
	s.add(collections.Move(s.table(), args[1], s.table(), args[2], fromLeft, toLeft))
	s.plan(replyBulkOrNil)
}

func leftOrRight(a []byte) (left, ok bool) {
	switch {
	case eq(a, "left"):
		return true, true
	case eq(a, "right"):
		return false, true
	}
	return false, false
}
