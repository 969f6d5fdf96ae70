package redis

import (
	"errors"
	"math"
	"strconv"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/protocol/resp"
)

func init() {
	rw := flagWrite
	ro := flagReadonly
	register(
		&command{name: "get", arity: 2, flags: ro | flagFast, data: cmdGet, summary: "Returns the string value of a key."},
		&command{name: "set", arity: -3, flags: rw, data: cmdSet, summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."},
		&command{name: "setnx", arity: 3, flags: rw | flagFast, data: cmdSetNX, summary: "Set the string value of a key only when the key doesn't exist."},
		&command{name: "setex", arity: 4, flags: rw, data: cmdSetEX, summary: "Sets the string value and expiration time of a key."},
		&command{name: "psetex", arity: 4, flags: rw, data: cmdSetEX, summary: "Sets both string value and expiration time in milliseconds of a key."},
		&command{name: "getset", arity: 3, flags: rw | flagFast, data: cmdGetSet, summary: "Returns the previous string value of a key after setting it to a new value."},
		&command{name: "getdel", arity: 2, flags: rw | flagFast, data: cmdGetDel, summary: "Returns the string value of a key after deleting the key."},
		&command{name: "getex", arity: -2, flags: rw | flagFast, data: cmdGetEx, summary: "Returns the string value of a key after setting its expiration time."},
		&command{name: "mget", arity: -2, flags: ro | flagFast, lastKey: -1, data: cmdMGet, summary: "Atomically returns the string values of one or more keys."},
		&command{name: "mset", arity: -3, flags: rw, lastKey: -1, step: 2, data: cmdMSet, summary: "Atomically creates or modifies the string values of one or more keys."},
		&command{name: "msetnx", arity: -3, flags: rw, lastKey: -1, step: 2, data: cmdMSetNX, summary: "Atomically modifies the string values of one or more keys only when all keys don't exist."},
		&command{name: "append", arity: 3, flags: rw | flagFast, data: cmdAppend, summary: "Appends a string to the value of a key. Creates the key if it doesn't exist."},
		&command{name: "strlen", arity: 2, flags: ro | flagFast, data: cmdStrlen, summary: "Returns the length of a string value."},
		&command{name: "getrange", arity: 4, flags: ro, data: cmdGetRange, summary: "Returns a substring of the string stored at a key."},
		&command{name: "substr", arity: 4, flags: ro, data: cmdGetRange, summary: "Returns a substring from a string value."},
		&command{name: "setrange", arity: 4, flags: rw, data: cmdSetRange, summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."},
		&command{name: "incr", arity: 2, flags: rw | flagFast, data: cmdIncr, summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		&command{name: "decr", arity: 2, flags: rw | flagFast, data: cmdIncr, summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		&command{name: "incrby", arity: 3, flags: rw | flagFast, data: cmdIncr, summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
		&command{name: "decrby", arity: 3, flags: rw | flagFast, data: cmdIncr, summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."},
		&command{name: "incrbyfloat", arity: 3, flags: rw | flagFast, data: cmdIncrByFloat, summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
	)
}

// eq reports whether arg equals the lower-case word, ignoring ASCII case.
func eq(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i, c := range arg {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

// argInt parses an integer argument as Redis does.
func argInt(b []byte) (int64, bool) { return engine.ParseInt(b) }

const errSyntax = "ERR syntax error"
const errNotInt = "ERR value is not an integer or out of range"

// valueTooBig fails the command if val exceeds the store's value limit, so one oversized command cannot fail a
// whole pipeline batch. (Key arguments were checked against the key limit in dispatch, by the key spec.)
func (s *session) valueTooBig(val []byte) bool {
	if len(val) > s.h.store.Limits().MaxValue {
		s.fail("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return true
	}
	return false
}

// absExpiry turns an EX/PX/EXAT/PXAT amount into absolute unix ms, or returns false if Redis would call it an
// invalid expire time.
func (s *session) absExpiry(unit string, n int64) (int64, bool) {
	switch unit {
	case "ex":
		return kv.ExpiresIn(s.h.store.Now(), n, time.Second)
	case "px":
		return kv.ExpiresIn(s.h.store.Now(), n, time.Millisecond)
	case "exat":
		return kv.ExpiresAt(n, time.Second)
	}
	return kv.ExpiresAt(n, time.Millisecond)
}

func isExpiryOpt(a []byte) bool { return eq(a, "ex") || eq(a, "px") || eq(a, "exat") || eq(a, "pxat") }

// expiryOpt parses the amount of an EX/PX/EXAT/PXAT option into absolute unix ms; on a bad amount it fails the
// command with Redis's error for cmd and returns false.
func (s *session) expiryOpt(opt, amount []byte, cmd string) (int64, bool) {
	at, msg := s.expiryOf(opt, amount, cmd)
	if msg != "" {
		s.fail(msg)
		return 0, false
	}
	return at, true
}

// expiryOf is expiryOpt's absolute expiry, or the error reply ("" if none) instead of failing the command.
func (s *session) expiryOf(opt, amount []byte, cmd string) (int64, string) {
	n, ok := argInt(amount)
	if !ok {
		return 0, errNotInt
	}
	at, ok := s.absExpiry(lower(opt), n)
	if n <= 0 || !ok {
		return 0, "ERR invalid expire time in '" + cmd + "' command"
	}
	return at, ""
}

// Reply writers shared by several commands; plain functions so pipelined commands allocate no closure.

// readFailed writes the error reply of a read command if one of its reads failed with anything but
// ErrNotFound (a corrupt block, a closed engine): only ErrNotFound means "absent". It reports whether it did.
func readFailed(w *resp.Writer, res []engine.Result) bool {
	for i := range res {
		if err := res[i].Err; err != nil && !errors.Is(err, engine.ErrNotFound) {
			w.Error(errText(err))
			return true
		}
	}
	return false
}

func replyBulkOrNil(w *resp.Writer, res []engine.Result) {
	switch r := res[0]; {
	case r.Err == nil:
		w.Bulk(r.New.Value)
	case errors.Is(r.Err, engine.ErrNotFound):
		w.Null()
	default:
		w.Error(errText(r.Err))
	}
}

func replyOldOrNil(w *resp.Writer, res []engine.Result) {
	switch r := res[0]; {
	case r.Err != nil && !engine.IsConditionFailure(r.Err):
		w.Error(errText(r.Err))
	case r.OldFound:
		w.Bulk(r.Old.Value)
	default:
		w.Null()
	}
}

func replyOKOrNil(w *resp.Writer, res []engine.Result) {
	switch r := res[0]; {
	case r.Err == nil:
		w.SimpleString("OK")
	case engine.IsConditionFailure(r.Err):
		w.Null()
	default:
		w.Error(errText(r.Err))
	}
}

func replyOneIfOK(w *resp.Writer, res []engine.Result) {
	switch r := res[0]; {
	case r.Err == nil:
		w.Int(1)
	case engine.IsConditionFailure(r.Err) || errors.Is(r.Err, engine.ErrAborted):
		w.Int(0)
	default:
		w.Error(errText(r.Err))
	}
}

func replyNewInt(w *resp.Writer, res []engine.Result) {
	if r := res[0]; r.Err != nil {
		w.Error(errText(r.Err))
	} else {
		n, _ := strconv.ParseInt(string(r.New.Value), 10, 64)
		w.Int(n)
	}
}

func replyNewLen(w *resp.Writer, res []engine.Result) {
	if r := res[0]; r.Err != nil {
		w.Error(errText(r.Err))
	} else {
		w.Int(int64(len(r.New.Value)))
	}
}

// get reads a string: a collection at the key answers WRONGTYPE.
func (s *session) get(key []byte) {
	m := s.batch.Next()
	m.Op, m.Table, m.Key = engine.OpGet, s.table(), key
}

// getPart is get for a reply that carries none of the value, only what it computes from it (STRLEN, bit reads:
// engine.Mutation.Partial).
func (s *session) getPart(key []byte) {
	m := s.batch.Next()
	m.Op, m.Table, m.Key, m.Partial = engine.OpGet, s.table(), key, true
}

// getAny reads an item of any kind (OBJECT, MEMORY USAGE, a collection's meta).
func (s *session) getAny(key []byte) {
	s.add(engine.Mutation{Op: engine.OpGet, Table: s.table(), Key: key, AnyKind: true})
}

// getKind reads an item of any kind without its value (EXISTS, TYPE, TTL).
func (s *session) getKind(key []byte) {
	s.add(engine.Mutation{Op: engine.OpGet, Table: s.table(), Key: key, AnyKind: true, NoValue: true})
}

func cmdGet(s *session, args [][]byte) {
	s.get(args[1])
	s.plan(replyBulkOrNil)
}

// setOptions parses SET's options from args[3:].
func cmdSet(s *session, args [][]byte) {
	if s.valueTooBig(args[2]) {
		return
	}
	m := engine.Mutation{Op: engine.OpSet, Table: s.table(), Key: args[1], Value: args[2]}
	get, expSeen := false, false
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx") && m.Cond != engine.CondPresent: // a repeated option is accepted, as in Redis
			m.Cond = engine.CondAbsent
		case eq(a, "xx") && m.Cond != engine.CondAbsent:
			m.Cond = engine.CondPresent
		case eq(a, "get"):
			get = true
		case eq(a, "keepttl") && !expSeen:
			m.Set.KeepTTL, expSeen = true, true
		case isExpiryOpt(a) && !expSeen && i+1 < len(args):
			at, ok := s.expiryOpt(a, args[i+1], "set")
			if !ok {
				return
			}
			m.Expires, expSeen = at, true
			i++
		default:
			s.fail(errSyntax)
			return
		}
	}
	m.Set.Blind = !get
	m.AnyKind = !get // SET replaces a value of any kind; SET ... GET needs a string to return
	s.add(m)
	switch {
	case get:
		s.plan(replyOldOrNil)
	case m.Cond != engine.CondNone:
		s.plan(replyOKOrNil)
	default:
		s.plan(nil)
	}
}

func cmdSetNX(s *session, args [][]byte) {
	if s.valueTooBig(args[2]) {
		return
	}
	// AnyKind: as SET NX, a key of any kind is there (0), not of the wrong type
	s.add(engine.Mutation{Op: engine.OpSet, Table: s.table(), Key: args[1], Value: args[2], Cond: engine.CondAbsent,
		AnyKind: true, Set: engine.SetArgs{Blind: true}})
	s.plan(replyOneIfOK)
}

func cmdSetEX(s *session, args [][]byte) {
	if s.valueTooBig(args[3]) {
		return
	}
	name := lower(args[0])
	n, ok := argInt(args[2])
	if !ok {
		s.fail(errNotInt)
		return
	}
	unit := "ex"
	if name == "psetex" {
		unit = "px"
	}
	at, ok := s.absExpiry(unit, n)
	if n <= 0 || !ok {
		s.fail("ERR invalid expire time in '" + name + "' command")
		return
	}
	s.add(engine.Mutation{Op: engine.OpSet, Table: s.table(), Key: args[1], Value: args[3], Expires: at, Set: engine.SetArgs{Blind: true}})
	s.plan(nil)
}

func cmdGetSet(s *session, args [][]byte) {
	if s.valueTooBig(args[2]) {
		return
	}
	s.add(engine.Mutation{Op: engine.OpSet, Table: s.table(), Key: args[1], Value: args[2]})
	s.plan(replyOldOrNil)
}

func cmdGetDel(s *session, args [][]byte) {
	s.add(engine.Mutation{Op: engine.OpDelete, Table: s.table(), Key: args[1]})
	s.plan(replyOldOrNil)
}

func cmdGetEx(s *session, args [][]byte) {
	m := engine.Mutation{Op: engine.OpGet, Table: s.table(), Key: args[1]}
	badExpiry := "" // the error reply of an expiry option's bad time, answered only for a string (below)
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "persist") && !m.Touch && badExpiry == "":
			m.Touch, m.Expires = true, 0
		case isExpiryOpt(a) && !m.Touch && i+1 < len(args) && badExpiry == "":
			at, msg := s.expiryOf(a, args[i+1], "getex")
			m.Touch, m.Expires, badExpiry = msg == "", at, msg
			i++
		default:
			s.fail(errSyntax)
			return
		}
	}
	if badExpiry != "" {
		// As Redis, the time is read only once the key is found to hold a string: a missing key is nil and
		// another kind WRONGTYPE whatever it is (the read touches nothing).
		m.Touch, m.Expires = false, 0
		s.add(m)
		s.plan(func(w *resp.Writer, res []engine.Result) {
			if res[0].Err == nil {
				w.Error(badExpiry)
			} else {
				replyBulkOrNil(w, res)
			}
		})
		return
	}
	s.add(m)
	s.plan(replyBulkOrNil)
}

func cmdMGet(s *session, args [][]byte) {
	for _, k := range args[1:] {
		s.get(k)
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		for i := range res {
			if errors.Is(res[i].Err, engine.ErrWrongType) {
				res[i].Err = engine.ErrNotFound
			}
		}
		if readFailed(w, res) {
			return
		}
		w.ArrayHeader(len(res))
		for i := range res {
			if res[i].Err == nil {
				w.Bulk(res[i].New.Value)
			} else {
				w.Null()
			}
		}
	})
}

// checkPairs validates the key/value pairs of MSET and MSETNX.
func (s *session) checkPairs(args [][]byte) bool {
	if len(args)%2 != 1 {
		s.fail("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
		return false
	}
	for i := 1; i < len(args); i += 2 {
		if s.valueTooBig(args[i+1]) {
			return false
		}
	}
	return true
}

// addSets adds one set per pair, in a guard group when group is non-zero.
func (s *session) addSets(args [][]byte, group uint32) {
	for i := 1; i < len(args); i += 2 {
		s.add(engine.Mutation{Op: engine.OpSet, Table: s.table(), Key: args[i], Value: args[i+1], Group: group, Set: engine.SetArgs{Blind: true}})
	}
}

func cmdMSet(s *session, args [][]byte) {
	if s.checkPairs(args) {
		s.addSets(args, 0)
		s.plan(func(w *resp.Writer, res []engine.Result) { w.SimpleString("OK") })
	}
}

// cmdMSetNX guards its sets with one absent-check per distinct key in a guard group of its own, so it is all
// or nothing even inside a transaction or a pipeline batch, and a key named twice takes its last value.
// nextGroup takes a fresh guard group for a command whose guards abort only its own mutations (MSETNX, SMOVE);
// 0 means no group (a guard then aborts the whole batch), so the counter skips it when it wraps.
func (s *session) nextGroup() {
	s.group++
	if s.group == 0 {
		s.group = 1
	}
}

func cmdMSetNX(s *session, args [][]byte) {
	if !s.checkPairs(args) {
		return
	}
	s.nextGroup()
	seen := make(map[string]bool, len(args)/2)
	n := 0
	for i := 1; i < len(args); i += 2 {
		if !seen[string(args[i])] {
			seen[string(args[i])] = true
			s.add(engine.Mutation{Op: engine.OpCheck, Table: s.table(), Key: args[i], Cond: engine.CondAbsent,
				Guard: true, Group: s.group})
			n++
		}
	}
	s.addSets(args, s.group)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if last := res[len(res)-1]; errors.Is(last.Err, engine.ErrAborted) {
			w.Int(0)
		} else if last.Err != nil {
			w.Error(errText(last.Err))
		} else {
			w.Int(1)
		}
	})
}

func cmdAppend(s *session, args [][]byte) {
	if s.valueTooBig(args[2]) {
		return
	}
	// MaxSize here, not only in kv's check of a batch: a script's commands reach the engine through its Tx,
	// which does not run that check, and APPEND in a script grew a value past --max-value-size without bound.
	s.add(engine.Mutation{Op: engine.OpAppend, Table: s.table(), Key: args[1], Value: args[2],
		Edit: engine.EditArgs{Create: true, MaxSize: s.h.store.Limits().MaxValue}})
	s.plan(replyNewLen)
}

func cmdStrlen(s *session, args [][]byte) {
	s.getPart(args[1])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if !readFailed(w, res) {
			w.Int(int64(len(res[0].New.Value)))
		}
	})
}

func cmdGetRange(s *session, args [][]byte) {
	start, ok1 := argInt(args[2])
	end, ok2 := argInt(args[3])
	if !ok1 || !ok2 {
		s.fail(errNotInt)
		return
	}
	s.get(args[1]) // its reply may carry all of the value
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if readFailed(w, res) {
			return
		}
		v := res[0].New.Value
		n := int64(len(v))
		if start < 0 && end < 0 && start > end {
			w.BulkString("")
			return
		}
		if start < 0 {
			start = max(n+start, 0)
		}
		if end < 0 {
			end = max(n+end, 0)
		}
		end = min(end, n-1)
		if start > end || n == 0 {
			w.BulkString("")
			return
		}
		w.Bulk(v[start : end+1])
	})
}

func cmdSetRange(s *session, args [][]byte) {
	off, ok := argInt(args[2])
	if !ok {
		s.fail(errNotInt)
		return
	}
	if off < 0 {
		s.fail("ERR offset is out of range")
		return
	}
	// The engine refuses an end past the value limit (ErrTooLarge, Redis's proto-max-bulk-len error), after the
	// key's kind and an empty value, as Redis orders them: WRONGTYPE, then the current length for "", then the size.
	// MaxSize is set here as APPEND's is (a script's commands are not checked by kv).
	s.add(engine.Mutation{Op: engine.OpSetRange, Table: s.table(), Key: args[1], Value: args[3],
		Edit: engine.EditArgs{Offset: off, MaxSize: s.h.store.Limits().MaxValue}})
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
		} else {
			w.Int(int64(len(r.New.Value)))
		}
	})
}

func cmdIncr(s *session, args [][]byte) {
	delta := int64(1)
	name := lower(args[0])
	if len(args) == 3 {
		n, ok := argInt(args[2])
		if !ok {
			s.fail(errNotInt)
			return
		}
		delta = n
	}
	if name == "decr" || name == "decrby" {
		if delta == math.MinInt64 {
			s.fail("ERR decrement would overflow")
			return
		}
		delta = -delta
	}
	s.add(engine.Mutation{Op: engine.OpIncr, Table: s.table(), Key: args[1], Incr: engine.IncrArgs{Delta: delta, Create: true}})
	s.plan(replyNewInt)
}

func cmdIncrByFloat(s *session, args [][]byte) {
	// The engine parses the increment in long double precision, as Redis does, and answers ErrNotFloat.
	s.add(engine.Mutation{Op: engine.OpIncrFloat, Table: s.table(), Key: args[1], Value: args[2]})
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
		} else {
			w.Bulk(r.New.Value)
		}
	})
}
