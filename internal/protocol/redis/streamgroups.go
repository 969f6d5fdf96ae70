package redis

import (
	"errors"
	"strconv"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

// Stream consumer groups: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO (XREADGROUP: streamreadgroup.go).
// Each compiles into one call of a stream function (internal/collections: streamgroupfn.go, streamclaim.go,
// streaminfo.go; the records in streamgroup.go) that reads and writes the group's records in the batch, so they
// run in pipelines, MULTI and scripts like any data command. Replies and errors are Redis 7.2's.

func init() {
	notes["xgroup"] = noteXGroup
	notes["xclaim"] = noteConsumerCreated
	notes["xautoclaim"] = noteConsumerCreated
}

// noteXGroup sends XGROUP's events as Redis does: xgroup-create (and "new" for a stream MKSTREAM made),
// xgroup-setid, xgroup-destroy when a group went, xgroup-createconsumer when a consumer was made,
// xgroup-delconsumer when one was there to delete.
func noteXGroup(n *noteCtx) {
	if len(n.args) < 3 || len(n.res) == 0 {
		return
	}
	sub := lower(n.args[1])
	switch {
	case (sub == "create" || sub == "setid") && n.ok(),
		sub == "destroy" && n.count() > 0,
		sub == "createconsumer" && collections.ConsumerCreated(n.res[0]),
		sub == "delconsumer" && collections.ConsumerDeleted(n.res[0]):
		n.emit(notifyStream, "xgroup-"+sub, n.args[2])
	}
}

// noteConsumerCreated: XCLAIM and XAUTOCLAIM send xgroup-createconsumer when they made their consumer.
func noteConsumerCreated(n *noteCtx) {
	if len(n.res) > 0 && collections.ConsumerCreated(n.res[0]) {
		n.emit(notifyStream, "xgroup-createconsumer", n.args[1])
	}
}

// noGroup is Redis's NOGROUP error of XPENDING, XCLAIM and XAUTOCLAIM.
func noGroup(key, group []byte) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'"
}

// noGroupForKey is Redis's NOGROUP error of XGROUP and XINFO CONSUMERS.
func noGroupForKey(key, group []byte) string {
	return "NOGROUP No such consumer group '" + string(group) + "' for key name '" + string(key) + "'"
}

// writeTree writes a group function's reply tree, or its error (NOGROUP in the words of nogroup).
func writeTree(w *resp.Writer, r engine.Result, nogroup string) {
	switch {
	case errors.Is(r.Err, collections.ErrNoGroup):
		w.Error(nogroup)
	case r.Err != nil:
		w.Error(groupErr(r.Err))
	default:
		if err := collections.WalkReply(r.New.Value, w); err != nil {
			w.Error(errText(err))
		}
	}
}

// groupErr answers the group functions' own errors, whose texts are Redis's.
func groupErr(err error) string {
	if errors.Is(err, collections.ErrBusyGroup) {
		return err.Error()
	}
	return streamErr(err)
}

// xgroupHelp is Redis 7's XGROUP HELP.
var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

// xinfoHelp is Redis 7's XINFO HELP.
var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// subcommand checks a container's subcommand against Redis's arities (exact n, or at least -n) and answers
// Redis's errors; help answers HELP.
func (s *session) subcommand(args [][]byte, container string, arities map[string]int, help []string) (string, bool) {
	sub := lower(args[1])
	n, ok := arities[sub]
	switch {
	case !ok:
		s.fail("ERR unknown subcommand '" + clip(args[1]) + "'. Try " + upper(container) + " HELP.")
		return sub, false
	case n >= 0 && len(args) != n || n < 0 && len(args) < -n:
		s.fail("ERR wrong number of arguments for '" + container + "|" + sub + "' command")
		return sub, false
	case sub == "help":
		s.plan(func(w *resp.Writer, _ []engine.Result) {
			helpTo(w, help)
		})
		return sub, false
	}
	return sub, true
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// xgroupSyntax is Redis's answer to a subcommand's bad options.
func xgroupSyntax(sub []byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + clip(sub) + "'. Try XGROUP HELP."
}

// parseEntriesRead parses ENTRIESREAD's value as Redis does.
func (s *session) parseEntriesRead(b []byte) ([]byte, bool) {
	n, ok := argInt(b)
	switch {
	case !ok:
		s.fail(errNotInt)
		return nil, false
	case n < 0 && n != -1:
		s.fail("ERR value for ENTRIESREAD must be positive or -1")
		return nil, false
	}
	return strconv.AppendInt(nil, n, 10), true
}

func cmdXGroup(s *session, args [][]byte) {
	sub, ok := s.subcommand(args, "xgroup", map[string]int{"create": -5, "setid": -5, "destroy": 4,
		"createconsumer": 5, "delconsumer": 5, "help": 2}, xgroupHelp)
	if !ok {
		return
	}
	key, name := args[2], args[3]
	var fargs [][]byte
	switch sub {
	case "create":
		mk, read := []byte("0"), []byte(nil)
		for i := 5; i < len(args); i++ {
			switch {
			case eq(args[i], "mkstream"):
				mk = []byte("1")
			case eq(args[i], "entriesread") && i+1 < len(args):
				if read, ok = s.parseEntriesRead(args[i+1]); !ok {
					return
				}
				i++
			default:
				s.fail(xgroupSyntax(args[1]))
				return
			}
		}
		if len(args) > 8 {
			s.fail(xgroupSyntax(args[1]))
			return
		}
		if string(args[4]) != "$" {
			if _, ok := collections.ParseID(args[4], false); !ok {
				s.fail(collections.ErrStreamID.Error())
				return
			}
		}
		fargs = [][]byte{name, args[4], mk, read}
	case "setid":
		var read []byte
		switch len(args) {
		case 5:
		case 7:
			if !eq(args[5], "entriesread") {
				s.fail(xgroupSyntax(args[1]))
				return
			}
			if read, ok = s.parseEntriesRead(args[6]); !ok {
				return
			}
		default:
			s.fail(xgroupSyntax(args[1]))
			return
		}
		if string(args[4]) != "$" {
			if _, ok := collections.ParseRangeID(args[4], false); !ok || args[4][0] == '(' {
				s.fail(collections.ErrStreamID.Error())
				return
			}
		}
		fargs = [][]byte{name, args[4], read}
	case "destroy":
		fargs = [][]byte{name}
	default:
		fargs = [][]byte{name, args[4]}
	}
	s.add(collections.XGroup(s.table(), key, sub, fargs...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
		case errors.Is(r.Err, collections.ErrNoGroup):
			w.Error(noGroupForKey(key, name))
		case r.Err != nil:
			w.Error(groupErr(r.Err))
		case sub == "create" || sub == "setid":
			w.SimpleString("OK")
		default:
			w.Int(collections.Int(r))
		}
	})
}

// groupProbe reads the group of the stream at key (XPENDING's summary): its result's Err is WRONGTYPE, or
// ErrNoGroup when there is no stream or no such group.
func groupProbe(table string, key, group []byte) engine.Mutation {
	return collections.XPending(table, key, group, true, collections.ID{}, collections.ID{}, 0, 0, nil)
}

// probeGroup adds a read of key's group that answers, in fn, whether Redis would have failed before parsing
// the rest of the command (WRONGTYPE, or NOGROUP): XCLAIM and XACK look the group up first.
func (s *session) probeGroup(key, group []byte, fn func(w *resp.Writer, r engine.Result)) {
	s.add(groupProbe(s.table(), key, group))
	s.plan(func(w *resp.Writer, res []engine.Result) { fn(w, res[0]) })
}

func cmdXAck(s *session, args [][]byte) {
	for _, a := range args[3:] {
		if _, ok := collections.ParseID(a, false); !ok {
			// Redis answers 0 without a stream or group, WRONGTYPE for another type, else the ID's error.
			s.probeGroup(args[1], args[2], func(w *resp.Writer, r engine.Result) {
				switch {
				case errors.Is(r.Err, collections.ErrNoGroup):
					w.Int(0)
				case r.Err != nil:
					w.Error(errText(r.Err))
				default:
					w.Error(collections.ErrStreamID.Error())
				}
			})
			return
		}
	}
	s.add(collections.XAck(s.table(), args[1], args[2], args[3:]...))
	s.plan(replyListInt)
}

// parseIntervalID parses an ID of an interval (XPENDING, XAUTOCLAIM): "-", "+", an ID, or "(" and an ID; Redis's
// errors for an exclusive bound past either end.
func (s *session) parseIntervalID(b []byte, high bool) (collections.ID, bool) {
	id, ok := collections.ParseRangeID(b, high)
	if ok {
		return id, true
	}
	if len(b) > 1 && b[0] == '(' {
		if _, ok := collections.ParseID(b[1:], high); ok { // a valid ID with no ID past it
			s.fail(map[bool]string{false: "ERR invalid start ID for the interval", true: "ERR invalid end ID for the interval"}[high])
			return id, false
		}
	}
	s.fail(collections.ErrStreamID.Error())
	return id, false
}

func cmdXPending(s *session, args [][]byte) {
	key, group := args[1], args[2]
	if len(args) == 3 {
		s.add(groupProbe(s.table(), key, group))
		s.plan(func(w *resp.Writer, res []engine.Result) { writeTree(w, res[0], noGroup(key, group)) })
		return
	}
	if len(args) < 6 || len(args) > 9 {
		s.fail("ERR syntax error")
		return
	}
	i, minIdle := 3, int64(0)
	if eq(args[3], "idle") {
		n, ok := argInt(args[4])
		if !ok {
			s.fail(errNotInt)
			return
		}
		if len(args) < 8 {
			s.fail("ERR syntax error")
			return
		}
		minIdle, i = n, 5
	}
	count, ok := argInt(args[i+2])
	if !ok {
		s.fail(errNotInt)
		return
	}
	from, ok := s.parseIntervalID(args[i], false)
	if !ok {
		return
	}
	to, ok := s.parseIntervalID(args[i+1], true)
	if !ok {
		return
	}
	var consumer []byte
	if i+3 < len(args) {
		consumer = args[i+3] // and what follows it is passed over, as Redis does
	}
	s.add(collections.XPending(s.table(), key, group, false, from, to, max(count, 0), minIdle, consumer))
	s.plan(func(w *resp.Writer, res []engine.Result) { writeTree(w, res[0], noGroup(key, group)) })
}

func cmdXClaim(s *session, args [][]byte) {
	key, group := args[1], args[2]
	fail := func(msg string) { // Redis looks the group up before it parses
		s.probeGroup(key, group, func(w *resp.Writer, r engine.Result) {
			switch {
			case errors.Is(r.Err, collections.ErrNoGroup):
				w.Error(noGroup(key, group))
			case r.Err != nil:
				w.Error(errText(r.Err))
			default:
				w.Error(msg)
			}
		})
	}
	minIdle, ok := argInt(args[4])
	if !ok {
		fail("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	spec := collections.ClaimSpec{MinIdle: max(minIdle, 0), Idle: -1, Time: -1, RetryCount: -1}
	j := 5
	for j < len(args) {
		if _, ok := collections.ParseID(args[j], false); !ok {
			break
		}
		j++
	}
	ids := args[5:j]
	idle, at := int64(-1), int64(-1)
	for ; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "force"):
			spec.Force = true
		case eq(args[j], "justid"):
			spec.JustID = true
		case (eq(args[j], "idle") || eq(args[j], "time") || eq(args[j], "retrycount")) && more:
			opt := upper(lower(args[j]))
			j++
			n, ok := argInt(args[j])
			if !ok {
				fail("ERR Invalid " + opt + " option argument for XCLAIM")
				return
			}
			switch opt {
			case "IDLE":
				idle, at = n, -1
			case "TIME":
				at, idle = n, -1
			default:
				spec.RetryCount = n
			}
		case eq(args[j], "lastid") && more:
			j++
			id, ok := collections.ParseID(args[j], false)
			if !ok {
				fail(collections.ErrStreamID.Error())
				return
			}
			spec.LastID = id
		default:
			fail("ERR Unrecognized XCLAIM option '" + string(args[j]) + "'")
			return
		}
	}
	// A negative IDLE or TIME: Redis takes now (a delivery time in the future or before 1970 becomes now).
	spec.Idle, spec.Time = idle, at
	if idle < -1 {
		spec.Idle = 0
	}
	if at < -1 {
		spec.Idle = 0
	}
	s.add(collections.XClaim(s.table(), key, group, args[3], spec, ids...))
	s.plan(func(w *resp.Writer, res []engine.Result) { writeTree(w, res[0], noGroup(key, group)) })
}

func cmdXAutoClaim(s *session, args [][]byte) {
	key, group := args[1], args[2]
	minIdle, ok := argInt(args[4])
	if !ok {
		s.fail("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	start, ok := s.parseIntervalID(args[5], false)
	if !ok {
		return
	}
	count, justID := int64(100), false
	for j := 6; j < len(args); j++ {
		switch {
		case eq(args[j], "count") && j+1 < len(args):
			n, ok := argInt(args[j+1])
			if !ok || n < 1 || n > (1<<63-1)/16 {
				s.fail("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case eq(args[j], "justid"):
			justID = true
		default:
			s.fail("ERR syntax error")
			return
		}
	}
	s.add(collections.XAutoClaim(s.table(), key, group, args[3], max(minIdle, 0), start, count, justID))
	s.plan(func(w *resp.Writer, res []engine.Result) { writeTree(w, res[0], noGroup(key, group)) })
}

func cmdXInfo(s *session, args [][]byte) {
	sub, ok := s.subcommand(args, "xinfo", map[string]int{"stream": -3, "groups": 3, "consumers": 4, "help": 2}, xinfoHelp)
	if !ok {
		return
	}
	key := args[2]
	var arg []byte
	switch sub {
	case "consumers":
		arg = args[3]
	case "stream":
		if len(args) > 3 {
			if !eq(args[3], "full") {
				s.fail("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try XINFO HELP.")
				return
			}
			sub, arg = "full", []byte("10")
			n, given, ok := s.lastCount(args, 4)
			switch {
			case !ok:
				return
			case given && n >= 0:
				arg = strconv.AppendInt(nil, n, 10)
			case !given && len(args) > 4:
				s.fail("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try XINFO HELP.")
				return
			}
		}
	}
	s.add(collections.XInfo(s.table(), key, sub, arg))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if errors.Is(res[0].Err, engine.ErrNotFound) {
			w.Error("ERR no such key")
			return
		}
		writeTree(w, res[0], noGroupForKey(key, arg))
	})
}
