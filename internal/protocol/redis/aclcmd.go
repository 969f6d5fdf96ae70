package redis

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"anykv/internal/auth"
)

// The ACL command, AUTH's user check, the ACL log and the ACL file.

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
		s.w.ArrayHeader(len(help))
		for _, h := range help {
			s.w.SimpleString(h)
		}
	}
}

// writeGetUser answers ACL GETUSER: flags, passwords, commands, keys, channels, selectors (a map in RESP3).
func writeGetUser(s *session, r *aclRules) {
	w := s.w
	w.MapHeader(6)
	w.BulkString("flags")
	fl := r.flagNames()
	w.ArrayHeader(len(fl))
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

// saveACL is ACL SAVE: every user as a "user <name> <rules>" line, written beside the file, fsynced and renamed
// over it (mode 0600: the file holds password hashes).
func (h *Handler) saveACL() error {
	a := h.acl
	a.mu.Lock()
	var b strings.Builder
	for _, u := range a.sortedUsers() {
		b.WriteString("user " + fileWord(u.name, u.name[0] == '"' || u.name[0] == '\'') + " " + u.get().describeFile() + "\n")
	}
	a.mu.Unlock()
	path := h.opts.ACLFile
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// describeFile is describe as the ACL file writes it: a selector that would not read back as one word of its own
// (a pattern or first argument of it ending in ")" closed it early, the rules after it given to the root; a quote
// began a quoted word) is written quoted, as splitArgs (and Redis's sdssplitargs) read it.
func (r *aclRules) describeFile() string {
	b := []string{r.describeRoot()}
	for _, s := range r.selectors[1:] {
		d := s.describe()
		b = append(b, fileWord("("+d+")", strings.ContainsAny(d, `)"'\`)))
	}
	return strings.Join(b, " ")
}

// fileWord is w as a word of the ACL file: as it is, or double-quoted with its backslashes and quotes escaped when
// quote is set (a user name beginning with a quote was read as a quoted word: "ops" as ops).
func fileWord(w string, quote bool) string {
	if !quote {
		return w
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
}

// LoadACLFile reads Options.ACLFile at start (see loadACL).
func (h *Handler) LoadACLFile() error { return h.loadACL(nil) }

// loadACL reads Options.ACLFile (at start, and for ACL LOAD from me) and replaces every user with its users,
// all or nothing: a line that fails leaves the users as they were and the error names the file and line, as
// Redis's. A default user the file lacks is the start's (every permission, --requirepass or nopass). Connections
// of the users replaced (all but default) are closed, as Redis 7.0 does.
func (h *Handler) loadACL(me *session) error {
	path := h.opts.ACLFile
	f, err := os.Open(path)
	if err != nil {
		return errors.New("Error loading ACLs, opening file '" + path + "': " + err.Error())
	}
	defer f.Close()
	users := map[string]*aclRules{}
	var errs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		where := path + ":" + strconv.Itoa(line) + ": "
		words, err := splitArgs(text)
		switch {
		case err != nil:
			errs = append(errs, where+"unbalanced quotes in acl line. ")
			continue
		case len(words) == 0:
			continue
		case words[0] != "user" || len(words) < 2:
			errs = append(errs, where+"line should start with user keyword. ")
			continue
		case !validUserName(words[1]):
			errs = append(errs, where+"username '"+words[1]+"' contains invalid characters. ")
			continue
		case users[words[1]] != nil:
			errs = append(errs, where+"Duplicate user '"+words[1]+"' found. ")
			continue
		}
		r, err := applyRules(newRules(), words[2:])
		if err != nil {
			errs = append(errs, where+strings.TrimPrefix(err.Error(), "Error in ACL SETUSER modifier ")+". ")
			continue
		}
		users[words[1]] = r
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errors.New(strings.TrimSpace(strings.Join(errs, "")))
	}
	a := h.acl
	a.mu.Lock()
	var gone []*aclUser
	for name, u := range a.users {
		if name != "default" {
			gone = append(gone, u)
		}
	}
	a.users = map[string]*aclUser{"default": a.def}
	for name, r := range users {
		if name == "default" {
			continue
		}
		u := &aclUser{name: name}
		u.rules.Store(r)
		a.users[name] = u
	}
	def := users["default"]
	if def == nil {
		def = defaultRules(a.requirepass)
	}
	a.def.rules.Store(def)
	h.syncPolicy()
	a.mu.Unlock()
	h.dropUsers(me, gone)
	h.killSubscribersOutside(a.def, def)
	return nil
}

// splitArgs splits a line as Redis's sdssplitargs (an ACL file line): words, "double quoted" with escapes,
// 'single quoted'.
func splitArgs(line string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		var b strings.Builder
		switch line[i] {
		case '"':
			i++
			for {
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				c := line[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) {
					i++
					switch e := line[i]; e {
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 't':
						b.WriteByte('\t')
					case 'a':
						b.WriteByte('\a')
					case 'b':
						b.WriteByte('\b')
					case 'x':
						if i+2 < len(line) {
							if v, err := strconv.ParseUint(line[i+1:i+3], 16, 8); err == nil {
								b.WriteByte(byte(v))
								i += 2
								break
							}
						}
						b.WriteByte('x')
					default:
						b.WriteByte(e)
					}
					i++
					continue
				}
				b.WriteByte(c)
				i++
			}
		case '\'':
			i++
			for {
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				c := line[i]
				if c == '\'' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					c = '\''
				}
				b.WriteByte(c)
				i++
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				b.WriteByte(line[i])
				i++
			}
		}
		out = append(out, b.String())
	}
}
