package redis

import (
	"strconv"
	"strings"

	"anykv/internal/server"
)

// Operator commands that tools send and that mean little here, answered as Redis answers them in the same
// situation: WAIT and WAITAOF (anykv has no replicas; a write is durable when it is acknowledged), LATENCY (Redis's
// latency monitor, latency.go), SHUTDOWN (the server stops as on SIGTERM) and CLIENT KILL.
func init() {
	register(
		&command{name: "wait", arity: 3, imm: cmdWait, groupName: "generic", since: "3.0.0",
			summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."},
		&command{name: "waitaof", arity: 4, imm: cmdWaitAOF, groupName: "generic", since: "7.2.0",
			summary: "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas."},
		&command{name: "latency", arity: -2, flags: flagAdmin, imm: cmdLatency, groupName: "server", since: "2.8.13",
			summary: "A container for latency diagnostics commands."},
		&command{name: "shutdown", arity: -1, flags: flagAdmin, imm: cmdShutdown, groupName: "server", since: "1.0.0",
			summary: "Synchronously saves the database(s) to disk and shuts down the Redis server."},
	)
}

// cmdWait answers 0 replicas at once: there are none to wait for, and every acknowledged write is already as
// durable as --fsync makes it.
func cmdWait(s *session, args [][]byte) {
	if _, ok := argInt(args[1]); !ok {
		s.w.Error(errNotInt)
		return
	}
	if msg := timeoutMsError(args[2]); msg != "" {
		s.w.Error(msg)
		return
	}
	s.w.Int(0)
}

// timeoutMsError checks a timeout in milliseconds as Redis's getTimeoutFromObjectOrReply does, answering its
// error ("" for a good one).
func timeoutMsError(b []byte) string {
	timeout, ok := argInt(b)
	switch {
	case !ok:
		return "ERR timeout is not an integer or out of range"
	case timeout < 0:
		return "ERR timeout is negative"
	}
	return ""
}

// cmdWaitAOF answers Redis 7.2's WAITAOF numlocal numreplicas timeout at once, as WAIT: [1, 0] when the
// connection's acknowledged writes are already on disk (the pebble engine with --fsync always, reported as
// appendfsync always), else [0, 0]; anykv has no replicas. Redis would wait up to the timeout for a local fsync
// (everysec) or for replicas. Without an append-only file (an engine other than pebble: appendonly no) numlocal
// 1 is Redis's error.
func cmdWaitAOF(s *session, args [][]byte) {
	numlocal, ok := argInt(args[1])
	if !ok {
		s.w.Error(errNotInt)
		return
	}
	if numlocal < 0 || numlocal > 1 {
		s.w.Error("ERR value is out of range, value must between 0 and 1")
		return
	}
	if n, ok := argInt(args[2]); !ok || n < 0 {
		s.w.Error("ERR value is out of range, must be positive")
		return
	}
	if msg := timeoutMsError(args[3]); msg != "" {
		s.w.Error(msg)
		return
	}
	set := s.h.settings()
	if numlocal == 1 && set["appendonly"] != "yes" {
		s.w.Error("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
		return
	}
	local := int64(0)
	if set["appendonly"] == "yes" && set["appendfsync"] == "always" {
		local = 1
	}
	s.w.ArrayHeader(2)
	s.w.Int(local)
	s.w.Int(0)
}

func cmdLatency(s *session, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "latest" && len(args) == 2:
		names, series := s.h.latency.snapshot()
		s.w.ArrayHeader(len(names))
		for _, n := range names {
			ts := series[n]
			last := ts.samples[len(ts.samples)-1]
			s.w.ArrayHeader(4)
			s.w.BulkString(n)
			s.w.Int(last.at)
			s.w.Int(last.ms)
			s.w.Int(ts.max)
		}
	case sub == "history" && len(args) == 3:
		_, series := s.h.latency.snapshot()
		ts := series[string(args[2])]
		s.w.ArrayHeader(len(ts.samples))
		for _, x := range ts.samples {
			s.w.ArrayHeader(2)
			s.w.Int(x.at)
			s.w.Int(x.ms)
		}
	case sub == "reset":
		s.w.Int(s.h.latency.reset(args[2:]))
	case sub == "doctor" && len(args) == 2:
		s.w.Verbatim("txt", s.h.latency.doctor(s.h.store.Time().Unix()))
	case sub == "graph" && len(args) == 3:
		if g := s.h.latency.graphTitle(string(args[2])); g != "" {
			s.w.Verbatim("txt", g)
			return
		}
		s.w.Error("ERR No samples available for event '" + string(args[2]) + "'")
	case sub == "histogram":
		s.latencyHistogram(args[2:])
	case sub == "help":
		lines := []string{"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR", "    Return a human readable latency analysis report.",
			"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.",
			"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
			"HELP", "    Prints this help."}
		helpTo(s.w, lines)
	default:
		s.w.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try LATENCY HELP.")
	}
}

// cmdShutdown stops the server as SIGTERM does: connections finish what they read, the engine closes cleanly
// (every write was already durable, so SAVE and NOSAVE change nothing). As in Redis the client gets no reply: its
// connection closes. ABORT answers that no shutdown is in progress, since anykv's is never delayed.
func cmdShutdown(s *session, args [][]byte) {
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave", "save", "now", "force":
		case "abort":
			s.w.Error("ERR No shutdown in progress.")
			return
		default:
			s.w.Error(errSyntax)
			return
		}
	}
	if s.h.opts.Shutdown == nil {
		s.w.Error("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	s.h.log.Warn("SHUTDOWN asked by a client", "remote", s.conn.RemoteAddr().String())
	s.h.opts.Shutdown()
	s.closing = true
}

// clientKill closes the connections CLIENT KILL names: the old form (an address) answers OK or "No such client",
// the new form (filters ID, ADDR, LADDR, SKIPME) the number closed.
func (s *session) clientKill(args [][]byte) {
	if len(args) == 3 { // CLIENT KILL addr:port
		if s.h.killWhere(s, func(o *session) bool { return o.conn.RemoteAddr().String() == string(args[2]) }, false) == 0 {
			s.w.Error("ERR No such client")
			return
		}
		s.w.SimpleString("OK")
		return
	}
	if len(args)%2 != 0 {
		s.w.Error(errSyntax)
		return
	}
	var preds []func(*session) bool
	skipMe := true
	for i := 2; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				s.w.Error("ERR client-id should be greater than 0")
				return
			}
			preds = append(preds, func(o *session) bool { return o.id == id })
		case "addr":
			preds = append(preds, func(o *session) bool { return o.conn.RemoteAddr().String() == v })
		case "laddr":
			preds = append(preds, func(o *session) bool { return o.conn.LocalAddr().String() == v })
		case "user":
			s.h.acl.mu.Lock()
			u := s.h.acl.users[v]
			s.h.acl.mu.Unlock()
			if u == nil {
				s.w.Error("ERR No such user '" + v + "'")
				return
			}
			preds = append(preds, func(o *session) bool { return o.user == u })
		case "type": // as CLIENT LIST's TYPE filter
			keep, ok := s.clientListFilter(args[i : i+2])
			if !ok {
				return
			}
			preds = append(preds, keep)
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				s.w.Error(errSyntax)
				return
			}
		default:
			s.w.Error(errSyntax)
			return
		}
	}
	s.w.Int(int64(s.h.killWhere(s, func(o *session) bool {
		for _, p := range preds {
			if !p(o) {
				return false
			}
		}
		return true
	}, skipMe)))
}

// killWhere closes every connection that match selects (the caller's own unless skipMe) and counts them. The
// connection's own goroutine sees its read fail and ends it; the caller's is closed after its reply.
func (h *Handler) killWhere(me *session, match func(*session) bool, skipMe bool) int {
	h.mu.Lock()
	var victims []*session
	for _, o := range h.sessions {
		if match(o) && !(skipMe && o == me) {
			victims = append(victims, o)
		}
	}
	h.mu.Unlock()
	for _, o := range victims {
		if o == me {
			me.closing = true
			continue
		}
		server.CloseNow(o.conn) // a TLS Close would wait up to 5 s per victim that does not read
	}
	return len(victims)
}
