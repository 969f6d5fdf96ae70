package redis

import (
	"errors"
	"strings"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() {
	rw, ro := flagWrite, flagReadonly
	x := func(c *command) *command { c.groupName = "stream"; return c }
	register(
		x(&command{name: "xadd", arity: -5, flags: rw | flagFast, data: cmdXAdd, since: "5.0.0", summary: "Appends a new message to a stream. Creates the key if it doesn't exist."}),
		x(&command{name: "xlen", arity: 2, flags: ro | flagFast, data: cmdCollLen(engine.KindStream), since: "5.0.0", summary: "Return the number of messages in a stream."}),
		x(&command{name: "xrange", arity: -4, flags: ro, data: cmdXRange, since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs."}),
		x(&command{name: "xrevrange", arity: -4, flags: ro, data: cmdXRange, since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs in reverse order."}),
		x(&command{name: "xdel", arity: -3, flags: rw | flagFast, data: cmdXDel, since: "5.0.0", summary: "Returns the number of messages after removing them from a stream."}),
		x(&command{name: "xtrim", arity: -4, flags: rw, data: cmdXTrim, since: "5.0.0", summary: "Deletes messages from the beginning of a stream."}),
		x(&command{name: "xsetid", arity: -3, flags: rw, data: cmdXSetID, since: "5.0.0", summary: "An internal command for replicating stream values."}),
		x(&command{name: "xread", arity: -4, flags: ro, firstKey: -1, movable: streamsKeys, imm: cmdXRead, since: "5.0.0", summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."}),
		// Consumer groups (streamgroups.go, streamreadgroup.go).
		x(&command{name: "xreadgroup", arity: -7, flags: rw, firstKey: -1, movable: xreadgroupKeys, data: cmdXReadGroupData, imm: cmdXReadGroup, immIf: hasBlock, since: "5.0.0", summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise."}),
		x(&command{name: "xgroup", arity: -2, flags: rw, firstKey: 2, lastKey: 2, step: 1, data: cmdXGroup, since: "5.0.0", summary: "A container for consumer groups commands."}),
		x(&command{name: "xack", arity: -4, flags: rw | flagFast, data: cmdXAck, since: "5.0.0", summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream."}),
		x(&command{name: "xpending", arity: -3, flags: ro, data: cmdXPending, since: "5.0.0", summary: "Returns the information and entries from a stream consumer group's pending entries list."}),
		x(&command{name: "xclaim", arity: -6, flags: rw | flagFast, data: cmdXClaim, since: "5.0.0", summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member."}),
		x(&command{name: "xautoclaim", arity: -6, flags: rw | flagFast, data: cmdXAutoClaim, since: "6.2.0", summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member."}),
		x(&command{name: "xinfo", arity: -2, flags: ro, firstKey: 2, lastKey: 2, step: 1, data: cmdXInfo, since: "5.0.0", summary: "A container for stream introspection commands."}),
	)
}

// maxID is the largest stream ID.
var maxID = collections.ID{MS: ^uint64(0), Seq: ^uint64(0)}

// streamErr answers the stream functions' own errors, whose texts are Redis's.
func streamErr(err error) string {
	for _, e := range []error{collections.ErrStreamID, collections.ErrStreamIDSmall, collections.ErrStreamIDZero,
		collections.ErrSetIDSmallerThanTop, collections.ErrSetIDEntriesAdded} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return errText(err)
}

// parseTrimArgs parses MAXLEN|MINID [=|~] threshold [LIMIT n] at args[i:], returning the rule and where it ends.
func (s *session) parseTrimArgs(args [][]byte, i int) (collections.StreamTrim, int, bool) {
	t := collections.StreamTrim{By: lower(args[i])}
	i++
	approx := false
	if i < len(args) && (string(args[i]) == "=" || string(args[i]) == "~") {
		approx = string(args[i]) == "~"
		i++
	}
	if i >= len(args) {
		s.fail("ERR syntax error")
		return t, i, false
	}
	if t.By == "maxlen" {
		n, ok := argInt(args[i])
		if !ok || n < 0 {
			s.fail("ERR The MAXLEN argument must be >= 0.")
			return t, i, false
		}
		t.MaxLen = n
	} else {
		id, ok := collections.ParseID(args[i], false)
		if !ok {
			s.fail(collections.ErrStreamID.Error())
			return t, i, false
		}
		t.MinID = id
	}
	i++
	if i+1 < len(args) && eq(args[i], "limit") {
		// A bound on approximate trimming's work (anykv trims exactly), checked as Redis checks it.
		n, ok := argInt(args[i+1])
		switch {
		case !ok:
			s.fail(errNotInt)
			return t, i, false
		case n < 0:
			s.fail("ERR The LIMIT argument must be >= 0.")
			return t, i, false
		}
		if !approx {
			s.fail("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return t, i, false
		}
		i += 2
	}
	return t, i, true
}

func cmdXAdd(s *session, args [][]byte) {
	noMk, i := false, 2
	var trim collections.StreamTrim
options:
	for i < len(args) {
		switch {
		case eq(args[i], "nomkstream"):
			noMk = true
			i++
		case eq(args[i], "maxlen") || eq(args[i], "minid"):
			var ok bool
			if trim, i, ok = s.parseTrimArgs(args, i); !ok {
				return
			}
		default:
			break options
		}
	}
	if i >= len(args) || (len(args)-i-1)%2 != 0 || len(args)-i-1 == 0 {
		s.fail("ERR wrong number of arguments for 'xadd' command")
		return
	}
	id := args[i]
	if string(id) != "*" && !strings.HasSuffix(string(id), "-*") {
		if _, ok := collections.ParseID(id, false); !ok {
			s.fail(collections.ErrStreamID.Error())
			return
		}
	}
	s.add(collections.XAdd(s.table(), args[1], id, noMk, trim, args[i+1:]...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Null()
		case r.Err != nil:
			w.Error(streamErr(r.Err))
		default:
			w.Bulk(r.New.Value)
		}
	})
}

// writeEntries writes stream entries as Redis does: [id, [field, value, ...]] each.
func writeEntries(w *resp.Writer, ms []engine.Member) {
	w.ArrayHeader(len(ms))
	for _, m := range ms {
		fields, _ := collections.DecodeFields(m.Item.Value)
		w.ArrayHeader(2)
		w.Bulk(m.Name)
		w.ArrayHeader(len(fields))
		for _, f := range fields {
			w.Bulk(f)
		}
	}
}

func cmdXRange(s *session, args [][]byte) {
	rev := eq(args[0], "xrevrange")
	lo, hi := args[2], args[3]
	if rev {
		lo, hi = hi, lo
	}
	from, ok1 := collections.ParseRangeID(lo, false)
	to, ok2 := collections.ParseRangeID(hi, true)
	if !ok1 || !ok2 {
		s.fail(collections.ErrStreamID.Error())
		return
	}
	count := int64(-1)
	n, given, ok := s.lastCount(args, 4)
	switch {
	case !ok:
		return
	case given:
		count = max(n, 0)
	case len(args) != 4:
		s.fail("ERR syntax error")
		return
	}
	s.add(collections.XRange(s.table(), args[1], from, to, rev, count))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.ArrayHeader(0)
		case r.Err != nil:
			w.Error(errText(r.Err))
		case count == 0: // a stream and COUNT 0: Redis 7.0 answers a null array
			w.NullArray()
		default:
			writeEntries(w, r.Members)
		}
	})
}

// lastCount parses "COUNT n" when it is all of args from at on (given), answering a bad n (ok false).
func (s *session) lastCount(args [][]byte, at int) (n int64, given, ok bool) {
	if len(args) != at+2 || !eq(args[at], "count") {
		return 0, false, true
	}
	if n, ok = argInt(args[at+1]); !ok {
		s.fail(errNotInt)
	}
	return n, true, ok
}

func cmdXDel(s *session, args [][]byte) {
	for _, a := range args[2:] {
		if _, ok := collections.ParseID(a, false); !ok {
			s.fail(collections.ErrStreamID.Error())
			return
		}
	}
	s.add(collections.XDel(s.table(), args[1], args[2:]...))
	s.plan(replyListInt)
}

// cmdXSetID sets a stream's last ID, and with ENTRIESADDED and MAXDELETEDID Redis 7's counters, with Redis's
// checks in its order (the arguments first, then the key).
func cmdXSetID(s *session, args [][]byte) {
	strictID := func(b []byte) (collections.ID, bool) {
		if string(b) == "-" || string(b) == "+" {
			return collections.ID{}, false
		}
		return collections.ParseID(b, false)
	}
	id, ok := strictID(args[2])
	if !ok {
		s.fail(collections.ErrStreamID.Error())
		return
	}
	added, maxDeleted := int64(-1), collections.ID{}
	for i := 3; i < len(args); i += 2 {
		switch {
		case eq(args[i], "entriesadded") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			switch {
			case !ok:
				s.fail(errNotInt)
				return
			case n < 0:
				s.fail("ERR entries_added must be positive")
				return
			}
			added = n
		case eq(args[i], "maxdeletedid") && i+1 < len(args):
			if maxDeleted, ok = strictID(args[i+1]); !ok {
				s.fail(collections.ErrStreamID.Error())
				return
			}
			if id.Less(maxDeleted) {
				s.fail("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			s.fail(errSyntax)
			return
		}
	}
	s.add(collections.XSetID(s.table(), args[1], id, added, maxDeleted))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(streamErr(r.Err))
			return
		}
		w.SimpleString("OK")
	})
}

func cmdXTrim(s *session, args [][]byte) {
	if !eq(args[2], "maxlen") && !eq(args[2], "minid") {
		s.fail("ERR syntax error")
		return
	}
	trim, end, ok := s.parseTrimArgs(args, 2)
	if !ok {
		return
	}
	if end != len(args) {
		s.fail("ERR syntax error")
		return
	}
	s.add(collections.XTrim(s.table(), args[1], trim))
	s.plan(replyListInt)
}

// cmdXRead answers the entries after the given IDs of each stream; with BLOCK it waits for new entries, woken by
// any batch that adds to one of the streams ("$" means the last ID when the command arrives).
func cmdXRead(s *session, args [][]byte) {
	count, block, hasBlock := int64(-1), time.Duration(0), false
	i := 1
	for ; i < len(args) && !eq(args[i], "streams"); i++ {
		switch {
		case eq(args[i], "count") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				s.w.Error(errNotInt)
				return
			}
			if count = n; n <= 0 {
				count = -1 // as Redis: COUNT 0 (or below) reads without a limit
			}
			i++
		case eq(args[i], "block") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok || n < 0 {
				s.w.Error("ERR timeout is not an integer or out of range")
				return
			}
			block, hasBlock = time.Duration(n)*time.Millisecond, true
			i++
		case eq(args[i], "group") && i+2 < len(args):
			s.w.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			return
		case eq(args[i], "noack"):
			s.w.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			return
		default:
			s.w.Error("ERR syntax error")
			return
		}
	}
	var rest [][]byte
	if i < len(args) {
		rest = args[i+1:]
	}
	if len(rest) == 0 || len(rest)%2 != 0 {
		s.w.Error("ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.")
		return
	}
	n := len(rest) / 2
	keys := copyArgs(rest[:n]) // waiting may refill the parser's buffer
	after := make([]collections.ID, n)
	for k, a := range rest[n:] {
		if string(a) == "$" { // the stream's last ID now
			res, err := s.h.store.Apply(s.writeCtx(), []engine.Mutation{
				collections.XRange(s.table(), keys[k], maxID, maxID, false, 0)})
			if err == nil && res[0].Err == nil {
				after[k], _ = collections.ParseID(res[0].New.Value, false)
			}
			continue
		}
		if string(a) == ">" {
			s.w.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			return
		}
		id, ok := collections.ParseID(a, false)
		if !ok {
			s.w.Error(collections.ErrStreamID.Error())
			return
		}
		after[k] = id
	}
	woken := false // once woken, a key that now holds another type is passed over, as for BLPOP (blocking.go)
	attempt := func() bool {
		defer func() { woken = true }()
		type got struct {
			key []byte
			ms  []engine.Member
		}
		var found []got
		for k, key := range keys {
			from, ok := after[k].Next()
			if !ok {
				continue
			}
			res, err := s.h.store.Apply(s.writeCtx(), []engine.Mutation{
				collections.XRange(s.table(), key, from, maxID, false, count)})
			if err == nil {
				err = res[0].Err
			}
			switch {
			case errors.Is(err, engine.ErrNotFound), woken && errors.Is(err, engine.ErrWrongType):
			case err != nil:
				s.w.Error(errText(err))
				return true
			case len(res[0].Members) > 0:
				found = append(found, got{key, res[0].Members})
			}
		}
		if len(found) == 0 {
			return false
		}
		if s.w.Proto() >= 3 { // a map of stream to entries; in RESP2 an array of [stream, entries] pairs
			s.w.MapHeader(len(found))
		} else {
			s.w.ArrayHeader(len(found))
		}
		for _, f := range found {
			if s.w.Proto() < 3 {
				s.w.ArrayHeader(2)
			}
			s.w.Bulk(f.key)
			writeEntries(s.w, f.ms)
		}
		return true
	}
	if !hasBlock {
		if !attempt() {
			s.w.NullArray()
		}
		return
	}
	if !s.block(keys, block, false, attempt) {
		s.blockEnded(s.w.NullArray)
	}
}
