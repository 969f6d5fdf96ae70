package redis

import (
	"context"
	"sort"
)

// Redis 7's server-assisted client-side caching: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO, and what a
// tracking connection does. In the default mode the keys of the read-only commands a tracking client runs (in
// OPTIN mode only after CLIENT CACHING YES, in OPTOUT mode unless CLIENT CACHING NO) are registered in the
// handler's tracking table (tracking_table.go); when any client writes one, or it expires, the table sends the
// client an invalidation and forgets the key for it. In BCAST mode nothing is registered: every write of a key
// under one of the client's prefixes is sent. The messages and their ordering are in tracking_push.go.
//
// rueidis and valkey-go send CLIENT TRACKING ON OPTIN when they connect (unless their cache is disabled), and
// failed to connect without it.

// trackerKey is the context key of a tracking connection's writes: the tracker, so that its own writes are known
// (NOLOOP).
type trackerKey struct{}

// tracker is one connection's tracking state. The fields senders read (mode, redirect, prefixes, keys) are
// changed under the tracking table's lock, by the connection's goroutine only, which reads them without it.
type tracker struct {
	s   *session
	ctx context.Context // the connection's write context, naming the tracker

	on, bcast, optin, optout, noloop bool
	redirect                         int64    // the client id invalidations go to (0: this connection)
	target                           *session // that client's connection
	prefixes                         []string // BCAST's, sorted
	keys                             map[string]struct{}
	exec                             *execReads // while EXEC's batch runs, if the transaction reads tracked keys

	// The connection's own: CLIENT CACHING was given for the next command (or transaction), and whether a
	// command other than CLIENT ran since, so that the next one outside MULTI clears it (as Redis's resetClient).
	caching, armed bool
}

// msg is an invalidation of keys (or all, null) for t, where it goes now; the caller holds the table's lock.
func (t *tracker) msg(keys [][]byte, null bool) trackMsg {
	return trackMsg{t: t, to: t.target, redir: t.redirect, keys: keys, null: null}
}

// wantsReads reports whether the keys of the next read are to be registered.
func (t *tracker) wantsReads() bool {
	return t.on && !t.bcast && !(t.optin && !t.caching) && !(t.optout && t.caching)
}

// writeCtx is the context of the session's writes: a tracking connection's names its tracker.
func (s *session) writeCtx() context.Context {
	if s.trk != nil {
		return s.trk.ctx
	}
	return respCtx
}

// trackCommand runs before each command of a tracking connection: CLIENT CACHING lasts for one command, or one
// transaction, and any CLIENT subcommand in between keeps it, as in Redis.
func (s *session) trackCommand(cmd *command) {
	t := s.trk
	if t.caching && t.armed && !s.inMulti {
		t.caching = false
	}
	t.armed = cmd == nil || cmd.name != "client"
}

// trackRead registers the keys of a read-only command about to run, when the connection tracks its reads. EVAL_RO
// and EVALSHA_RO register nothing themselves: the reads their script makes do (Redis's rule).
func (s *session) trackRead(cmd *command, args [][]byte) {
	t := s.trk
	if !t.wantsReads() || cmd.flags&flagReadonly == 0 || cmd.flags&flagPubSub != 0 || cmd.tx != nil {
		return
	}
	keys := cmd.keys(args)
	if len(keys) == 0 {
		return
	}
	if s.inExec {
		s.h.trackExecKeys(t, keys, len(s.batch.Muts()))
		return
	}
	if s.batchWrites() {
		// A write before it in the batch runs first: a read registered now would be forgotten by the
		// invalidation of the connection's own write of its key, where Redis registers it after.
		s.flush()
	}
	s.h.trackKeys(t, keys)
}

// batchWrites reports whether the batch being built writes anything.
func (s *session) batchWrites() bool {
	muts := s.batch.Muts()
	for i := range muts {
		if muts[i].Writes() {
			return true
		}
	}
	return false
}

// scriptTracker is what a script's arguments carry for the reads it makes: ":id" of the tracking client that
// runs it, when that client's reads are registered now; "" otherwise.
func (s *session) scriptTracker() string {
	if s.trk == nil || !s.trk.wantsReads() {
		return ""
	}
	return ":" + itoa(s.id)
}

// clientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with
// Redis 7's checks in its order and its error texts.
func (s *session) clientTracking(args [][]byte) {
	var redir int64
	var target *session
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch a := lower(args[j]); {
		case a == "redirect" && more:
			j++
			if redir != 0 {
				s.w.Error("ERR A client can only redirect to a single other client")
				return
			}
			n, ok := argInt(args[j])
			if !ok {
				s.w.Error(errNotInt)
				return
			}
			s.h.mu.Lock()
			target = s.h.sessions[n]
			s.h.mu.Unlock()
			if target == nil {
				s.w.Error("ERR The client ID you want redirect to does not exist")
				return
			}
			redir = n
		case a == "bcast":
			bcast = true
		case a == "optin":
			optin = true
		case a == "optout":
			optout = true
		case a == "noloop":
			noloop = true
		case a == "prefix" && more:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			s.w.Error(errSyntax)
			return
		}
	}
	t := s.trk
	switch lower(args[2]) {
	case "on":
		switch {
		case !bcast && len(prefixes) > 0:
			s.w.Error("ERR PREFIX option requires BCAST mode to be enabled")
			return
		case t != nil && t.on && t.bcast != bcast:
			s.w.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		case bcast && (optin || optout):
			s.w.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		case optin && optout:
			s.w.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		case t != nil && (optin && t.optout || optout && t.optin):
			s.w.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if bcast {
			if msg := prefixCollision(t, prefixes); msg != "" {
				s.w.Error(msg)
				return
			}
		}
		if t == nil {
			t = &tracker{s: s}
			t.ctx = context.WithValue(respCtx, trackerKey{}, t)
			s.trk = t
		}
		s.h.trackEnable(t, trackMode{redir, target, bcast, optin, optout, noloop}, prefixes)
		s.trackBusy() // the reads after it in this pipeline are tracked: their replies go first
		s.state.trackBroken.Store(false)
		s.state.redir.Store(redir)
		s.state.tracking.Store(trackingFlags(t))
	case "off":
		s.trackOff()
	default:
		s.w.Error(errSyntax)
		return
	}
	s.w.SimpleString("OK")
}

// Bits of clientState.tracking, for CLIENT LIST's flags.
const (
	trackingOn    = 1
	trackingBcast = 2
)

func trackingFlags(t *tracker) uint32 {
	f := uint32(trackingOn)
	if t.bcast {
		f |= trackingBcast
	}
	return f
}

// prefixCollision is Redis's complaint about BCAST prefixes that overlap (one is a prefix of the other): a new one
// with one the client has, or two new ones; "" if none do.
func prefixCollision(t *tracker, prefixes []string) string {
	overlap := func(a, b string) bool { n := min(len(a), len(b)); return a[:n] == b[:n] }
	for i, p := range prefixes {
		if t != nil {
			for _, old := range t.prefixes {
				if overlap(old, p) {
					return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + old + "'. Prefixes for a single client must not overlap."
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// trackMode is what CLIENT TRACKING ON sets.
type trackMode struct {
	redirect                     int64
	target                       *session
	bcast, optin, optout, noloop bool
}

// trackOff turns tracking off (CLIENT TRACKING OFF, RESET, the connection's end): the table forgets the
// connection's keys and prefixes.
func (s *session) trackOff() {
	t := s.trk
	if t == nil || !t.on {
		return
	}
	s.h.trackDisable(t)
	t.caching = false
	s.state.tracking.Store(0)
	s.state.trackBroken.Store(false)
	s.state.redir.Store(-1)
}

// clientCaching is CLIENT CACHING YES|NO.
func (s *session) clientCaching(arg []byte) {
	t := s.trk
	if t == nil || !t.on {
		s.w.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch lower(arg) {
	case "yes":
		if !t.optin {
			s.w.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !t.optout {
			s.w.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		s.w.Error(errSyntax)
		return
	}
	t.caching = true
	s.w.SimpleString("OK")
}

// clientGetRedir is CLIENT GETREDIR: the redirect's client id, 0 for none, -1 when not tracking.
func (s *session) clientGetRedir() {
	if t := s.trk; t != nil && t.on {
		s.w.Int(t.redirect)
		return
	}
	s.w.Int(-1)
}

// clientTrackingInfo is CLIENT TRACKINGINFO: the flags (a set), the redirect and the BCAST prefixes.
func (s *session) clientTrackingInfo() {
	t := s.trk
	on := t != nil && t.on
	flags := []string{"off"}
	if on {
		flags[0] = "on"
		for _, f := range []struct { // in Redis's order
			set  bool
			name string
		}{{t.bcast, "bcast"}, {t.optin, "optin"}, {t.optin && t.caching, "caching-yes"}, {t.optout, "optout"},
			{t.optout && t.caching, "caching-no"}, {t.noloop, "noloop"}, {s.state.trackBroken.Load(), "broken_redirect"}} {
			if f.set {
				flags = append(flags, f.name)
			}
		}
	}
	w := s.w
	w.MapHeader(3)
	w.BulkString("flags")
	w.SetHeader(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	if on {
		w.Int(t.redirect)
	} else {
		w.Int(-1)
	}
	w.BulkString("prefixes")
	var ps []string
	if on {
		ps = append(ps, t.prefixes...)
		sort.Strings(ps)
	}
	w.ArrayHeader(len(ps))
	for _, p := range ps {
		w.BulkString(p)
	}
}
