package redis

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The slow log: commands that took at least slowlog-log-slower-than microseconds (counted from when the command
// was read to when its reply was written, so a batch's fsync counts, less the time a blocking command waited for
// data, as Redis leaves it out), newest first, at most slowlog-max-len of them, as Redis's SLOWLOG reports them.

// Redis's bounds on what one entry keeps of a command.
const (
	slowlogMaxArgs  = 32
	slowlogMaxBytes = 128
)

// slowEntry is one logged command.
type slowEntry struct {
	id         int64
	at         int64 // unix seconds
	usec       int64
	args       []string
	addr, name string
}

type slowlog struct {
	slowerThan atomic.Int64 // microseconds; negative: log nothing
	maxLen     atomic.Int64
	mu         sync.Mutex
	nextID     int64
	// entries holds the log oldest first. Entries past maxLen are dropped in bulk once the slice holds twice as
	// many, so logging stays O(1) and allocation-free when every command is slow (an overloaded server); readers
	// see only the newest maxLen.
	entries []slowEntry
}

// slowlogSkips are the commands Redis never logs (their arguments may hold passwords, or they are the sum of
// commands logged on their own).
var slowlogSkips = map[string]bool{"auth": true, "hello": true, "exec": true}

// offer logs the command if it took long enough.
func (l *slowlog) offer(s *session, cmd *command, args [][]byte, took time.Duration) {
	min := l.slowerThan.Load()
	usec := took.Microseconds()
	if min < 0 || usec < min || slowlogSkips[cmd.name] || l.maxLen.Load() == 0 {
		return
	}
	e := slowEntry{at: s.h.store.Time().Unix(), usec: usec, addr: s.conn.RemoteAddr().String(), name: s.name}
	for i, a := range args {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			e.args = append(e.args, "... ("+strconv.Itoa(len(args)-i)+" more arguments)")
			break
		}
		if redacted(cmd.name, args, i) {
			e.args = append(e.args, "(redacted)")
			continue
		}
		if len(a) > slowlogMaxBytes {
			e.args = append(e.args, string(a[:slowlogMaxBytes])+"... ("+strconv.Itoa(len(a)-slowlogMaxBytes)+" more bytes)")
			continue
		}
		e.args = append(e.args, string(a))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if int64(len(l.entries)) >= 2*l.maxLen.Load()+16 {
		l.trim()
	}
}

// trim drops the oldest entries beyond maxLen; the caller holds mu.
func (l *slowlog) trim() {
	n := int64(len(l.entries)) - max(l.maxLen.Load(), 0)
	if n > 0 {
		k := copy(l.entries, l.entries[n:])
		clear(l.entries[k:])
		l.entries = l.entries[:k]
	}
}

// newest returns up to count of the newest entries (count < 0: all kept), newest first; the caller holds mu.
func (l *slowlog) newest(count int64) []slowEntry {
	n := min(int64(len(l.entries)), max(l.maxLen.Load(), 0))
	if count >= 0 {
		n = min(n, count)
	}
	out := make([]slowEntry, n)
	for i := range out {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

func cmdSlowlog(s *session, args [][]byte) {
	l := &s.h.slowlog
	switch sub := lower(args[1]); {
	case sub == "get" && len(args) <= 3:
		count := int64(10)
		if len(args) == 3 {
			n, ok := argInt(args[2])
			if !ok || n < -1 {
				s.w.Error("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		l.mu.Lock()
		entries := l.newest(count)
		l.mu.Unlock()
		s.w.ArrayHeader(len(entries))
		for _, e := range entries {
			s.w.ArrayHeader(6)
			s.w.Int(e.id)
			s.w.Int(e.at)
			s.w.Int(e.usec)
			s.w.ArrayHeader(len(e.args))
			for _, a := range e.args {
				s.w.BulkString(a)
			}
			s.w.BulkString(e.addr)
			s.w.BulkString(e.name)
		}
	case sub == "len" && len(args) == 2:
		l.mu.Lock()
		n := len(l.newest(-1))
		l.mu.Unlock()
		s.w.Int(int64(n))
	case sub == "reset" && len(args) == 2:
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		s.w.SimpleString("OK")
	case sub == "help" && len(args) == 2:
		help := []string{
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Prints this help.",
		}
		helpTo(s.w, help)
	case sub == "get": // its arity admits more arguments, so Redis answers its older catch-all here
		s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try SLOWLOG HELP.")
	default:
		s.subcommandError("slowlog", args[1], "len", "reset", "help")
	}
}

// Defaults of the slow log's settings, Redis's.
const (
	defaultSlowerThan = 10000
	defaultSlowlogLen = 128
)

// configNonNegative parses a CONFIG SET value of 0 up to 2^63-1, with Redis's errors.
func configNonNegative(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return 0, configError("argument couldn't be parsed into an integer")
	case n < 0:
		return 0, configError("argument must be between 0 and 9223372036854775807 inclusive")
	}
	return n, nil
}

// slowlogSettings are the CONFIG setters of the slow log.
func init() {
	configSetters["slowlog-log-slower-than"] = func(h *Handler, v string) (func(), error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, configError("argument couldn't be parsed into an integer")
		}
		return func() { h.slowlog.slowerThan.Store(n) }, nil
	}
	configSetters["slowlog-max-len"] = func(h *Handler, v string) (func(), error) {
		n, err := configNonNegative(v)
		if err != nil {
			return nil, err
		}
		return func() {
			h.slowlog.maxLen.Store(n)
			h.slowlog.mu.Lock()
			h.slowlog.trim()
			h.slowlog.mu.Unlock()
		}, nil
	}
}
