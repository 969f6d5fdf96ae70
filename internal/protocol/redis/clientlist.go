package redis

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// What CLIENT LIST shows of a connection. The connection's goroutine publishes its state after each command
// (publishState); any connection reads it. Names set by CLIENT SETNAME/SETINFO stay under the handler's lock.

// clientState holds a connection's CLIENT LIST figures as atomics, written by its own goroutine only.
type clientState struct {
	lastActive      atomic.Int64           // unix ns when the last command ended (idle counts from it)
	cmd             atomic.Pointer[string] // full name of the last command ("client|list")
	db              atomic.Int32
	multi           atomic.Int32 // commands queued by MULTI; -1 outside one
	sub, psub, ssub atomic.Int32
	qbuf, qcap      atomic.Int64 // request bytes held unparsed, and the request buffer's size
	multiMem        atomic.Int64 // bytes of the commands queued by MULTI
	obl             atomic.Int64 // reply bytes waiting to be written
	omem            atomic.Int64 // bytes a pusher holds queued (a subscriber's)
	resp            atomic.Int32
	blocked         atomic.Bool
	tracking        atomic.Uint32 // trackingOn, trackingBcast (tracking.go)
	trackBroken     atomic.Bool   // an invalidation found the redirect target gone (flag R)
	redir           atomic.Int64  // CLIENT TRACKING's redirect (0: none), -1 when not tracking
	monitor         atomic.Bool
	// reading is set while the connection waits for its client's next bytes, lastRead (store time, unix ns) when
	// they last came: the idle timeout (CONFIG SET timeout) closes a client idle in a read.
	reading  atomic.Bool
	lastRead atomic.Int64
	ending   atomic.Bool // the connection's goroutine is ending: CLIENT LIST leaves it out
}

// containers are the commands whose subcommand is part of the name Redis 7 shows in CLIENT LIST (cmd=).
var containers = map[string]bool{"client": true, "config": true, "command": true, "object": true, "memory": true,
	"script": true, "pubsub": true, "slowlog": true, "function": true, "debug": true, "xinfo": true, "xgroup": true,
	"acl": true}

// fullNames interns "container|sub" names so publishing one allocates only the first time.
var fullNames sync.Map

// fullName is the name CLIENT LIST shows for a call of cmd with args.
func fullName(cmd *command, args [][]byte) *string {
	if !cmd.container || len(args) < 2 || len(args[1]) > 32 {
		return &cmd.name // the command table outlives every session: no allocation per command
	}
	name := cmd.name + "|" + lower(args[1])
	if p, ok := fullNames.Load(name); ok {
		return p.(*string)
	}
	p, _ := fullNames.LoadOrStore(name, &name)
	return p.(*string)
}

// publishState records the connection's figures after a command (lastActive when done is set: the command ended).
func (s *session) publishState(done bool) {
	st := &s.state
	if done {
		st.lastActive.Store(s.h.store.Time().UnixNano())
	}
	st.db.Store(int32(s.db))
	multi := int32(-1)
	if s.inMulti {
		multi = int32(len(s.queued))
	}
	st.multi.Store(multi)
	s.publishSubs()
	st.qbuf.Store(int64(s.parser.Buffered()))
	st.qcap.Store(int64(s.parser.Size()))
	st.obl.Store(int64(s.w.Len()))
	st.resp.Store(int32(s.w.Proto()))
	st.monitor.Store(s.monitoring)
}

// publishSubs records the connection's subscription counts.
func (s *session) publishSubs() {
	s.state.sub.Store(int32(len(s.channels)))
	s.state.psub.Store(int32(len(s.patterns)))
	s.state.ssub.Store(int32(len(s.shards)))
}

// connFD is the connection's file descriptor, as Redis shows it (-1 when the connection has none).
func connFD(c any) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// clientLine is one CLIENT LIST / CLIENT INFO line with Redis 7's fields in Redis's order; the caller holds h.mu
// (for the names). argv is the size of the arguments of the command running now (the caller's own line).
func (s *session) clientLine(now time.Time, argv int) string {
	st := &s.state
	flags := ""
	if st.sub.Load()+st.psub.Load()+st.ssub.Load() > 0 {
		flags += "P"
	}
	if st.multi.Load() >= 0 {
		flags += "x"
	}
	if st.blocked.Load() {
		flags += "b"
	}
	if tr := st.tracking.Load(); tr&trackingOn != 0 { // t, R, B in Redis's order
		flags += "t"
		if st.trackBroken.Load() {
			flags += "R"
		}
		if tr&trackingBcast != 0 {
			flags += "B"
		}
	}
	if flags == "" {
		flags = "N"
	}
	idle := int64(0)
	if last := st.lastActive.Load(); last > 0 {
		idle = int64(now.Sub(time.Unix(0, last)).Seconds())
	}
	cmd := "NULL"
	if p := st.cmd.Load(); p != nil {
		cmd = *p
	}
	qbuf, qcap, mm, obl, omem := st.qbuf.Load(), st.qcap.Load(), st.multiMem.Load(), st.obl.Load(), st.omem.Load()
	var b strings.Builder
	for _, f := range [][2]string{
		{"id", itoa(s.id)}, {"addr", s.conn.RemoteAddr().String()}, {"laddr", s.conn.LocalAddr().String()},
		{"fd", itoa(int64(s.fd))}, {"name", s.name}, {"age", itoa(int64(now.Sub(s.created).Seconds()))},
		{"idle", itoa(idle)}, {"flags", flags}, {"db", itoa(int64(st.db.Load()))},
		{"sub", itoa(int64(st.sub.Load()))}, {"psub", itoa(int64(st.psub.Load()))}, {"ssub", itoa(int64(st.ssub.Load()))},
		{"multi", itoa(int64(st.multi.Load()))}, {"qbuf", itoa(qbuf)}, {"qbuf-free", itoa(qcap - qbuf)},
		{"argv-mem", itoa(int64(argv))}, {"multi-mem", itoa(mm)}, {"rbs", itoa(qcap)}, {"rbp", itoa(qbuf)},
		{"obl", itoa(obl)}, {"oll", "0"}, {"omem", itoa(omem)}, {"tot-mem", itoa(qcap + mm + obl + omem + int64(argv))},
		{"events", "r"}, {"cmd", cmd}, {"user", s.userName()}, {"redir", itoa(st.redir.Load())},
		{"resp", itoa(int64(st.resp.Load()))}, {"lib-name", s.libName}, {"lib-ver", s.libVer},
	} {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f[0] + "=" + f[1])
	}
	b.WriteByte('\n')
	return b.String()
}

// sortedSessions lists the handler's connections by id, as Redis lists its clients; the caller holds h.mu.
func (s *session) sortedSessions() []*session {
	out := make([]*session, 0, len(s.h.sessions))
	for _, o := range s.h.sessions {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// left reports whether the connection's client has left: it closed its end, or the connection is ending. Redis
// handles a close in the order it arrives, so a client that closed before another sent CLIENT LIST is not
// listed; here the closed connection's goroutine may not have run since, or may still be ending (a subscriber's
// pusher to stop), on a busy machine. Redis's obuf-limits test read such a line as its subscriber's.
func (s *session) left() bool {
	return s.state.ending.Load() || peerClosed(s.conn)
}

// awaitLeft waits, up to leftWait, for the connections whose clients have left to end, and returns those still
// ending after it (a script running to its limit), which CLIENT LIST leaves out all the same. Once they ended,
// what CLIENT LIST leaves out agrees with the rest of the server (their subscriptions, tracking redirects,
// watches and blocked waits are undone by their goroutines), as Redis has handled a close before the commands
// after it. The sockets are looked at outside h.mu, once each.
func (s *session) awaitLeft() map[*session]bool {
	s.h.mu.Lock()
	others := make([]*session, 0, len(s.h.sessions))
	for _, o := range s.h.sessions {
		if o != s {
			others = append(others, o)
		}
	}
	s.h.mu.Unlock()
	var still map[*session]bool
	var limit *time.Timer
	for _, o := range others {
		if !o.left() {
			continue
		}
		if limit == nil {
			limit = time.NewTimer(leftWait)
			defer limit.Stop()
		}
		select {
		case <-o.gone:
			continue
		case <-limit.C:
			limit.Reset(0) // past the limit: the rest are not waited for
		}
		if still == nil {
			still = map[*session]bool{}
		}
		still[o] = true
	}
	return still
}

// leftWait bounds how long CLIENT LIST waits for the connections whose clients left (awaitLeft).
const leftWait = time.Second

// testHookBeforeRead, when set by a test, runs with the connection's id before each read of its requests, once
// the connection shows as waiting for its client.
var testHookBeforeRead atomic.Pointer[func(id int64)]

// clientListFilter parses CLIENT LIST's filters, as Redis 7.0: TYPE normal|master|replica|slave|pubsub, or ID
// followed by client IDs. It answers the error itself when they are wrong.
func (s *session) clientListFilter(args [][]byte) (keep func(o *session) bool, ok bool) {
	switch {
	case len(args) == 0:
		return func(*session) bool { return true }, true
	case len(args) == 2 && lower(args[0]) == "type":
		switch t := lower(args[1]); t {
		case "normal", "pubsub":
			return func(o *session) bool {
				subscribed := o.state.sub.Load()+o.state.psub.Load()+o.state.ssub.Load() > 0
				return subscribed == (t == "pubsub")
			}, true
		case "master", "replica", "slave":
			return func(*session) bool { return false }, true // anykv has no replication links
		}
		s.w.Error("ERR Unknown client type '" + clip(args[1]) + "'")
		return nil, false
	case len(args) >= 2 && lower(args[0]) == "id":
		ids := map[int64]bool{}
		for _, a := range args[1:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil || id <= 0 {
				s.w.Error("ERR Invalid client ID")
				return nil, false
			}
			ids[id] = true
		}
		return func(o *session) bool { return ids[o.id] }, true
	}
	s.w.Error("ERR syntax error")
	return nil, false
}
