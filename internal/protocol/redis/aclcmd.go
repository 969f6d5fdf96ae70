package redis

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"anykv/internal/auth"
)

// The ACL command and AUTH's user check (acllog.go: refusals and ACL LOG; aclfile.go: ACL SAVE and LOAD).

func init() {
	register(&command{name: "acl", arity: -2, imm: cmdACL, summary: "A container for Access List Control commands."})
}

// aclArity is each ACL subcommand's arity (the container's arguments included), as Redis checks it.
var aclArity = map[string]int{"cat": -2, "deluser": -3, "dryrun": -4, "genpass": -2, "getuser": 3, "list": 2,
	"load": 2, "log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2, "help": 2}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func cmdACL(s *session, args [][]byte) {
	sub := lower(args[1])
	ar, ok := aclArity[sub]
	if !ok {
		s.w.Error("ERR unknown subcommand '" + clip(args[1]) + "'. Try ACL HELP.")
		return
	}
	if ar > 0 && len(args) != ar || ar < 0 && len(args) < -ar {
		s.w.Error("ERR wrong number of arguments for 'acl|" + sub + "' command")
		return
	}
	a := s.h.acl
	switch sub {
	case "setuser":
		name := string(args[2])
		if !validUserName(name) {
			s.w.Error("ERR Usernames can't contain spaces or null characters")
			return
		}
		ops := make([]string, 0, len(args)-3)
		for _, o := range args[3:] {
			ops = append(ops, string(o))
		}
		if err := s.h.setUser(name, ops); err != nil {
			s.w.Error("ERR " + err.Error())
			return
		}
		s.w.SimpleString("OK")
	case "getuser":
		a.mu.Lock()
		u := a.users[string(args[2])]
		a.mu.Unlock()
		if u == nil {
			s.w.Null()
			return
		}
		writeGetUser(s, u.get())
	case "deluser":
		for _, n := range args[2:] {
			if string(n) == "default" {
				s.w.Error("ERR The 'default' user cannot be removed")
				return
			}
		}
		var gone []*aclUser
		a.mu.Lock()
		for _, n := range args[2:] {
			if u := a.users[string(n)]; u != nil {
				delete(a.users, u.name)
				gone = append(gone, u)
			}
		}
		a.mu.Unlock()
		s.h.dropUsers(s, gone)
		s.w.Int(int64(len(gone)))
	case "list":
		a.mu.Lock()
		users := a.sortedUsers()
		a.mu.Unlock()
		s.w.ArrayHeader(len(users))
		for _, u := range users {
			s.w.BulkString("user " + u.name + " " + u.get().describe())
		}
	case "users":
		a.mu.Lock()
		users := a.sortedUsers()
		a.mu.Unlock()
		s.w.ArrayHeader(len(users))
		for _, u := range users {
			s.w.BulkString(u.name)
		}
	case "whoami":
		s.w.BulkString(s.userName())
	case "cat":
		t := aclTable()
		if len(args) == 2 {
			s.w.ArrayHeader(len(aclCategories))
			for _, c := range aclCategories {
				s.w.BulkString(c)
			}
			return
		}
		if len(args) != 3 {
			s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try ACL HELP.")
			return
		}
		ids, ok := t.cats[lower(args[2])]
		if !ok {
			s.w.Error("ERR Unknown category '" + clip(args[2]) + "'")
			return
		}
		names := make([]string, 0, len(ids))
		for _, id := range ids {
			names = append(names, t.cmds[id].name)
		}
		sort.Strings(names)
		s.w.ArrayHeader(len(names))
		for _, n := range names {
			s.w.BulkString(n)
		}
	case "genpass":
		bits := int64(256)
		if len(args) > 3 {
			s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try ACL HELP.")
			return
		}
		if len(args) == 3 {
			n, ok := argInt(args[2])
			if !ok {
				s.w.Error(errNotInt)
				return
			}
			if n <= 0 || n > 4096 {
				s.w.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
				return
			}
			bits = n
		}
		chars := (bits + 3) / 4
		buf := make([]byte, (chars+1)/2)
		rand.Read(buf)
		s.w.BulkString(hex.EncodeToString(buf)[:chars])
	case "log":
		s.aclLogCommand(args)
	case "dryrun":
		a.mu.Lock()
		u := a.users[string(args[2])]
		a.mu.Unlock()
		if u == nil {
			s.w.Error("ERR User '" + string(args[2]) + "' not found")
			return
		}
		cargs := args[3:]
		cmd := commands[lower(cargs[0])]
		if cmd == nil {
			s.w.Error("ERR Command '" + string(cargs[0]) + "' not found")
			return
		}
		id := aclID(cmd, cargs)
		if cmd.arity > 0 && len(cargs) != cmd.arity || cmd.arity < 0 && len(cargs) < -cmd.arity {
			s.w.Error("ERR wrong number of arguments for '" + aclTable().cmds[id].name + "' command")
			return
		}
		switch res, pos := u.get().check(cmd, cargs); res {
		case aclOK:
			s.w.SimpleString("OK")
		case aclDeniedCmd:
			s.w.BulkString("This user has no permissions to run the '" + aclTable().cmds[id].name + "' command")
		case aclDeniedKey:
			s.w.BulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' key")
		default:
			s.w.BulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' channel")
		}
	case "save":
		if s.h.opts.ACLFile == "" {
			s.w.Error(errNoACLFile)
			return
		}
		if err := s.h.saveACL(); err != nil {
			s.w.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
			s.h.log.Error("ACL SAVE", "file", s.h.opts.ACLFile, "err", err)
			return
		}
		s.w.SimpleString("OK")
	case "load":
		if s.h.opts.ACLFile == "" {
			s.w.Error(errNoACLFile)
			return
		}
		if err := s.h.loadACL(s); err != nil {
			s.w.Error("ERR " + err.Error())
			return
		}
		s.w.SimpleString("OK")
	case "help":
		help := []string{
			"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CAT [<category>]",
			"    List all commands that belong to <category>, or all command categories",
			"    when no category is specified.",
			"DELUSER <username> [<username> ...]",
			"    Delete a list of users.",
			"DRYRUN <username> <command> [<arg> ...]",
			"    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>",
			"    Get the user's details.",
			"GENPASS [<bits>]",
			"    Generate a secure 256-bit user password. The optional `bits` argument can",
			"    be used to specify a different size.",
			"LIST",
			"    Show users details in config file format.",
			"LOAD",
			"    Reload users from the ACL file.",
			"LOG [<count> | RESET]",
			"    Show the ACL log entries.",
			"SAVE",
			"    Save the current config to the ACL file.",
			"SETUSER <username> <attribute> [<attribute> ...]",
			"    Create or modify a user with the specified attributes.",
			"USERS",
			"    List all the registered usernames.",
			"WHOAMI",
			"    Return the current connection username.",
			"HELP",
			"    Prints this help.",
		}
		helpTo(s.w, help)
	}
}

// writeGetUser answers ACL GETUSER: flags, passwords, commands, keys, channels, selectors (a map in RESP3).
func writeGetUser(s *session, r *aclRules) {
	w := s.w
	w.MapHeader(6)
	w.BulkString("flags")
	fl := r.flagNames()
	w.SetHeader(len(fl)) // a set in RESP3, as Redis's (coredis reads a set there)
	for _, f := range fl {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.ArrayHeader(len(r.passwords))
	for _, p := range r.passwords {
		w.BulkString(p)
	}
	root := r.selectors[0]
	w.BulkString("commands")
	w.BulkString(root.describeCommands())
	w.BulkString("keys")
	w.BulkString(root.describeKeys())
	w.BulkString("channels")
	w.BulkString(root.describeChannels())
	w.BulkString("selectors")
	w.ArrayHeader(len(r.selectors) - 1)
	for _, sel := range r.selectors[1:] {
		w.MapHeader(3)
		w.BulkString("commands")
		w.BulkString(sel.describeCommands())
		w.BulkString("keys")
		w.BulkString(sel.describeKeys())
		w.BulkString("channels")
		w.BulkString(sel.describeChannels())
	}
}

// setUser is ACL SETUSER: the rules apply all or none; a new user is created only when they do. A subscriber
// of the user whose channels the new rules refuse is closed, as in Redis.
func (h *Handler) setUser(name string, ops []string) error {
	a := h.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	base := newRules()
	if u != nil {
		base = u.get()
	}
	r, err := applyRules(base, ops)
	if err != nil {
		return err
	}
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.rules.Store(r)
	if u == a.def {
		h.syncPolicy()
	}
	h.killSubscribersOutside(u, r)
	return nil
}

// killSubscribersOutside closes the connections of u subscribed to a channel r no longer allows.
func (h *Handler) killSubscribersOutside(u *aclUser, r *aclRules) {
	if r.full {
		return
	}
	h.killWhere(nil, func(o *session) bool {
		if o.user != u {
			return false
		}
		o.subsMu.Lock()
		defer o.subsMu.Unlock()
		return !r.channelsAllowed(mapKeys(o.channels), mapKeys(o.patterns), mapKeys(o.shards))
	}, false)
}

func mapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dropUsers closes the connections of users deleted (ACL DELUSER, ACL LOAD), as Redis does; the caller's own
// after its reply. A deleted user's rules become a new user's (off, nothing allowed): a connection that takes
// the user after its connections were closed (an AUTH that found it just before) runs nothing.
func (h *Handler) dropUsers(me *session, gone []*aclUser) {
	if len(gone) == 0 {
		return
	}
	set := map[*aclUser]bool{}
	for _, u := range gone {
		u.deleted.Store(true)
		u.rules.Store(newRules().finish())
		set[u] = true
	}
	h.killWhere(me, func(o *session) bool { return set[o.user] }, false)
}

// syncPolicy hands the default user's credentials to the policy memcached, HTTP and the exposure rule read; the
// caller holds a.mu.
func (h *Handler) syncPolicy() {
	r := h.acl.def.get()
	digests := make([][sha256.Size]byte, 0, len(r.passwords))
	for _, p := range r.passwords {
		var d [sha256.Size]byte
		hex.Decode(d[:], []byte(p))
		digests = append(digests, d)
	}
	h.opts.Auth.SetDefaultUser(h.acl.requirepass, digests, r.nopass, r.enabled, r.full)
}

// setRequirePass is CONFIG SET requirepass: the default user's passwords become this one (nopass for ""), as in
// Redis.
func (h *Handler) setRequirePass(pw string) {
	h.acl.mu.Lock()
	h.acl.requirepass = pw
	h.acl.mu.Unlock()
	op := "nopass"
	if pw != "" {
		op = ">" + pw
	}
	h.setUser("default", []string{"resetpass", op})
}

// initACL makes the registry: the default user from the password policy (--requirepass).
func (h *Handler) initACL() {
	pw := h.opts.Auth.Password()
	a := &aclRegistry{users: map[string]*aclUser{}, requirepass: pw}
	a.def = &aclUser{name: "default"}
	a.def.rules.Store(defaultRules(pw))
	a.users["default"] = a.def
	a.log.maxLen = 128
	h.acl = a
	a.mu.Lock()
	h.syncPolicy()
	a.mu.Unlock()
}

// authenticate checks a user's password (AUTH, HELLO AUTH): the user must exist and be on, and be nopass or have
// the password (SHA-256 digests compared in constant time). A failure is logged (ACL LOG), counted and paced
// with every wrong password of every protocol.
func (s *session) authenticate(name, pass []byte) bool {
	a := s.h.acl
	a.mu.Lock()
	u := a.users[string(name)]
	a.mu.Unlock()
	ok := false
	if u != nil {
		r := u.get()
		digests := make([][sha256.Size]byte, len(r.passwords))
		for i, p := range r.passwords {
			hex.Decode(digests[i][:], []byte(p))
		}
		ok = r.enabled && (r.nopass || auth.MatchDigest(digests, pass))
	}
	if !ok {
		s.h.aclDenied(s, aclDeniedAuth, "AUTH", string(name))
		s.h.opts.Auth.Pace()
		return false
	}
	s.setInfo(func() { s.user = u })
	s.setAuthed(true)
	return true
}

func (s *session) userName() string {
	if s.user == nil {
		return "default"
	}
	return s.user.name
}

// aclRefuse checks a command of the session's user before it runs or is queued; a refusal is logged and counted
// and its NOPERM text returned ("" when allowed).
func (s *session) aclRefuse(cmd *command, args [][]byte) string {
	if t := aclTable(); len(args) >= 2 && len(t.cmds[t.ids[cmd.name]].subs) > 0 {
		if _, ok := t.ids[cmd.name+"|"+lower(args[1])]; !ok {
			// A subcommand no one has: Redis answers so before any ACL check (nothing runs, nothing is logged;
			// go-redis and redis-py probe newer subcommands as they connect).
			return "ERR unknown subcommand '" + clip(args[1]) + "'. Try " + strings.ToUpper(cmd.name) + " HELP."
		}
	}
	if res, id := s.aclDeny(cmd, args); res != aclOK {
		return nopermText(res, id)
	}
	return ""
}

// aclRecheck checks a queued command again when EXEC runs it, as Redis does: the error replaces its reply.
func (s *session) aclRecheck(cmd *command, args [][]byte) string {
	res, _ := s.aclDeny(cmd, args)
	if res == aclOK {
		return ""
	}
	reason := map[int]string{aclDeniedCmd: "no permission to execute the command or subcommand",
		aclDeniedKey: "no permission to touch the specified keys", aclDeniedChannel: "no permission to access one of the channels used as arguments"}[res]
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason
}

// aclDeny checks a call against the session's user's rules; a refusal is counted and logged (ACL LOG). It returns
// the result and the id the command was checked under.
func (s *session) aclDeny(cmd *command, args [][]byte) (res, id int) {
	u := s.user
	if u == nil {
		return aclOK, 0
	}
	r := u.get()
	if r.full {
		return aclOK, 0
	}
	res, pos := r.check(cmd, args)
	if res == aclOK {
		return aclOK, 0
	}
	id = aclID(cmd, args)
	obj := aclTable().cmds[id].name
	if res != aclDeniedCmd {
		obj = string(args[pos])
	}
	s.h.aclDenied(s, res, obj, u.name)
	return res, id
}

// scriptACL is what a script's call carries of its caller's ACL user, after the handler's number: nothing when
// the user may do everything, else a space, the connection's id, a space and the user's name (user names have
// no spaces).
func (s *session) scriptACL() string {
	if s.user == nil || s.user.get().full {
		return ""
	}
	return " " + itoa(s.id) + " " + s.user.name
}

// scriptACLUser finds, in the handler that runs a script, the user its commands are checked as, the connection
// that ran it and the registry to log to. A user gone (or a handler gone) may run nothing.
func scriptACLUser(host *Handler, arg []byte) (*aclUser, *session, *aclRegistry) {
	_, rest, ok := strings.Cut(string(arg), " ")
	if !ok {
		return nil, nil, nil
	}
	idText, name, _ := strings.Cut(rest, " ")
	if host == nil {
		nobody := &aclUser{name: name}
		nobody.rules.Store(newRules().finish())
		return nobody, nil, &aclRegistry{log: aclLog{maxLen: 128}}
	}
	host.acl.mu.Lock()
	u := host.acl.users[name]
	host.acl.mu.Unlock()
	if u == nil {
		u = &aclUser{name: name}
		u.rules.Store(newRules().finish())
	}
	id, _ := strconv.ParseInt(idText, 10, 64)
	host.mu.Lock()
	caller := host.sessions[id]
	host.mu.Unlock()
	return u, caller, host.acl
}
