package redis

import (
	"sort"
	"strconv"
	"strings"
)

// cmdFlags describe a command for dispatch and for COMMAND INFO.
type cmdFlags uint16

const (
	flagWrite           cmdFlags = 1 << iota // changes data
	flagReadonly                             // only reads data
	flagNoAuth                               // allowed before AUTH
	flagTx                                   // runs even inside MULTI (MULTI, EXEC, DISCARD, WATCH, ...)
	flagAdmin                                // administrative
	flagFast                                 // O(1)-ish, as Redis marks it
	flagPubSub                               // a pub/sub command (clients find PUBLISH's channel by it, as Redis flags it)
	flagNoMandatoryKeys                      // may name no key at all (EVAL with 0 keys): GETKEYS answers an empty list
)

// command is one entry of the command table. A data command compiles to mutations (session.add/plan/fail)
// and can therefore run inside a pipeline batch or a transaction; an immediate command (imm) writes its
// reply directly, after the batch before it has been flushed.
type command struct {
	name                    string
	arity                   int // Redis convention: N exactly N arguments (name included), -N at least N
	flags                   cmdFlags
	firstKey, lastKey, step int
	data                    func(s *session, args [][]byte)
	imm                     func(s *session, args [][]byte)
	// immIf, for a command with both, says when a call runs on its own (imm) rather than in the batch (data)
	// outside MULTI and scripts: XREADGROUP with BLOCK, which may wait.
	immIf func(args [][]byte) bool
	// tx, for a command that runs on its own (imm), compiles it into a transaction's batch when it is queued in
	// MULTI, so that it runs in its place there, atomically with the rest (EVAL).
	tx                        func(s *session, args [][]byte)
	summary, since, groupName string
	// movable, for a command whose keys' positions depend on its arguments (a key count: EVAL, ZUNIONSTORE,
	// LMPOP; a STREAMS list: XREAD), returns their indexes; COMMAND INFO then flags it movablekeys, as Redis
	// does, and firstKey..lastKey name only the keys at fixed places (ZUNIONSTORE's destination).
	movable func(args [][]byte) []int
	// notKeys marks arguments at the key positions that are no keys (the shard channels of SPUBLISH): GETKEYS
	// finds none.
	notKeys bool
	// pushes: its replies are pushes (SUBSCRIBE's confirmations), which CLIENT REPLY OFF and SKIP leave.
	pushes bool
	// inScript marks an immediate command a script may call (KEYS, SCAN, RANDOMKEY, DBSIZE, ECHO, XREAD, LMPOP,
	// ZMPOP, BLMPOP, BZMPOP): it then reads and writes the keys as the script's batch sees them (session.tx).
	inScript  bool
	container bool // in containers: CLIENT LIST names it with its subcommand (set by register)
	id        int  // its index in a handler's per-command figures (set by register)
	// subStats is a container's statistics slot of each subcommand Redis 7 counts apart (config|get), by
	// lower-case name; nil for other commands (statSlots sets it).
	subStats map[string]int
}

// commands is the command table, keyed by lower-case name; filled by init in each file.
var commands = map[string]*command{}

// commandIDs counts the commands register numbered: a handler's per-command figures are slices of this length,
// indexed by command.id, so a request finds them without a map lookup.
var commandIDs int

func register(cs ...*command) {
	for _, c := range cs {
		c.container = containers[c.name]
		c.id = commandIDs
		commandIDs++
		if c.firstKey == 0 && c.flags&(flagWrite|flagReadonly) != 0 { // default: one key, the first argument
			c.firstKey = 1
			if c.lastKey == 0 {
				c.lastKey = 1
			}
			if c.step == 0 {
				c.step = 1
			}
		}
		if c.firstKey < 0 { // commands without key arguments (KEYS, SCAN, DBSIZE): Redis reports 0 0 0
			c.firstKey, c.lastKey, c.step = 0, 0, 0
		}
		if c.firstKey > 0 && c.step == 0 {
			c.step = 1 // a step of 0 made clients that walk first..last by it loop (redis-py raised)
		}
		commands[c.name] = c
	}
}

func (c *command) flagNames() []string {
	var out []string
	for _, f := range []struct {
		f    cmdFlags
		name string
	}{{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagAdmin, "admin"}, {flagPubSub, "pubsub"},
		{flagFast, "fast"}, {flagNoAuth, "no_auth"}, {flagNoMandatoryKeys, "no_mandatory_keys"}} { // Redis's order
		if c.flags&f.f != 0 {
			out = append(out, f.name)
		}
	}
	if c.movable != nil {
		out = append(out, "movablekeys")
	}
	return out
}

// sortedCommands returns the table in name order.
func sortedCommands() []*command {
	out := make([]*command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// writeCommandInfo writes one COMMAND INFO entry in Redis 7's layout.
func writeCommandInfo(s *session, c *command) {
	w := s.w
	w.ArrayHeader(10)
	w.BulkString(c.name)
	w.Int(int64(c.arity))
	fl := c.flagNames()
	w.SetHeader(len(fl))
	for _, f := range fl {
		w.SimpleString(f)
	}
	if c.container { // Redis names a container's keys in its subcommands' entries only
		w.Int(0)
		w.Int(0)
		w.Int(0)
	} else {
		w.Int(int64(c.firstKey))
		w.Int(int64(c.lastKey))
		w.Int(int64(c.step))
	}
	writeCommandInfoTail(s, c)
}

func cmdCommand(s *session, args [][]byte) {
	if len(args) == 1 {
		all := sortedCommands()
		s.w.ArrayHeader(len(all))
		for _, c := range all {
			writeCommandInfo(s, c)
		}
		return
	}
	switch lower(args[1]) {
	case "count":
		if len(args) != 2 {
			s.subcommandError("command", args[1], "count")
			return
		}
		s.w.Int(int64(len(commands)))
	case "info":
		names := args[2:]
		if len(names) == 0 {
			cmdCommand(s, args[:1])
			return
		}
		s.w.ArrayHeader(len(names))
		for _, n := range names {
			if c := commands[lower(n)]; c != nil {
				writeCommandInfo(s, c)
			} else {
				s.w.NullArray()
			}
		}
	case "docs":
		names := args[2:]
		var list []*command
		if len(names) == 0 {
			list = sortedCommands()
		} else {
			for _, n := range names {
				if c := commands[lower(n)]; c != nil {
					list = append(list, c)
				}
			}
		}
		s.w.MapHeader(len(list))
		for _, c := range list {
			writeCommandDoc(s, c)
		}
	case "list":
		commandList(s, args)
	case "getkeys", "getkeysandflags":
		if len(args) < 3 {
			s.w.Error("ERR Invalid arguments specified for command")
			return
		}
		c := commands[lower(args[2])]
		switch n := len(args) - 2; {
		case c == nil:
			s.w.Error("ERR Invalid command specified")
			return
		case c.firstKey <= 0 && c.movable == nil || c.notKeys:
			s.w.Error("ERR The command has no key arguments")
			return
		case c.arity > 0 && n != c.arity || n < -c.arity:
			s.w.Error("ERR Invalid number of arguments specified for command")
			return
		}
		if eq(args[1], "getkeysandflags") {
			pos, flags := keysAndFlags(c, args[2:])
			if len(pos) == 0 && c.flags&flagNoMandatoryKeys == 0 {
				s.w.Error("ERR Invalid arguments specified for command")
				return
			}
			s.w.ArrayHeader(len(pos))
			for i, p := range pos {
				s.w.ArrayHeader(2)
				s.w.Bulk(args[2+p])
				s.w.SetHeader(len(flags[i]))
				for _, f := range flags[i] {
					s.w.SimpleString(f)
				}
			}
			return
		}
		keys := c.keys(args[2:])
		if len(keys) == 0 && c.flags&flagNoMandatoryKeys == 0 {
			s.w.Error("ERR Invalid arguments specified for command")
			return
		}
		s.w.ArrayHeader(len(keys))
		for _, k := range keys {
			s.w.Bulk(k)
		}
	case "help":
		if len(args) != 2 {
			s.subcommandError("command", args[1], "help")
			return
		}
		helpTo(s.w, commandHelp)
	default:
		s.w.Error("ERR unknown subcommand '" + clip(args[1]) + "'. Try COMMAND HELP.")
	}
}

// keys returns the key arguments of a call of c (args[0] is the command name), by its key specification.
func (c *command) keys(args [][]byte) [][]byte {
	var keys [][]byte
	if c.movable != nil {
		for _, i := range c.movable(args) {
			keys = append(keys, args[i])
		}
		return keys
	}
	for i, last, step := c.keySpan(args); i <= last; i += step {
		keys = append(keys, args[i])
	}
	return keys
}

// numKeys finds the keys of a command whose key count is args[at], the keys following it, after the keys at the
// fixed indexes before it (ZUNIONSTORE's destination). A count that is not a positive number, or that runs past
// the arguments, gives no key at all, as Redis's GETKEYS answers (the command's own parsing then answers its
// error, where a key check would have answered another).
func numKeys(at int, fixed ...int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if at >= len(args) {
			return nil
		}
		n, err := strconv.Atoi(string(args[at]))
		if err != nil || n < 1 || n > len(args)-1-at { // not at+n: a count near MaxInt would wrap
			return nil
		}
		idx := append([]int(nil), fixed...)
		for i := at + 1; i <= at+n; i++ {
			idx = append(idx, i)
		}
		return idx
	}
}

// streamsKeys finds XREAD's keys: the first half of the arguments after STREAMS.
func streamsKeys(args [][]byte) []int {
	for p := 1; p < len(args); p++ {
		if eq(args[p], "streams") {
			var idx []int
			for i := p + 1; i <= p+(len(args)-p-1)/2; i++ {
				idx = append(idx, i)
			}
			return idx
		}
	}
	return nil
}

// keySpan gives the indexes of args that are keys: first, first+step, ... up to last (first > last: none).
func (c *command) keySpan(args [][]byte) (first, last, step int) {
	if c.firstKey <= 0 {
		return 1, 0, 1
	}
	last = c.lastKey
	if last < 0 {
		last = len(args) + last
	}
	return c.firstKey, min(last, len(args)-1), max(c.step, 1)
}

// subcommandError answers a container's call that matched none of its cases, with Redis 7's texts: a subcommand
// it serves, given the wrong number of arguments, is "wrong number of arguments for 'container|sub' command"; any
// other is an unknown subcommand.
func (s *session) subcommandError(container string, sub []byte, served ...string) {
	name := lower(sub)
	for _, sv := range served {
		if sv == name {
			s.w.Error("ERR wrong number of arguments for '" + container + "|" + name + "' command")
			return
		}
	}
	s.w.Error("ERR unknown subcommand '" + clip(sub) + "'. Try " + strings.ToUpper(container) + " HELP.")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// lower returns b lower-cased as a string.
func lower(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
