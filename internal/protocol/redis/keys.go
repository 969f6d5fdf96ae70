package redis

import (
	"errors"
	"math"

	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	register(
		&command{name: "del", arity: -2, flags: rw, lastKey: -1, data: cmdDel, summary: "Deletes one or more keys."},
		&command{name: "unlink", arity: -2, flags: rw | flagFast, lastKey: -1, data: cmdDel, summary: "Asynchronously deletes one or more keys."},
		&command{name: "exists", arity: -2, flags: ro | flagFast, lastKey: -1, data: cmdExists, summary: "Determines whether one or more keys exist."},
		&command{name: "type", arity: 2, flags: ro | flagFast, data: cmdType, summary: "Determines the type of value stored at a key."},
		&command{name: "rename", arity: 3, flags: rw, lastKey: 2, data: cmdRename, summary: "Renames a key and overwrites the destination."},
		&command{name: "renamenx", arity: 3, flags: rw | flagFast, lastKey: 2, data: cmdRename, summary: "Renames a key only when the target key name doesn't exist."},
		&command{name: "move", arity: 3, flags: rw | flagFast, data: cmdMove, summary: "Moves a key to another database."},
		&command{name: "copy", arity: -3, flags: rw, lastKey: 2, data: cmdCopy, summary: "Copies the value of a key to a new key."},
		&command{name: "flushdb", arity: -1, flags: rw | flagAdmin, firstKey: -1, data: cmdFlush, summary: "Remove all keys from the current database."},
		&command{name: "swapdb", arity: 3, flags: rw | flagFast, firstKey: -1, data: cmdSwapDB, summary: "Swaps two Redis databases."},
		&command{name: "flushall", arity: -1, flags: rw | flagAdmin, firstKey: -1, data: cmdFlush, summary: "Removes all keys from all databases."},
		&command{name: "expire", arity: -3, flags: rw | flagFast, data: cmdExpire, summary: "Sets the expiration time of a key in seconds."},
		&command{name: "pexpire", arity: -3, flags: rw | flagFast, data: cmdExpire, summary: "Sets the expiration time of a key in milliseconds."},
		&command{name: "expireat", arity: -3, flags: rw | flagFast, data: cmdExpire, summary: "Sets the expiration time of a key to a Unix timestamp."},
		&command{name: "pexpireat", arity: -3, flags: rw | flagFast, data: cmdExpire, summary: "Sets the expiration time of a key to a Unix milliseconds timestamp."},
		&command{name: "persist", arity: 2, flags: rw | flagFast, data: cmdPersist, summary: "Removes the expiration time of a key."},
		&command{name: "ttl", arity: 2, flags: ro | flagFast, data: cmdTTL, summary: "Returns the expiration time in seconds of a key."},
		&command{name: "pttl", arity: 2, flags: ro | flagFast, data: cmdTTL, summary: "Returns the expiration time in milliseconds of a key."},
		&command{name: "expiretime", arity: 2, flags: ro | flagFast, data: cmdTTL, summary: "Returns the expiration time of a key as a Unix timestamp."},
		&command{name: "pexpiretime", arity: 2, flags: ro | flagFast, data: cmdTTL, summary: "Returns the expiration time of a key as a Unix milliseconds timestamp."},
	)
}

func cmdDel(s *session, args [][]byte) {
	for _, k := range args[1:] {
		s.add(engine.Mutation{Op: engine.OpDelete, Table: s.table(), Key: k, AnyKind: true})
	}
	s.plan(replyCountOK)
}

// replyCountOK answers how many of the mutations succeeded (DEL, EXISTS); a miss counts 0, any other error is
// the reply.
func replyCountOK(w *resp.Writer, res []engine.Result) {
	if readFailed(w, res) {
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

func cmdExists(s *session, args [][]byte) {
	for _, k := range args[1:] {
		s.getKind(k)
	}
	s.plan(replyCountOK)
}

func cmdType(s *session, args [][]byte) {
	s.getKind(args[1])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if readFailed(w, res) {
			return
		}
		if res[0].Err == nil {
			w.SimpleString(res[0].New.Kind.String())
		} else {
			w.SimpleString("none")
		}
	})
}

func cmdRename(s *session, args [][]byte) {
	nx := eq(args[0], "renamenx")
	if string(args[1]) == string(args[2]) { // Redis: no change, only the key's existence is checked
		s.add(engine.Mutation{Op: engine.OpCheck, Table: s.table(), Key: args[1], Cond: engine.CondPresent})
		s.plan(func(w *resp.Writer, res []engine.Result) {
			switch r := res[0]; {
			case errors.Is(r.Err, engine.ErrNotFound):
				w.Error("ERR no such key")
			case r.Err != nil:
				w.Error(errText(r.Err))
			case nx:
				w.Int(0)
			default:
				w.SimpleString("OK")
			}
		})
		return
	}
	m := engine.Mutation{Op: engine.OpRename, Table: s.table(), Key: args[1], Target: engine.Target{Table: s.table(), Key: args[2]}}
	if nx {
		m.Cond = engine.CondAbsent
	}
	s.add(m)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case r.Err == nil && nx:
			w.Int(1)
		case r.Err == nil:
			w.SimpleString("OK")
		case !r.OldFound && errors.Is(r.Err, engine.ErrNotFound):
			w.Error("ERR no such key")
		case nx && engine.IsConditionFailure(r.Err):
			w.Int(0)
		default:
			w.Error(errText(r.Err))
		}
	})
}

// cmdMove moves a key, its time to live included, into database n unless a key of that name is there already.
func cmdMove(s *session, args [][]byte) {
	n, ok := argInt(args[2])
	switch {
	case !ok:
		s.fail(errNotInt)
	case n < math.MinInt32 || n > math.MaxInt32:
		s.fail("ERR value is out of range, value must between -2147483648 and 2147483647")
	case n < 0 || n >= int64(s.h.opts.Databases):
		s.fail("ERR DB index is out of range")
	case int(n) == s.db:
		s.fail("ERR source and destination objects are the same")
	default:
		s.add(engine.Mutation{Op: engine.OpRename, Table: s.table(), Key: args[1],
			Target: engine.Target{Table: table(int(n)), Key: args[1]}, Cond: engine.CondAbsent})
		s.plan(replyOneIfOK)
	}
}

func cmdCopy(s *session, args [][]byte) {
	m := engine.Mutation{Op: engine.OpCopy, Table: s.table(), Key: args[1], Target: engine.Target{Table: s.table(), Key: args[2]}, Cond: engine.CondAbsent}
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "replace"):
			m.Cond = engine.CondNone
		case eq(args[i], "db") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				s.fail(errNotInt)
				return
			}
			if n < 0 || n >= int64(s.h.opts.Databases) {
				s.fail("ERR DB index is out of range")
				return
			}
			m.Target.Table = table(int(n))
			i++
		default:
			s.fail(errSyntax)
			return
		}
	}
	if m.Table == m.Target.Table && string(m.Key) == string(m.Target.Key) {
		s.fail("ERR source and destination objects are the same")
		return
	}
	s.add(m)
	s.plan(replyOneIfOK)
}

// cmdSwapDB swaps two databases: their items trade tables in one batch (engine.OpSwap, a copy of both, where
// Redis swaps two pointers; docs/resp.md). Swapping a database with itself changes nothing and touches no WATCH.
func cmdSwapDB(s *session, args [][]byte) {
	var db [2]int64
	for i, msg := range []string{"ERR invalid first DB index", "ERR invalid second DB index"} {
		n, ok := argInt(args[1+i])
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			s.fail(msg)
			return
		}
		db[i] = n
	}
	for _, n := range db {
		if n < 0 || n >= int64(s.h.opts.Databases) {
			s.fail("ERR DB index is out of range")
			return
		}
	}
	if db[0] != db[1] {
		s.add(engine.Mutation{Op: engine.OpSwap, Table: table(int(db[0])), Target: engine.Target{Table: table(int(db[1]))}})
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if len(res) > 0 && res[0].Err != nil {
			w.Error(errText(res[0].Err))
			return
		}
		w.SimpleString("OK")
	})
}

func cmdFlush(s *session, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "async") && !eq(args[1], "sync")) {
		s.fail(errSyntax)
		return
	}
	m := engine.Mutation{Op: engine.OpFlush}
	if eq(args[0], "flushdb") {
		m.Table = s.table()
	}
	s.add(m)
	s.plan(nil)
}

func cmdExpire(s *session, args [][]byte) {
	name := lower(args[0])
	n, ok := argInt(args[2])
	if !ok {
		s.fail(errNotInt)
		return
	}
	m := engine.Mutation{Op: engine.OpExpire, Table: s.table(), Key: args[1]}
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch {
		case eq(a, "nx"):
			nx = true
		case eq(a, "xx"):
			xx = true
		case eq(a, "gt"):
			gt = true
		case eq(a, "lt"):
			lt = true
		default:
			s.fail("ERR Unsupported option " + clip(a))
			return
		}
	}
	switch {
	case nx && (xx || gt || lt):
		s.fail("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	case gt && lt:
		s.fail("ERR GT and LT options at the same time are not compatible")
		return
	case nx:
		m.Expire.Cond = engine.ExpNX
	case gt: // GT already requires an expiry, so XX adds nothing
		m.Expire.Cond = engine.ExpGT
	case lt && xx:
		m.Expire.Cond = engine.ExpXXLT
	case lt:
		m.Expire.Cond = engine.ExpLT
	case xx:
		m.Expire.Cond = engine.ExpXX
	}
	ms, ok := s.absExpiry(map[string]string{"expire": "ex", "pexpire": "px", "expireat": "exat"}[name], n)
	if !ok {
		s.fail("ERR invalid expire time in '" + name + "' command")
		return
	}
	if ms <= 0 {
		ms = 1 // in the past (0 would mean "no expiry"): the key is deleted
	}
	m.Expires = ms
	s.add(m)
	s.plan(replyOneIfOK)
}

func cmdPersist(s *session, args [][]byte) {
	s.add(engine.Mutation{Op: engine.OpExpire, Table: s.table(), Key: args[1], Expire: engine.ExpireArgs{Cond: engine.ExpXX}})
	s.plan(replyOneIfOK)
}

func cmdTTL(s *session, args [][]byte) {
	name := lower(args[0])
	s.getKind(args[1])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if readFailed(w, res) {
			return
		}
		now := s.h.store.Now()
		r := res[0]
		switch {
		case r.Err != nil:
			w.Int(-2)
		case r.New.Expires == 0:
			w.Int(-1)
		default:
			exp := r.New.Expires
			switch name {
			case "ttl":
				w.Int(max((exp-now+500)/1000, 0))
			case "pttl":
				w.Int(max(exp-now, 0))
			case "expiretime":
				w.Int(exp / 1000)
			default:
				w.Int(exp)
			}
		}
	})
}
