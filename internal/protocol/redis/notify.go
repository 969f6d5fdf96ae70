package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// Keyspace notifications (notify-keyspace-events): after a batch is durable, each command that changed a key
// publishes Redis's events for it through the handler's pub/sub broker, on __keyspace@<db>__:<key> (the event as
// message) and __keyevent@<db>__:<event> (the key as message). The events each command sends are in
// notify_events.go; which classes are sent is a bit set that CONFIG SET changes at any time.

// Event classes and channel kinds, Redis's NOTIFY_* bits.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZSet                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyLoaded               // (modules only)
	notifyModule               // d
	notifyNew                  // n

	// notifyAll is what 'A' stands for.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet | notifyExpired |
		notifyEvicted | notifyStream | notifyModule
)

// notifyLetters maps each class letter but 'A' to its bit, in the order Redis prints them.
var notifyLetters = []struct {
	c   byte
	bit int
}{{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet}, {'h', notifyHash},
	{'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted}, {'t', notifyStream}, {'d', notifyModule},
	{'n', notifyNew}, {'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss}}

// errNotifyClass is Redis's complaint about a letter it does not know, word for word.
const errNotifyClass = configError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// configError is why a CONFIG SET value is refused, in Redis's words (which are capitalised sentences).
type configError string

func (e configError) Error() string { return string(e) }

// ParseNotifyEvents reads a notify-keyspace-events value ("KEA", "Elg", "" for none) into its bits.
func ParseNotifyEvents(v string) (int, error) {
	flags := 0
	for i := 0; i < len(v); i++ {
		if v[i] == 'A' {
			flags |= notifyAll
			continue
		}
		found := false
		for _, l := range notifyLetters {
			if l.c == v[i] {
				flags |= l.bit
				found = true
			}
		}
		if !found {
			return 0, errNotifyClass
		}
	}
	return flags, nil
}

// formatNotifyEvents writes flags as CONFIG GET shows them, as Redis 7 does: "A" in place of the class letters
// when all of A's are set (n is then not shown, though it is in force), then K, E, m.
func formatNotifyEvents(flags int) string {
	var b strings.Builder
	for _, l := range notifyLetters {
		if l.bit&(notifyAll|notifyNew) != 0 && flags&notifyAll == notifyAll {
			if l.bit == notifyGeneric {
				b.WriteByte('A')
			}
			continue
		}
		if flags&l.bit != 0 {
			b.WriteByte(l.c)
		}
	}
	return b.String()
}

// notifying reports whether any event would be published now: some class, and a channel kind.
func (h *Handler) notifying() bool {
	f := int(h.notifyFlags.Load())
	return f&(notifyKeyspace|notifyKeyevent) != 0 && f&^(notifyKeyspace|notifyKeyevent) != 0
}

// notify publishes one event of class about key in database db, if the class is enabled.
func (h *Handler) notify(class int, event string, db int, key []byte) {
	if h.sink != nil {
		*h.sink = append(*h.sink, keyEvent{class: class, event: event, db: db, key: append([]byte(nil), key...)})
		return
	}
	f := int(h.notifyFlags.Load())
	if f&class == 0 {
		return
	}
	dbs := strconv.Itoa(db)
	if f&notifyKeyspace != 0 {
		h.broker.Publish("__keyspace@"+dbs+"__:"+string(key), []byte(event))
	}
	if f&notifyKeyevent != 0 {
		h.broker.Publish("__keyevent@"+dbs+"__:"+event, key)
	}
}

// expired is the store's OnExpired hook: the sweeper removed an expired item of table.
func (h *Handler) expired(table string, key []byte) {
	if db, ok := h.dbOf(table); ok {
		h.notify(notifyExpired, "expired", db, key)
	}
	h.trackExpired(table, key)
}

// keyEvent is one keyspace event a script's command sent, or a message it published (scriptpub.go), kept until
// the script's batch is durable.
type keyEvent struct {
	class int
	event string // the channel of a message
	db    int
	key   []byte // the message
	// publish marks a message (SPUBLISH's when shard).
	publish, shard bool
	// monitor marks a command the script ran, args, for monitors (MONITOR shows them as run by "lua").
	monitor bool
	args    [][]byte
	// stat marks a command the script called, for INFO commandstats (cmd, nil when unknown; rejected: refused
	// before it ran) and errorstats (errReply: the error it answered, "" if none); or, with cmd nil and errReply
	// set, an error reply the script's own reply holds.
	stat     bool
	cmd      *command
	slot     int  // cmd's statistics slot (statSlot)
	slotOK   bool // false for a container's subcommand Redis does not know: errorstats only
	rejected bool
	errReply string
}

// scriptNotes publishes the keyspace events a script's commands sent (its Result.Extra), as the classes enabled
// now say, and the messages it published, in their order; it returns the commands it ran for monitors, which
// the session shows after the script's own line (account).
func (h *Handler) scriptNotes(res []engine.Result) (shown []keyEvent) {
	if len(res) == 0 {
		return nil
	}
	if evs, ok := res[0].Extra.([]keyEvent); ok {
		for _, e := range evs {
			switch {
			case e.monitor:
				shown = append(shown, e)
			case e.stat:
				h.scriptStat(e)
			case e.publish && e.shard:
				h.shards.Publish(e.event, e.key)
			case e.publish:
				h.broker.Publish(e.event, e.key)
			default:
				h.notify(e.class, e.event, e.db, e.key)
			}
		}
	}
	return shown
}

// replyHeldErrors reports whether a script's reply (its results' events) holds error replies of its own, inside
// an array: Redis counts the call failed, as it counts the errors (INFO commandstats' failed_calls).
func replyHeldErrors(res []engine.Result) bool {
	if len(res) == 0 {
		return false
	}
	evs, _ := res[0].Extra.([]keyEvent)
	for i := range evs {
		if evs[i].stat && evs[i].cmd == nil && evs[i].errReply != "" {
			return true
		}
	}
	return false
}

// respCtx is the context of RESP's writes: they publish their own keyspace events (kv.Notified).
var respCtx = kv.Notified(context.Background())

// othersWrote is the store's OnWrites hook: the keyspace events of a batch that another protocol (memcached,
// HTTP) applied, as Redis sends them for the command that does the same (SET, DEL, INCRBY, APPEND, EXPIRE,
// PERSIST), on the database whose table it wrote.
func (h *Handler) othersWrote(muts []engine.Mutation, res []engine.Result) {
	if !h.notifying() {
		return
	}
	for i := range muts {
		m, r := &muts[i], &res[i]
		if r.Err != nil || r.Unchanged {
			continue
		}
		db, ok := h.dbOf(m.Table)
		if !ok {
			continue
		}
		// A blind SET (memcached's set) reads nothing, so it cannot tell a created key: it sends no "new". A store
		// with a condition (add, replace, cas) reads the key whatever its Blind says, as the engines apply it.
		blind := m.Op == engine.OpSet && m.Set.Blind && m.Cond == engine.CondNone && !m.Set.KeepTTL
		created := !r.OldFound && r.NewFound && !blind
		switch m.Op {
		case engine.OpSet:
			if created {
				h.notify(notifyNew, "new", db, m.Key)
			}
			h.notify(notifyString, "set", db, m.Key)
			if r.New.Expires != 0 {
				h.notify(notifyGeneric, "expire", db, m.Key)
			}
		case engine.OpDelete:
			if r.OldFound {
				h.notify(notifyGeneric, "del", db, m.Key)
			}
		case engine.OpIncr:
			if created {
				h.notify(notifyNew, "new", db, m.Key)
			}
			h.notify(notifyString, "incrby", db, m.Key)
			if m.Touch && r.NewFound { // ma with T
				h.notify(notifyGeneric, "expire", db, m.Key)
			}
		case engine.OpAppend, engine.OpPrepend:
			if created {
				h.notify(notifyNew, "new", db, m.Key)
			}
			h.notify(notifyString, "append", db, m.Key)
		case engine.OpExpire, engine.OpGet: // touch; gat and ma with T (an OpGet with Touch)
			switch {
			case m.Op == engine.OpGet && !m.Touch:
			case r.OldFound && (!r.NewFound || r.New.Expires != 0 && r.New.Expires <= time.Now().UnixMilli()):
				h.notify(notifyGeneric, "del", db, m.Key) // a time in the past deletes, as GETEX's and EXPIRE's
			case r.NewFound && r.New.Expires != 0:
				h.notify(notifyGeneric, "expire", db, m.Key)
			case r.NewFound && r.Old.Expires != 0: // as PERSIST, only when there was a TTL to remove
				h.notify(notifyGeneric, "persist", db, m.Key)
			}
		}
	}
}

// dbOf is table's inverse: the database a table backs, if it is one.
func (h *Handler) dbOf(t string) (int, bool) {
	for db := 0; db < h.opts.Databases; db++ {
		if table(db) == t {
			return db, true
		}
	}
	return 0, false
}

// probes brackets a write command's mutations, when notifications are on, with reads of its keys before and
// after it in the same batch, so its events can tell a key created ("new") or emptied away ("del") exactly.
func (s *session) probes(cmd *command, args [][]byte, mutsBefore, repliesBefore int) {
	if s.batch.Len() != repliesBefore+1 || cmd.flags&flagWrite == 0 || notes[cmd.name] == nil {
		return
	}
	p := s.batch.Last()
	if p.errMsg != "" || p.status != "" || p.imm != nil || len(s.batch.Muts()) < mutsBefore {
		return
	}
	keys := cmd.keys(args)
	s.batch.Rewrite(mutsBefore, func(own []engine.Mutation) []engine.Mutation { return bracket(s.table(), keys, own) })
	p.probes = len(keys)
	p.note = cmd
	p.args = args
	if len(args) > 0 && len(args) == len(s.curArgs) && &args[0] == &s.curArgs[0] {
		p.args = s.keepCur() // the parser's, which its next command reuses (a script's call keeps its own)
	}
	p.db = s.db
}

// bracket returns own between two reads of each of keys: what the key held before and after own.
func bracket(table string, keys [][]byte, own []engine.Mutation) []engine.Mutation {
	out := make([]engine.Mutation, 0, len(own)+2*len(keys))
	for _, k := range keys {
		// Only whether the key is there counts (existed, exists): no value is read, which would count against
		// engine.MaxBatchRead and fail a script over big keys only while events are on.
		out = append(out, engine.Mutation{Op: engine.OpGet, Table: table, Key: k, AnyKind: true, NoValue: true})
	}
	out = append(out, own...)
	return append(out, out[:len(keys)]...)
}

// publishNotes sends the events of a command whose reply was just written (reply) from its own results and
// mutations, probes included. A batch that failed sends nothing.
func (s *session) publishNotes(p *pending, res []engine.Result, muts []engine.Mutation, reply []byte) {
	n := len(muts)
	if p.note == nil || len(reply) == 0 || reply[0] == '-' || len(res) < n {
		return
	}
	k := p.probes
	ev := &noteCtx{h: s.h, db: p.db, args: p.args, keys: p.note.keys(p.args), reply: reply,
		res: res[k : n-k], muts: muts[k : n-k], before: res[:k], after: res[n-k : n]}
	notes[p.note.name](ev)
}

// applyNoted applies m on its own (applyHere), as the blocking commands do, and returns its result, sendNotes,
// which sends the events of command name called with args (BLPOP's pop sends LPOP's events) once the reply is
// written (from: where the reply starts in s.w), and the batch's error.
func (s *session) applyNoted(m engine.Mutation, name string, args [][]byte) (engine.Result, func(from int), error) {
	cmd := commands[name]
	if !s.h.notifying() {
		res, err := s.applyHere([]engine.Mutation{m})
		if err != nil {
			return engine.Result{}, func(int) {}, err
		}
		return res[0], func(int) {}, nil
	}
	keys := cmd.keys(args)
	muts := bracket(s.table(), keys, []engine.Mutation{m})
	p := pending{probes: len(keys), note: cmd, args: args, db: s.db}
	res, err := s.applyHere(muts)
	if err != nil {
		return engine.Result{}, func(int) {}, err
	}
	return res[p.probes], func(from int) { s.publishNotes(&p, res, muts, s.w.Bytes()[from:]) }, nil
}
