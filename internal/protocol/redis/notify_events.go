package redis

import (
	"bytes"
	"strconv"

	"anykv/internal/engine"
)

// The keyspace events each write command sends, as Redis 7 sends them (notify.c's callers): which event, of
// which class, about which key, in which order. A command's function sees its reply, its own results and
// mutations, and whether each of its keys (its key spec) existed before and after it in the batch.

// noteCtx is what a command's event function sees.
type noteCtx struct {
	h             *Handler
	db            int
	args, keys    [][]byte
	reply         []byte
	res           []engine.Result
	muts          []engine.Mutation
	before, after []engine.Result // one read of each key of keys, before and after the command
	announced     [][]byte        // keys whose "new" event went out
}

// existed and exists report whether key was there before and after the command (false for a key outside keys).
func (n *noteCtx) existed(key []byte) bool { return n.probe(n.before, key) }
func (n *noteCtx) exists(key []byte) bool  { return n.probe(n.after, key) }

func (n *noteCtx) probe(rs []engine.Result, key []byte) bool {
	for i, k := range n.keys {
		if bytes.Equal(k, key) {
			return rs[i].Err == nil
		}
	}
	return false
}

// emit publishes event about key, preceded by "new" the first time a key the command created is named.
func (n *noteCtx) emit(class int, event string, key []byte) {
	if !n.existed(key) && n.exists(key) {
		n.announce(key)
	}
	n.h.notify(class, event, n.db, key)
}

// announce sends "new" for key unless it went out already.
func (n *noteCtx) announce(key []byte) {
	for _, a := range n.announced {
		if bytes.Equal(a, key) {
			return
		}
	}
	n.announced = append(n.announced, key)
	n.h.notify(notifyNew, "new", n.db, key)
}

// emptied sends "del" for key when the command removed it (a collection's last member went).
func (n *noteCtx) emptied(key []byte) {
	if n.existed(key) && !n.exists(key) {
		n.h.notify(notifyGeneric, "del", n.db, key)
	}
}

// Reply shapes the event functions test.
func (n *noteCtx) null() bool {
	r := n.reply
	return bytes.HasPrefix(r, []byte("$-1\r\n")) || bytes.HasPrefix(r, []byte("*-1\r\n")) || bytes.HasPrefix(r, []byte("_\r\n")) ||
		bytes.HasPrefix(r, []byte("*0\r\n")) || bytes.HasPrefix(r, []byte("~0\r\n")) // RESP3's empty set: SPOP with a count
}

// count is an integer reply's value (0 for another reply).
func (n *noteCtx) count() int64 {
	r := n.reply
	if len(r) < 4 || r[0] != ':' {
		return 0
	}
	v, _ := strconv.ParseInt(string(r[1:bytes.IndexByte(r, '\r')]), 10, 64)
	return v
}

func (n *noteCtx) ok() bool { return bytes.HasPrefix(n.reply, []byte("+OK\r\n")) }

func (n *noteCtx) hasArg(name string) bool {
	for _, a := range n.args[2:] {
		if eq(a, name) {
			return true
		}
	}
	return false
}

// noteFunc sends one command's events.
type noteFunc func(n *noteCtx)

// on sends event of class about the first key when the command's reply says it changed something (changed).
func on(class int, event string, changed func(n *noteCtx) bool) noteFunc {
	return func(n *noteCtx) {
		if changed(n) {
			n.emit(class, event, n.args[1])
		}
	}
}

// onThenEmptied is on followed by "del" if the key is gone (a collection emptied).
func onThenEmptied(class int, event string, changed func(n *noteCtx) bool) noteFunc {
	return func(n *noteCtx) {
		if changed(n) {
			n.emit(class, event, n.args[1])
			n.emptied(n.args[1])
		}
	}
}

// storeInto sends event about dst when the command stored a non-empty result there, and "del" when it replaced
// dst with nothing (SINTERSTORE and the like).
func storeInto(class int, event string, dst func(n *noteCtx) []byte) noteFunc {
	return func(n *noteCtx) {
		d := dst(n)
		switch {
		case n.exists(d):
			n.emit(class, event, d)
		case n.existed(d):
			n.h.notify(notifyGeneric, "del", n.db, d)
		}
	}
}

func always(*noteCtx) bool         { return true }
func positive(n *noteCtx) bool     { return n.count() > 0 }
func isOK(n *noteCtx) bool         { return n.ok() }
func notNull(n *noteCtx) bool      { return !n.null() }
func firstApplied(n *noteCtx) bool { return n.res[0].Err == nil }
func firstArg(n *noteCtx) []byte   { return n.args[1] }

// notes maps each write command to its events; a write command missing here sends none.
var notes = map[string]noteFunc{}

func init() {
	str := func(event string) noteFunc { return on(notifyString, event, always) }
	for name, f := range map[string]noteFunc{
		"set":         noteSet,
		"setnx":       on(notifyString, "set", positive),
		"setex":       noteSet,
		"psetex":      noteSet,
		"getset":      str("set"),
		"mset":        noteMSet,
		"msetnx":      func(n *noteCtx) { noteIf(n, positive, noteMSet) },
		"getdel":      on(notifyGeneric, "del", notNull),
		"getex":       noteGetEx,
		"append":      str("append"),
		"setrange":    on(notifyString, "setrange", func(n *noteCtx) bool { return len(n.args[3]) > 0 }),
		"incr":        str("incrby"),
		"decr":        str("incrby"),
		"incrby":      str("incrby"),
		"decrby":      str("incrby"),
		"incrbyfloat": str("incrbyfloat"),
		"setbit":      on(notifyString, "setbit", func(n *noteCtx) bool { return !n.res[0].Unchanged }),
		"bitfield":    noteBitField,
		"bitop":       storeInto(notifyString, "set", func(n *noteCtx) []byte { return n.args[2] }),
		"pfadd":       on(notifyString, "pfadd", positive),
		"pfmerge":     on(notifyString, "pfadd", isOK), // Redis sends "pfadd" for PFMERGE too

		"del":       noteDel,
		"unlink":    noteDel,
		"expire":    noteExpire,
		"pexpire":   noteExpire,
		"expireat":  noteExpire,
		"pexpireat": noteExpire,
		"persist":   on(notifyGeneric, "persist", positive),
		"rename":    noteRename,
		"renamenx":  func(n *noteCtx) { noteIf(n, positive, noteRename) },
		"move": func(n *noteCtx) { // the key leaves this database and arrives in the other, as Redis 7.0 says
			if n.count() > 0 {
				db, _ := strconv.Atoi(string(n.args[2]))
				n.h.notify(notifyGeneric, "move_from", n.db, n.args[1])
				n.h.notify(notifyGeneric, "move_to", db, n.args[1])
			}
		},
		"restore": func(n *noteCtx) { // Redis adds the key anew ("new", also over a key REPLACE deleted), or deletes it
			switch key := n.args[1]; {
			case !n.ok():
			case n.exists(key):
				n.announce(key)
				n.h.notify(notifyGeneric, "restore", n.db, key)
			case n.existed(key):
				n.h.notify(notifyGeneric, "del", n.db, key)
			}
		},
		"copy": func(n *noteCtx) { // Redis adds the copy anew (over a key REPLACE deleted too), in the destination's database
			if n.count() == 0 {
				return
			}
			db := n.db
			for i := 3; i+1 < len(n.args); i++ {
				if eq(n.args[i], "db") {
					db, _ = strconv.Atoi(string(n.args[i+1]))
				}
			}
			n.h.notify(notifyNew, "new", db, n.args[2])
			n.h.notify(notifyGeneric, "copy_to", db, n.args[2])
		},

		"lpush":     on(notifyList, "lpush", positive),
		"lpushx":    on(notifyList, "lpush", positive),
		"rpush":     on(notifyList, "rpush", positive),
		"rpushx":    on(notifyList, "rpush", positive),
		"lpop":      onThenEmptied(notifyList, "lpop", notNull),
		"rpop":      onThenEmptied(notifyList, "rpop", notNull),
		"linsert":   on(notifyList, "linsert", positive),
		"lset":      on(notifyList, "lset", isOK),
		"ltrim":     onThenEmptied(notifyList, "ltrim", func(n *noteCtx) bool { return n.existed(n.args[1]) }),
		"lrem":      onThenEmptied(notifyList, "lrem", positive),
		"lmove":     noteLMove,
		"rpoplpush": noteLMove,

		"hset":         on(notifyHash, "hset", always),
		"hmset":        on(notifyHash, "hset", always),
		"hsetnx":       on(notifyHash, "hset", positive),
		"hdel":         onThenEmptied(notifyHash, "hdel", positive),
		"hincrby":      on(notifyHash, "hincrby", always),
		"hincrbyfloat": on(notifyHash, "hincrbyfloat", always),

		"sadd":        on(notifySet, "sadd", positive),
		"srem":        onThenEmptied(notifySet, "srem", positive),
		"spop":        onThenEmptied(notifySet, "spop", notNull),
		"smove":       noteSMove,
		"sinterstore": storeInto(notifySet, "sinterstore", firstArg),
		"sunionstore": storeInto(notifySet, "sunionstore", firstArg),
		"sdiffstore":  storeInto(notifySet, "sdiffstore", firstArg),

		"zadd":             noteZAdd,
		"zincrby":          noteZAdd,
		"zrem":             onThenEmptied(notifyZSet, "zrem", positive),
		"zremrangebyscore": onThenEmptied(notifyZSet, "zremrangebyscore", positive),
		"zremrangebyrank":  onThenEmptied(notifyZSet, "zremrangebyrank", positive),
		"zremrangebylex":   onThenEmptied(notifyZSet, "zremrangebylex", positive),
		"zpopmin":          onThenEmptied(notifyZSet, "zpopmin", notNull),
		"zpopmax":          onThenEmptied(notifyZSet, "zpopmax", notNull),
		"zunionstore":      storeInto(notifyZSet, "zunionstore", firstArg),
		"zinterstore":      storeInto(notifyZSet, "zinterstore", firstArg),
		"zdiffstore":       storeInto(notifyZSet, "zdiffstore", firstArg),
		"zrangestore":      storeInto(notifyZSet, "zrangestore", firstArg),

		"xadd":   noteXAdd,
		"xdel":   on(notifyStream, "xdel", positive),
		"xtrim":  on(notifyStream, "xtrim", positive),
		"xsetid": on(notifyStream, "xsetid", isOK),
	} {
		notes[name] = f
	}
}

func noteIf(n *noteCtx, cond func(*noteCtx) bool, f noteFunc) {
	if cond(n) {
		f(n)
	}
}

// noteSet: SET, SETEX, PSETEX send "set", and "expire" when they gave the key a time to live.
func noteSet(n *noteCtx) {
	if !firstApplied(n) {
		return
	}
	n.emit(notifyString, "set", n.args[1])
	if m := n.muts[0]; m.Op == engine.OpSet && m.Expires != 0 {
		n.emit(notifyGeneric, "expire", n.args[1])
	}
}

// noteMSet sends "set" for every key, in argument order.
func noteMSet(n *noteCtx) {
	for i := 1; i+1 < len(n.args); i += 2 {
		n.emit(notifyString, "set", n.args[i])
	}
}

// noteGetEx: "persist" when PERSIST removed a time to live, "expire" (or "del" for a time in the past) when
// an expiry option set one.
func noteGetEx(n *noteCtx) {
	r, m := n.res[0], n.muts[0]
	if r.Err != nil || !m.Touch {
		return
	}
	switch {
	case m.Expires == 0 && r.Old.Expires != 0:
		n.emit(notifyGeneric, "persist", n.args[1])
	case m.Expires != 0 && !n.exists(n.args[1]):
		n.h.notify(notifyGeneric, "del", n.db, n.args[1])
	case m.Expires != 0:
		n.emit(notifyGeneric, "expire", n.args[1])
	}
}

// noteBitField: "setbit" when the command changed a field or wrote into a string it made or grew (bitops.BitField's
// NewFound); a string made for a write that then failed (OVERFLOW FAIL) is new, with no "setbit", as in Redis.
func noteBitField(n *noteCtx) {
	if k := n.args[1]; !n.existed(k) && n.exists(k) {
		n.announce(k)
	}
	if n.res[0].NewFound {
		n.emit(notifyString, "setbit", n.args[1])
	}
}

// noteDel sends "del" for each key the command removed.
func noteDel(n *noteCtx) {
	for i, r := range n.res {
		if r.Err == nil {
			n.h.notify(notifyGeneric, "del", n.db, n.args[1+i])
		}
	}
}

// noteExpire: "expire", or "del" when a time in the past removed the key.
func noteExpire(n *noteCtx) {
	switch {
	case n.count() == 0:
	case n.exists(n.args[1]):
		n.emit(notifyGeneric, "expire", n.args[1])
	default:
		n.h.notify(notifyGeneric, "del", n.db, n.args[1])
	}
}

// noteRename: the target is added anew ("new", even over an old one, as Redis's dbDelete then dbAdd) before
// "rename_from" and "rename_to".
func noteRename(n *noteCtx) {
	src, dst := n.args[1], n.args[2]
	if bytes.Equal(src, dst) {
		return
	}
	n.announce(dst)
	n.h.notify(notifyGeneric, "rename_from", n.db, src)
	n.h.notify(notifyGeneric, "rename_to", n.db, dst)
}

// noteLMove: the push to the destination, then the pop from the source, then "del" if the source emptied.
func noteLMove(n *noteCtx) {
	if n.null() {
		return
	}
	from, to := "rpop", "lpush"
	if len(n.args) == 5 {
		from, to = lower(n.args[3])[:1]+"pop", lower(n.args[4])[:1]+"push"
	}
	src, dst := n.args[1], n.args[2]
	n.emit(notifyList, to, dst)
	n.emit(notifyList, from, src)
	n.emptied(src)
}

// noteSMove: "srem" and maybe "del" on the source, then "sadd" on the destination unless it held the member
// already (its OpMemberSet, the fourth mutation, found it). Moving within one set sends nothing.
func noteSMove(n *noteCtx) {
	src, dst := n.args[1], n.args[2]
	if n.count() == 0 || bytes.Equal(src, dst) {
		return
	}
	n.emit(notifySet, "srem", src)
	n.emptied(src)
	if !n.res[3].OldFound {
		n.emit(notifySet, "sadd", dst)
	}
}

// noteZAdd: "zincr" for INCR and ZINCRBY, else "zadd", when a member was added or its score changed (an
// increment of 0 changes nothing and sends nothing, as in Redis).
func noteZAdd(n *noteCtx) {
	if n.hasArg("incr") || eq(n.args[0], "zincrby") {
		if !n.null() && !n.res[0].Unchanged {
			n.emit(notifyZSet, "zincr", n.args[1])
		}
		return
	}
	if touched, _ := strconv.Atoi(string(n.res[0].Old.Value)); touched > 0 {
		n.emit(notifyZSet, "zadd", n.args[1])
	}
}

// noteXAdd: "xadd", then "xtrim" if MAXLEN or MINID removed entries.
func noteXAdd(n *noteCtx) {
	if n.null() {
		return
	}
	n.emit(notifyStream, "xadd", n.args[1])
	if trimmed, _ := strconv.Atoi(string(n.res[0].Old.Value)); trimmed > 0 {
		n.emit(notifyStream, "xtrim", n.args[1])
	}
}
