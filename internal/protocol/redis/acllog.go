package redis

import (
	"math"
	"strings"
	"sync"
	"time"
)

// Refusals: their texts, their counts and the ACL LOG of recent ones, as Redis keeps them.

// scriptNoperm are the errors a script's call refused by ACL raises (Redis 7.0's texts).
var scriptNoperm = map[int]string{
	aclDeniedCmd:     "ERR The user executing the script can't run this command or subcommand",
	aclDeniedKey:     "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
	aclDeniedChannel: "ERR The user executing the script can't publish to the channel mentioned in the command",
}

// aclDenied counts a refusal for INFO and adds it to the ACL log.
func (h *Handler) aclDenied(s *session, res int, object, user string) {
	kind := map[int]int{aclDeniedAuth: 0, aclDeniedCmd: 1, aclDeniedKey: 2, aclDeniedChannel: 3}[res]
	h.acl.denied[kind].Add(1)
	ctx := "toplevel"
	switch {
	case s.inScript:
		ctx = "lua"
	case s.inMulti || s.inExec:
		ctx = "multi"
	}
	reason := [...]string{"auth", "command", "key", "channel"}[kind]
	h.acl.log.add(reason, ctx, object, user, s.clientInfo())
}

// clientInfo is CLIENT INFO's line of the session without its newline (the calling connection's for a script).
func (s *session) clientInfo() string {
	o := s
	if s.conn == nil {
		o = s.scriptCaller
	}
	if o == nil || o.conn == nil {
		return ""
	}
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	return strings.TrimSuffix(o.clientLine(time.Now(), 0), "\n")
}

// aclLog is ACL LOG: the newest refusals first, repeats within a minute counted in one entry, as Redis keeps it.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry
	nextID  int64
	maxLen  int
}

type aclLogEntry struct {
	count                         int64
	reason, context, object, user string
	clientInfo                    string
	id                            int64
	created, updated              time.Time
}

func (l *aclLog) add(reason, ctx, object, user, info string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries {
		if e.reason == reason && e.context == ctx && e.object == object && e.user == user && now.Sub(e.updated) < time.Minute {
			e.count++
			e.updated, e.clientInfo = now, info
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	e := &aclLogEntry{count: 1, reason: reason, context: ctx, object: object, user: user, clientInfo: info,
		id: l.nextID, created: now, updated: now}
	l.nextID++
	l.entries = append([]*aclLogEntry{e}, l.entries...)
	if len(l.entries) > l.maxLen {
		l.entries = l.entries[:l.maxLen]
	}
}

// maxLenSetting is acllog-max-len for CONFIG GET.
func (l *aclLog) maxLenSetting() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return itoa(int64(l.maxLen))
}

// acllog-max-len bounds the entries ACL LOG keeps (Redis's default 128); as in Redis, a lower bound takes effect
// at the next entry.
func init() {
	configSetters["acllog-max-len"] = func(h *Handler, v string) (func(), error) {
		n, err := configNonNegative(v)
		if err != nil {
			return nil, err
		}
		return func() {
			l := &h.acl.log
			l.mu.Lock()
			l.maxLen = int(min(n, math.MaxInt))
			l.mu.Unlock()
		}, nil
	}
}

func (s *session) aclLogCommand(args [][]byte) {
	l := &s.h.acl.log
	count := 10
	switch {
	case len(args) > 3:
		s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try ACL HELP.")
		return
	case len(args) == 3 && eq(args[2], "reset"):
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		s.w.SimpleString("OK")
		return
	case len(args) == 3:
		n, ok := argInt(args[2])
		if !ok {
			s.w.Error(errNotInt)
			return
		}
		count = int(max(min(n, 1<<20), 0))
	}
	now := time.Now()
	l.mu.Lock()
	entries := l.entries[:min(count, len(l.entries))]
	out := make([]aclLogEntry, len(entries))
	for i, e := range entries {
		out[i] = *e
	}
	l.mu.Unlock()
	w := s.w
	w.ArrayHeader(len(out))
	for _, e := range out {
		w.MapHeader(10)
		w.BulkString("count")
		w.Int(e.count)
		w.BulkString("reason")
		w.BulkString(e.reason)
		w.BulkString("context")
		w.BulkString(e.context)
		w.BulkString("object")
		w.BulkString(e.object)
		w.BulkString("username")
		w.BulkString(e.user)
		w.BulkString("age-seconds")
		w.Double(float64(now.Sub(e.created).Milliseconds()) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.clientInfo)
		w.BulkString("entry-id")
		w.Int(e.id)
		w.BulkString("timestamp-created")
		w.Int(e.created.UnixMilli())
		w.BulkString("timestamp-last-updated")
		w.Int(e.updated.UnixMilli())
	}
}
