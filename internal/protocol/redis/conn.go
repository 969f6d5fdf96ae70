package redis

import (
	"strings"
)

func init() {
	na := flagNoAuth | flagFast
	register(
		&command{name: "ping", arity: -1, flags: flagFast, imm: cmdPing, summary: "Returns the server's liveliness response."},
		&command{name: "echo", arity: 2, flags: flagFast, imm: cmdEcho, inScript: true, summary: "Returns the given string."},
		&command{name: "hello", arity: -1, flags: na, imm: cmdHello, summary: "Handshakes with the Redis server."},
		&command{name: "auth", arity: -2, flags: na, imm: cmdAuth, summary: "Authenticates the connection."},
		&command{name: "select", arity: 2, flags: flagFast, imm: cmdSelect, summary: "Changes the selected database."},
		&command{name: "quit", arity: -1, flags: na | flagTx, imm: cmdQuit, summary: "Closes the connection."},
		&command{name: "reset", arity: 1, flags: na | flagTx, imm: cmdReset, summary: "Resets the connection."},
		&command{name: "client", arity: -2, imm: cmdClient, summary: "A container for client connection commands."},
	)
}

func cmdPing(s *session, args [][]byte) {
	if s.subscribed() && s.w.Proto() < 3 { // a subscribed RESP2 connection: a pong message
		s.w.ArrayHeader(2)
		s.w.BulkString("pong")
		if len(args) > 1 {
			s.w.Bulk(args[1])
		} else {
			s.w.BulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		s.w.SimpleString("PONG")
	case 2:
		s.w.Bulk(args[1])
	default:
		s.w.Error("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(s *session, args [][]byte) { s.w.Bulk(args[1]) }

func cmdAuth(s *session, args [][]byte) {
	if len(args) > 3 {
		s.w.Error(errSyntax)
		return
	}
	user := []byte("default")
	if len(args) == 2 {
		if s.h.acl.def.get().nopass {
			s.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	} else {
		user = args[1]
	}
	if !s.authenticate(user, args[len(args)-1]) {
		s.w.Error("WRONGPASS invalid username-password pair or user is disabled.")
		return
	}
	s.w.SimpleString("OK")
}

func cmdHello(s *session, args [][]byte) {
	proto := s.w.Proto()
	if len(args) > 1 {
		v, ok := argInt(args[1])
		if !ok {
			s.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			s.w.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	name, setName := []byte(nil), false
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "auth") && i+2 < len(args):
			// A nopass user (the default one without --requirepass) takes any password, as in Redis.
			if !s.authenticate(args[i+1], args[i+2]) {
				s.w.Error("WRONGPASS invalid username-password pair or user is disabled.")
				return
			}
			i += 2
		case eq(args[i], "setname") && i+1 < len(args):
			name, setName = args[i+1], true
			i++
		default:
			s.w.Error("ERR Syntax error in HELLO option '" + clip(args[i]) + "'")
			return
		}
	}
	if !s.authed {
		s.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !validClientName(name) {
			s.w.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		s.setInfo(func() { s.name = string(name) })
	}
	s.setProto(proto)
	w := s.w
	w.MapHeader(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(Version)
	w.BulkString("proto")
	w.Int(int64(proto))
	w.BulkString("id")
	w.Int(s.id)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.ArrayHeader(0)
}

func cmdSelect(s *session, args [][]byte) {
	if msg := s.selectDB(args[1]); msg != "" {
		s.w.Error(msg)
		return
	}
	s.w.SimpleString("OK")
}

// selectDB switches the session's database, or returns Redis's error text.
func (s *session) selectDB(arg []byte) string {
	n, ok := argInt(arg)
	if !ok {
		return errNotInt
	}
	if n < 0 || n >= int64(s.h.opts.Databases) {
		return "ERR DB index is out of range"
	}
	s.setInfo(func() { s.db = int(n) })
	return ""
}

func cmdQuit(s *session, args [][]byte) {
	s.w.SimpleString("OK")
	s.closing = true
}

func cmdReset(s *session, args [][]byte) {
	s.endMulti()
	s.endMonitor()
	if s.sub != nil { // leave every channel and pattern; output keeps going through the pusher, in order
		s.leaveAll()
		s.unhold(&s.held.subs)
	}
	s.trackOff()
	s.setProto(2)
	s.setAuthed(!s.h.opts.Auth.RESPRequired()) // back to the default user, authenticated if it is nopass and on
	s.reads = nil                              // READWRITE
	s.setInfo(func() { s.db, s.name, s.user = 0, "", s.h.acl.def })
	s.replyOff, s.skipNext, s.silent = false, false, false // CLIENT REPLY ON, and RESET is answered
	s.w.SimpleString("RESET")
}

func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// setInfo changes fields that CLIENT LIST reads from other connections, under the handler's lock.
func (s *session) setInfo(f func()) {
	s.h.mu.Lock()
	f()
	s.h.mu.Unlock()
}

func cmdClient(s *session, args [][]byte) {
	sub := lower(args[1])
	switch {
	case sub == "kill" && len(args) >= 3:
		s.clientKill(args)
	case sub == "setname" && len(args) == 3:
		if !validClientName(args[2]) {
			s.w.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		name := string(args[2])
		s.setInfo(func() { s.name = name })
		s.w.SimpleString("OK")
	case sub == "getname" && len(args) == 2:
		if s.name == "" {
			s.w.Null()
		} else {
			s.w.BulkString(s.name)
		}
	case sub == "id" && len(args) == 2:
		s.w.Int(s.id)
	case sub == "info" && len(args) == 2:
		s.publishState(false)
		s.h.mu.Lock()
		line := s.clientLine(s.h.store.Time(), argsSize(args))
		s.h.mu.Unlock()
		s.w.Verbatim("txt", line)
	case sub == "list":
		keep, ok := s.clientListFilter(args[2:])
		if !ok {
			return
		}
		var b strings.Builder
		left := s.awaitLeft()
		now := s.h.store.Time()
		s.publishState(false)
		s.h.mu.Lock()
		for _, o := range s.sortedSessions() {
			if !keep(o) || left[o] {
				continue
			}
			argv := 0
			if o == s {
				argv = argsSize(args)
			}
			b.WriteString(o.clientLine(now, argv))
		}
		s.h.mu.Unlock()
		s.w.Verbatim("txt", b.String())
	case sub == "setinfo" && len(args) == 4:
		val := string(args[3])
		if attr := lower(args[2]); (attr == "lib-name" || attr == "lib-ver") && !validClientName(args[3]) {
			// as Redis 7.2: a space or newline would forge fields or lines of CLIENT LIST
			s.w.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
		switch lower(args[2]) {
		case "lib-name":
			s.setInfo(func() { s.libName = val })
		case "lib-ver":
			s.setInfo(func() { s.libVer = val })
		default:
			s.w.Error("ERR Unrecognized option '" + clip(args[2]) + "'")
			return
		}
		s.w.SimpleString("OK")
	case sub == "pause" && (len(args) == 3 || len(args) == 4):
		s.clientPause(args)
	case sub == "unpause" && len(args) == 2:
		// A monitor's (or subscriber's) reply is queued to its pusher before the paused clients resume, as in Redis,
		// where they run after the pass of the event loop that unpaused them: a monitor that unpauses sees its +OK
		// before their commands' lines. The queue never blocks; another client's reply is not written out first,
		// since a client slow to read would then hold the pause (TestUnpauseDoesNotWaitForItsReader).
		s.w.SimpleString("OK")
		if s.sub != nil {
			s.out()
		}
		s.h.pause.unpause()
	case (sub == "no-evict" || sub == "no-touch") && len(args) == 3:
		s.w.SimpleString("OK")
	case sub == "tracking" && len(args) >= 3:
		s.clientTracking(args)
	case sub == "caching" && len(args) == 3:
		s.clientCaching(args[2])
	case sub == "getredir" && len(args) == 2:
		s.clientGetRedir()
	case sub == "trackinginfo" && len(args) == 2:
		s.clientTrackingInfo()
	case sub == "reply" && len(args) == 3:
		switch lower(args[2]) {
		case "on":
			s.replyOff, s.skipNext, s.silent = false, false, false
			s.w.SimpleString("OK")
		case "off":
			s.replyOff = true
		case "skip":
			s.skipNext = !s.replyOff
		default:
			s.w.Error(errSyntax)
		}
	case sub == "unblock" && (len(args) == 3 || len(args) == 4):
		s.clientUnblock(args)
	case sub == "unblock" && len(args) > 4:
		s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try CLIENT HELP.")
	case sub == "help" && len(args) == 2:
		helpTo(s.w, clientHelp)
	default:
		s.subcommandError("client", args[1], "help", "kill", "setname", "getname", "id", "info", "list", "setinfo", "pause",
			"unpause", "no-evict", "no-touch", "tracking", "caching", "getredir", "trackinginfo", "unblock", "reply")
	}
}
