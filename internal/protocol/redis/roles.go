package redis

import "strings"

// Commands that clients and tools send to learn what kind of server they talk to, answered as a Redis 7 master
// without replicas or modules answers them: ROLE, REPLICAOF and SLAVEOF (NO ONE only: anykv replicates from no
// one), MODULE (no module is loaded, and loading one is refused as Redis refuses it by default) and LOLWUT.
func init() {
	register(
		&command{name: "role", arity: 1, flags: flagFast, imm: cmdRole, groupName: "server", since: "2.8.12",
			summary: "Returns the replication role."},
		&command{name: "replicaof", arity: 3, flags: flagAdmin, imm: cmdReplicaOf, groupName: "server", since: "5.0.0",
			summary: "Configures a server as replica of another, or promotes it to a master."},
		&command{name: "slaveof", arity: 3, flags: flagAdmin, imm: cmdReplicaOf, groupName: "server", since: "1.0.0",
			summary: "Sets a Redis server as a replica of another, or promotes it to being a master."},
		&command{name: "module", arity: -2, imm: cmdModule, groupName: "server", since: "4.0.0",
			summary: "A container for module commands."},
		&command{name: "lolwut", arity: -1, flags: flagReadonly | flagFast, firstKey: -1, imm: cmdLolwut,
			groupName: "server", since: "5.0.0", summary: "Displays computer art and the Redis version"},
	)
}

// cmdRole answers a master's role with no replicas: its replication offset is 0, as a Redis master's that never
// had a replica.
func cmdRole(s *session, args [][]byte) {
	s.w.ArrayHeader(3)
	s.w.BulkString("master")
	s.w.Int(0)
	s.w.ArrayHeader(0)
}

// cmdReplicaOf serves REPLICAOF (and SLAVEOF) NO ONE, which leaves a master a master: OK. anykv cannot replicate
// another server, so a master's address is refused (after Redis's check of the port).
func cmdReplicaOf(s *session, args [][]byte) {
	if eq(args[1], "no") && eq(args[2], "one") {
		s.w.SimpleString("OK")
		return
	}
	if port, ok := argInt(args[2]); !ok || port < 0 || port > 65535 {
		s.w.Error("ERR Invalid master port")
		return
	}
	s.w.Error("ERR anykv does not replicate another server: only " + strings.ToUpper(string(args[0])) + " NO ONE is served")
}

// moduleHelp is MODULE HELP's text, as Redis 7.0 writes it.
var moduleHelp = []string{
	"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LIST",
	"    Return a list of loaded modules.",
	"LOAD <path> [<arg> ...]",
	"    Load a module library from <path>, passing to it any optional arguments.",
	"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
	"    Load a module library from <path>, while passing it module configurations and optional arguments.",
	"UNLOAD <name>",
	"    Unload a module.",
	"HELP",
	"    Prints this help.",
}

// moduleRefused tells a call of MODULE LOAD, LOADEX or UNLOAD (with their numbers of arguments), which Redis 7
// refuses before it runs while enable-module-command is at its default (no), as a transaction's command too
// (dispatch rejects it with moduleRefusal).
func moduleRefused(args [][]byte) bool {
	return len(args) >= 3 && (eq(args[1], "load") || eq(args[1], "loadex")) || len(args) == 3 && eq(args[1], "unload")
}

const moduleRefusal = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", " +
	"you can run it from a local connection, otherwise you need to set this option in the configuration file, and " +
	"then restart the server."

// cmdModule answers MODULE as a Redis 7 without modules: LIST is empty (LOAD, LOADEX and UNLOAD are refused
// before, by moduleRefused).
func cmdModule(s *session, args [][]byte) {
	switch sub := lower(args[1]); {
	case sub == "list" && len(args) == 2:
		s.w.ArrayHeader(0)
	case sub == "help" && len(args) == 2:
		helpTo(s.w, moduleHelp)
	default:
		s.subcommandError("module", args[1], "list", "help", "load", "loadex", "unload")
	}
}

// cmdLolwut answers the version line Redis 7 answers for any version but 5 and 6. Their art (drawn from the C
// library's rand(), so no two servers draw it alike) is not drawn: they answer the version line too, after
// Redis's checks of their numeric arguments.
func cmdLolwut(s *session, args [][]byte) {
	ver := int64(7)
	rest := args[1:]
	if len(args) >= 3 && eq(args[1], "version") {
		v, ok := argInt(args[2])
		if !ok {
			s.w.Error(errNotInt)
			return
		}
		ver, rest = int64(uint32(v)), args[3:] // Redis prints it with %u
	}
	numeric := map[int64]int{5: 3, 6: 2}[ver] // the arguments LOLWUT 5 and 6 read as integers
	for i := 0; i < numeric && i < len(rest); i++ {
		if _, ok := argInt(rest[i]); !ok {
			s.w.Error(errNotInt)
			return
		}
	}
	s.w.Verbatim("txt", "Redis ver. "+Version+"\n")
}
