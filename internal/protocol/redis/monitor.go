package redis

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR, as Redis 7: after +OK the connection receives a line for every command any client runs, once it ran
// (commands refused before running, such as unknown ones or a wrong arity, are not shown; neither are
// administrative ones, as in Redis). Lines go through the monitor's pusher (pubsub.go), so a slow monitor never
// holds up the connection whose command it shows; one that falls pubsubLimit bytes behind is disconnected.

func init() {
	register(&command{name: "monitor", arity: 1, flags: flagAdmin, imm: cmdMonitor, groupName: "server", since: "1.0.0",
		summary: "Listens for all requests received by the server in real-time."})
}

// monitorSet is the handler's monitoring connections. n is all the hot path reads while nobody monitors.
type monitorSet struct {
	n    atomic.Int32
	mu   sync.Mutex
	list []*pusher
}

func (m *monitorSet) add(p *pusher) {
	m.mu.Lock()
	m.list = append(m.list, p)
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

func (m *monitorSet) remove(p *pusher) {
	m.mu.Lock()
	for i, o := range m.list {
		if o == p {
			m.list = append(m.list[:i], m.list[i+1:]...)
			break
		}
	}
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

func cmdMonitor(s *session, args [][]byte) {
	if s.noBlock { // queued in MULTI: Redis 7 queues it, and EXEC answers this
		s.w.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if s.monitoring { // Redis ignores a second MONITOR, without a reply
		return
	}
	s.w.SimpleString("OK")
	s.ensurePusher()
	// +OK is queued before the first line, and held until the monitor is registered (and the command accounted:
	// holdPushes): a client told it monitors sees every command run after that (without the hold a command could
	// run between the two, unseen).
	s.holdPushes()
	s.out()
	s.monitoring = true
	s.sub.monitor.Store(true)
	s.h.monitors.add(s.sub)
}

// endMonitor leaves MONITOR mode (RESET, the connection's end).
func (s *session) endMonitor() {
	if s.monitoring {
		s.monitoring = false
		s.sub.monitor.Store(false)
		s.h.monitors.remove(s.sub)
	}
}

// monitorRefuses reports whether a monitoring connection may not run cmd: Redis treats a monitor as a replica,
// which may not touch the keyspace.
func monitorRefuses(cmd *command) bool {
	return cmd.data != nil || cmd.flags&(flagWrite|flagReadonly) != 0
}

// adminClientSubs are the CLIENT subcommands Redis flags admin, and therefore does not show to monitors.
var adminClientSubs = map[string]bool{"kill": true, "list": true, "pause": true, "unpause": true, "no-evict": true}

// plainACLSubs are the ACL subcommands Redis does not flag admin (monitors see them).
var plainACLSubs = map[string]bool{"cat": true, "whoami": true, "genpass": true, "help": true}

// feedMonitors sends one command that ran to every monitor (the caller checked that there is one).
func (s *session) feedMonitors(cmd *command, args [][]byte) {
	if cmd.flags&flagAdmin != 0 && (cmd.data == nil || cmd.name == "debug") { // DEBUG OBJECT runs in the batch
		return
	}
	if cmd.name == "client" && len(args) > 1 && adminClientSubs[lower(args[1])] {
		return
	}
	if cmd.name == "acl" && len(args) > 1 && !plainACLSubs[lower(args[1])] { // SETUSER, LOG, ...: admin in Redis
		return
	}
	line := monitorLine(s.h.store.Time(), s.db, s.conn.RemoteAddr().String(), cmd.name, args)
	if s.monitoring {
		s.out() // a monitor's own reply goes before the line that shows its command, as in Redis
	}
	lines := [][]byte{line}
	for _, e := range s.scriptShown { // the commands its script ran, after it, as Redis 7.0 shows them
		lines = append(lines, monitorLine(s.h.store.Time(), e.db, "lua", lower(e.args[0]), e.args))
	}
	s.h.monitors.mu.Lock()
	for _, p := range s.h.monitors.list {
		for _, l := range lines {
			p.enqueue(l)
		}
	}
	s.h.monitors.mu.Unlock()
}

// monitorLine is Redis's MONITOR line: +<unix seconds>.<µs> [<db> <addr>] "arg" ... with each argument quoted as
// Redis's sdscatrepr does and the passwords of AUTH and HELLO AUTH redacted.
func monitorLine(now time.Time, db int, addr, name string, args [][]byte) []byte {
	b := make([]byte, 0, 64+argsSize(args)+4*len(args))
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	b = append(b, addr...)
	b = append(b, ']')
	for i, a := range args {
		b = append(b, ' ')
		if redacted(name, args, i) {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// redacted reports whether argument i of a call is a secret Redis hides from monitors and the slow log: every
// argument of AUTH, the user and password after HELLO's AUTH and MIGRATE's AUTH2, MIGRATE's AUTH password, and the
// value CONFIG SET gives a password.
func redacted(name string, args [][]byte, i int) bool {
	switch name {
	case "auth":
		return i > 0
	case "acl": // ACL SETUSER's rules hold passwords: all redacted, as Redis does
		return len(args) > 1 && eq(args[1], "setuser") && i >= 2
	case "config":
		// CONFIG SET name value [name value ...]: a value whose name is a secret (Redis's SENSITIVE_CONFIG).
		return len(args) > 1 && eq(args[1], "set") && i >= 3 && i%2 == 1 && sensitiveConfig[strings.ToLower(string(args[i-1]))]
	case "migrate": // AUTH's password, AUTH2's user and password, as Redis's migrateCommand redacts them
		for j := 6; j < len(args); j++ {
			switch {
			case eq(args[j], "auth"):
				if i == j+1 {
					return true
				}
				j++
			case eq(args[j], "auth2"):
				if i == j+1 || i == j+2 {
					return true
				}
				j += 2
			case eq(args[j], "keys"):
				return false
			}
		}
	case "hello":
		for j := 2; j+2 < len(args); j++ {
			if eq(args[j], "auth") {
				return i == j+1 || i == j+2
			}
			if eq(args[j], "setname") {
				j++
			}
		}
	}
	return false
}

// sensitiveConfig are the settings whose values are secrets.
var sensitiveConfig = map[string]bool{"requirepass": true, "masterauth": true, "masteruser": true}

// appendRepr quotes a as Redis's sdscatrepr: \\ \" \n \r \t \a \b escaped, printable ASCII as is, other bytes
// as \xHH.
func appendRepr(b, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= ' ' && c <= '~' {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(b, '"')
}
