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
		x(&command{name: "xread", arity: -4, flags: ro, firstKey: -1, movable: streamsKeys, imm: cmdXRead, inScript: true, since: "5.0.0", summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."}),
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
	for _, e := range []error{collections.ErrStreamID, collections.ErrStreamIDSmall, collections.ErrStreamIDZero, collections.ErrStreamFull,
		collections.ErrSetIDSmallerThanTop, collections.ErrSetIDEntriesAdded} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return errText(err)
}

// defaultStreamNode is Redis's default stream-node-max-entries.
const defaultStreamNode = 100

// parseAddTrim parses XADD's options (from args[2] up to the ID, whose place it returns) or XTRIM's (all of
// args[2:]) as Redis's streamParseAddOrTrimArgsOrReply does, with its checks and errors in its order: MAXLEN|MINID
// [=|~] threshold, LIMIT n, and XADD's NOMKSTREAM, in any order. With "~" the trim goes by whole nodes of
// stream-node-max-entries entries, at most LIMIT entries (without LIMIT, 100 nodes' worth; LIMIT 0: no limit).
func (s *session) parseAddTrim(args [][]byte, xadd bool) (t collections.StreamTrim, noMk bool, idPos int, ok bool) {
	limit, limitGiven := int64(0), false
	i := 2
options:
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		switch opt := args[i]; {
		case xadd && string(collections.CString(opt)) == "*": // read as a C string, as Redis reads it
			break options
		case (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0:
			if t.By != "" {
				s.fail("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return t, false, 0, false
			}
			t.By, t.Approx = lower(opt), false
			if next := string(args[i+1]); more >= 2 && (next == "~" || next == "=") {
				t.Approx = next == "~"
				i++
			}
			if t.By == "maxlen" {
				n, ok := argInt(args[i+1])
				switch {
				case !ok:
					s.fail(errNotInt)
					return t, false, 0, false
				case n < 0:
					s.fail("ERR The MAXLEN argument must be >= 0.")
					return t, false, 0, false
				}
				t.MaxLen = n
			} else {
				id, ok := collections.ParseID(args[i+1], false)
				if !ok {
					s.fail(collections.ErrStreamID.Error())
					return t, false, 0, false
				}
				t.MinID = id
			}
			i++
		case eq(opt, "limit") && more > 0:
			n, ok := argInt(args[i+1])
			switch {
			case !ok:
				s.fail(errNotInt)
				return t, false, 0, false
			case n < 0:
				s.fail("ERR The LIMIT argument must be >= 0.")
				return t, false, 0, false
			}
			limit, limitGiven = n, true
			i++
		case xadd && eq(opt, "nomkstream"):
			noMk = true
		case xadd: // the ID: ms-seq, ms or ms-*
			id := string(collections.CString(opt))
			if ms, ok := strings.CutSuffix(id, "-*"); ok {
				id = ms
			}
			if _, ok := collections.ParseID([]byte(id), false); !ok || len(opt) > 127 {
				s.fail(collections.ErrStreamID.Error())
				return t, false, 0, false
			}
			break options
		default:
			s.fail(errSyntax)
			return t, false, 0, false
		}
	}
	switch {
	case limit != 0 && t.By == "":
		s.fail("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return t, false, 0, false
	case !xadd && t.By == "":
		s.fail("ERR syntax error, XTRIM must be called with a trimming strategy")
		return t, false, 0, false
	case limitGiven && !t.Approx:
		s.fail("ERR syntax error, LIMIT cannot be used without the special ~ option")
		return t, false, 0, false
	}
	if t.Approx {
		t.Node, t.Limit = s.h.streamNode.Load(), limit
		if !limitGiven { // Redis's default: 100 nodes, within [1, 1000000] (10000 when the node size is 0)
			switch {
			case t.Node <= 0:
				t.Limit = 10000
			case t.Node > 10000:
				t.Limit = 1000000
			default:
				t.Limit = 100 * t.Node
			}
		}
	}
	return t, noMk, i, true
}

func cmdXAdd(s *session, args [][]byte) {
	trim, noMk, i, ok := s.parseAddTrim(args, true)
	if !ok {
		return
	}
	if fields := len(args) - i - 1; fields < 2 || fields%2 != 0 {
		s.fail("ERR wrong number of arguments for 'xadd' command")
		return
	}
	// An entry is stored as one item, its fields and values together: bounded by the value limit as a string or a
	// hash's value is (Redis bounds only each argument, by proto-max-bulk-len).
	size := 0
	for _, f := range args[i+1:] {
		size += len(f)
	}
	if size > s.h.store.Limits().MaxValue {
		s.fail("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	id := args[i]
	if v, ok := collections.ParseID(id, false); ok && v == (collections.ID{}) { // before the key is looked at, as Redis
		s.fail(collections.ErrStreamIDZero.Error())
		return
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

// cmdXDel: the IDs are checked after the key, as Redis (a missing key answers 0, another type WRONGTYPE).
func cmdXDel(s *session, args [][]byte) {
	s.add(collections.XDel(s.table(), args[1], args[2:]...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(streamErr(r.Err))
			return
		}
		w.Int(collections.Int(res[0]))
	})
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
	trim, _, _, ok := s.parseAddTrim(args, false)
	if !ok {
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
			res, err := s.applyHere([]engine.Mutation{collections.XRange(s.table(), keys[k], maxID, maxID, false, 0)})
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
		only := s.wokenIndex(keys) // once woken, the stream whose XADD woke it alone, as Redis answers
		for k, key := range keys {
			if only >= 0 && k != only {
				continue
			}
			from, ok := after[k].Next()
			if !ok { // nothing comes after the largest ID, but the key's type is checked as every key's, as Redis
				from = maxID
			}
			res, err := s.applyHere([]engine.Mutation{collections.XRange(s.table(), key, from, maxID, false, count)})
			if err == nil {
				err = res[0].Err
			}
			switch {
			case errors.Is(err, engine.ErrNotFound), woken && errors.Is(err, engine.ErrWrongType):
			case err != nil:
				s.w.Error(errText(err))
				return true
			case ok && len(res[0].Members) > 0:
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
	if !s.block(keys, block, blockReads, attempt) {
		s.blockEnded(s.w.NullArray)
	}
}
