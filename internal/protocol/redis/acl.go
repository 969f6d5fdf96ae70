package redis

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"anykv/internal/glob"
)

// Redis 6/7 ACL users (docs/security.md, docs/resp.md ACL). A user is a name and an immutable set of rules
// (aclRules) swapped whole by ACL SETUSER, so a connection reads its user's rules with one atomic load and checks
// each command against them (aclcheck.go) without a lock. Rules follow Redis 7: flags on/off, passwords kept
// only as SHA-256, and selectors: the root one and any number of (...) ones, each with command permissions
// (bits by command and subcommand, first arguments), key patterns with read/write permissions, and channel
// patterns. A command runs when one selector allows all of it.

// Key permissions of a pattern (%R~, %W~, ~).
const (
	permRead  = 1
	permWrite = 2
	permAll   = permRead | permWrite
)

type keyPattern struct {
	perm int
	pat  string
	g    *glob.Pattern
}

type chanPattern struct {
	pat string
	g   *glob.Pattern
}

// aclSelector is one set of permissions: a command runs under it when its command bit (or first argument), each
// of its keys and each of its channels are allowed.
type aclSelector struct {
	allFuture bool     // started from +@all: commands added later (anykv-only ones included) are allowed
	rules     []string // the command rules after +@all/-@all, in order, each once ("+@hash", "-hset")
	bits      []uint64 // allowed commands and subcommands, by aclTable id
	firstArgs map[int][]string
	allKeys   bool
	keys      []keyPattern
	allChans  bool
	chans     []chanPattern
}

// aclRules is a user's state, never changed once published.
type aclRules struct {
	enabled   bool
	nopass    bool
	sanitize  string   // "", "sanitize-payload" or "skip-sanitize-payload"
	passwords []string // SHA-256 hex digests, in the order added
	selectors []*aclSelector
	// full: the root selector allows everything (every command now and later, every key and channel), so
	// nothing needs checking.
	full bool
}

// aclUser is a user; its rules change as a whole. deleted is set when ACL DELUSER (or ACL LOAD) removed it.
type aclUser struct {
	name    string
	rules   atomic.Pointer[aclRules]
	deleted atomic.Bool
}

func (u *aclUser) get() *aclRules { return u.rules.Load() }

// aclError is an ACL SETUSER failure, with Redis's reason text.
type aclError string

func (e aclError) Error() string { return string(e) }

const (
	errACLUnknown  aclError = "Unknown command or category name in ACL"
	errACLSyntax   aclError = "Syntax error"
	errACLKeysAll  aclError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	errACLChansAll aclError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	errACLNoPass   aclError = "The password you are trying to remove from the user does not exist"
	errACLHash     aclError = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	errACLFirstArg aclError = "Allowing first-arg of a subcommand is not supported"
)

func newSelector() *aclSelector {
	return &aclSelector{bits: make([]uint64, (aclTable().n+63)/64)}
}

func (sel *aclSelector) clone() *aclSelector {
	c := *sel
	c.rules = append([]string(nil), sel.rules...)
	c.bits = append([]uint64(nil), sel.bits...)
	if sel.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(sel.firstArgs))
		for k, v := range sel.firstArgs {
			c.firstArgs[k] = append([]string(nil), v...)
		}
	}
	c.keys = append([]keyPattern(nil), sel.keys...)
	c.chans = append([]chanPattern(nil), sel.chans...)
	return &c
}

func (r *aclRules) clone() *aclRules {
	c := *r
	c.passwords = append([]string(nil), r.passwords...)
	c.selectors = make([]*aclSelector, len(r.selectors))
	for i, s := range r.selectors {
		c.selectors[i] = s.clone()
	}
	return &c
}

// newRules is a new user's rules: off, no password, no commands, keys or channels (Redis 7's acl-pubsub-default
// resetchannels).
func newRules() *aclRules { return &aclRules{selectors: []*aclSelector{newSelector()}} }

func (sel *aclSelector) bit(id int) bool { return sel.bits[id/64]&(1<<(id%64)) != 0 }

func (sel *aclSelector) setBit(id int, on bool) {
	if on {
		sel.bits[id/64] |= 1 << (id % 64)
	} else {
		sel.bits[id/64] &^= 1 << (id % 64)
	}
}

// changePerm allows or denies a command (a container with all its subcommands), as Redis's ACLChangeSelectorPerm.
func (sel *aclSelector) changePerm(id int, on bool) {
	sel.setBit(id, on)
	delete(sel.firstArgs, id)
	for _, sub := range aclTable().cmds[id].subs {
		sel.setBit(sub, on)
	}
}

// updateRules records a command rule for the description, dropping an earlier identical one (Redis 7.2's
// ACLUpdateCommandRules; the bits it leaves are the same).
func (sel *aclSelector) updateRules(rule string, on bool) {
	rule = strings.ToLower(rule)
	for i := 0; i < len(sel.rules); i++ {
		if sel.rules[i][1:] == rule {
			sel.rules = append(sel.rules[:i], sel.rules[i+1:]...)
			break
		}
	}
	if on {
		sel.rules = append(sel.rules, "+"+rule)
	} else {
		sel.rules = append(sel.rules, "-"+rule)
	}
}

// setSelector applies one selector rule, as Redis's ACLSetSelector.
func (sel *aclSelector) set(op string) error {
	t := aclTable()
	lop := strings.ToLower(op)
	switch {
	case lop == "allkeys":
		sel.allKeys, sel.keys = true, nil
	case lop == "resetkeys":
		sel.allKeys, sel.keys = false, nil
	case lop == "allchannels":
		sel.allChans, sel.chans = true, nil
	case lop == "resetchannels":
		sel.allChans, sel.chans = false, nil
	case lop == "allcommands" || lop == "+@all":
		for i := range sel.bits {
			sel.bits[i] = ^uint64(0)
		}
		sel.allFuture, sel.rules, sel.firstArgs = true, nil, nil
	case lop == "nocommands" || lop == "-@all":
		clear(sel.bits)
		sel.allFuture, sel.rules, sel.firstArgs = false, nil, nil
	case op != "" && (op[0] == '~' || op[0] == '%'):
		if sel.allKeys {
			return errACLKeysAll
		}
		perm, off := permAll, 1
		if op[0] == '%' {
			perm = 0
			for ; off < len(op); off++ {
				switch c := op[off]; {
				case (c == 'R' || c == 'r') && perm&permRead == 0:
					perm |= permRead
				case (c == 'W' || c == 'w') && perm&permWrite == 0:
					perm |= permWrite
				case c == '~':
					off++
					goto done
				default:
					return errACLSyntax
				}
			}
		done:
			if perm == 0 {
				return errACLSyntax
			}
		}
		pat := op[min(off, len(op)):]
		if hasSpaces(pat) { // ACL SAVE writes rules space-separated on one line (Redis's ACLStringHasSpaces)
			return errACLSyntax
		}
		if pat == "*" && perm == permAll {
			sel.allKeys, sel.keys = true, nil
			return nil
		}
		for i := range sel.keys {
			if sel.keys[i].pat == pat {
				sel.keys[i].perm |= perm
				return nil
			}
		}
		sel.keys = append(sel.keys, keyPattern{perm: perm, pat: pat, g: glob.Compile([]byte(pat))})
	case op != "" && op[0] == '&':
		if sel.allChans {
			return errACLChansAll
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return errACLSyntax
		}
		if pat == "*" {
			sel.allChans, sel.chans = true, nil
			return nil
		}
		for _, c := range sel.chans {
			if c.pat == pat {
				return nil
			}
		}
		sel.chans = append(sel.chans, chanPattern{pat: pat, g: glob.Compile([]byte(pat))})
	case len(op) > 2 && (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := lower([]byte(op[2:]))
		ids, ok := t.cats[cat]
		if !ok {
			return errACLUnknown
		}
		on := op[0] == '+'
		for _, id := range ids {
			sel.changePerm(id, on)
		}
		sel.updateRules("@"+cat, on)
	case len(op) > 1 && op[0] == '+' && op[1] != '@':
		name := strings.ToLower(op[1:])
		i := strings.LastIndexByte(name, '|')
		if i < 0 {
			id, ok := t.ids[name]
			if !ok {
				return errACLUnknown
			}
			sel.changePerm(id, true)
			sel.updateRules(t.cmds[id].name, true)
			return nil
		}
		parent, sub := name[:i], name[i+1:]
		id, ok := t.ids[parent]
		switch {
		case !ok:
			return errACLUnknown
		case t.cmds[id].parent >= 0:
			return errACLFirstArg
		case sub == "", hasSpaces(sub): // a first argument with a newline would be a line of its own in the ACL file
			return errACLSyntax
		}
		if len(t.cmds[id].subs) > 0 {
			sid, ok := t.ids[name]
			if !ok {
				return errACLUnknown
			}
			sel.changePerm(sid, true)
		} else {
			if sel.firstArgs == nil {
				sel.firstArgs = map[int][]string{}
			}
			found := false
			for _, a := range sel.firstArgs[id] {
				found = found || a == sub
			}
			if !found {
				sel.firstArgs[id] = append(sel.firstArgs[id], sub)
			}
		}
		sel.updateRules(name, true)
	case len(op) > 1 && op[0] == '-' && op[1] != '@':
		id, ok := t.ids[strings.ToLower(op[1:])]
		if !ok {
			return errACLUnknown
		}
		sel.changePerm(id, false)
		sel.updateRules(t.cmds[id].name, false)
	default:
		return errACLSyntax
	}
	return nil
}

// set applies one user rule (ACLSetUser): user flags and passwords, a (selector), or a root selector rule.
func (r *aclRules) set(op string) error {
	lop := strings.ToLower(op)
	switch {
	case lop == "on":
		r.enabled = true
	case lop == "off":
		r.enabled = false
	case lop == "skip-sanitize-payload" || lop == "sanitize-payload":
		r.sanitize = lop
	case lop == "nopass":
		r.nopass, r.passwords = true, nil
	case lop == "resetpass":
		r.nopass, r.passwords = false, nil
	case lop == "clearselectors":
		r.selectors = r.selectors[:1]
	case lop == "reset":
		for _, o := range []string{"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "clearselectors", "-@all"} {
			r.set(o)
		}
	case op != "" && (op[0] == '>' || op[0] == '#'):
		h, err := passwordHash(op, '>')
		if err != nil {
			return err
		}
		found := false
		for _, p := range r.passwords {
			found = found || p == h
		}
		if !found {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
	case op != "" && (op[0] == '<' || op[0] == '!'):
		h, err := passwordHash(op, '<')
		if err != nil {
			return err
		}
		for i, p := range r.passwords {
			if p == h {
				r.passwords = append(r.passwords[:i], r.passwords[i+1:]...)
				return nil
			}
		}
		return errACLNoPass
	case len(op) >= 2 && op[0] == '(' && op[len(op)-1] == ')':
		sel := newSelector()
		for _, o := range strings.Split(op[1:len(op)-1], " ") {
			if o == "" {
				continue
			}
			if err := sel.set(o); err != nil {
				return err
			}
		}
		r.selectors = append(r.selectors, sel)
	default:
		return r.selectors[0].set(op)
	}
	return nil
}

// finish computes what the checks read fast (full).
func (r *aclRules) finish() *aclRules {
	root := r.selectors[0]
	r.full = root.allFuture && len(root.rules) == 0 && root.allKeys && root.allChans
	return r
}

// passwordHash is the SHA-256 hex a password rule names: of the password after clear ('>' or '<'), else the
// hash given (checked).
func passwordHash(op string, clear byte) (string, error) {
	if op[0] == clear {
		sum := sha256.Sum256([]byte(op[1:]))
		return hex.EncodeToString(sum[:]), nil
	}
	if !validHash(op[1:]) {
		return "", errACLHash
	}
	return op[1:], nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// mergeSelectorArgs joins the rules of a (selector) given as several arguments, as Redis's
// ACLMergeSelectorArguments; an opening parenthesis never closed is an error.
func mergeSelectorArgs(ops []string) ([]string, error) {
	var out []string
	var open []string
	for _, op := range ops {
		switch {
		case open != nil:
			open = append(open, op)
			if strings.HasSuffix(op, ")") {
				out, open = append(out, strings.Join(open, " ")), nil
			}
		case strings.HasPrefix(op, "(") && !strings.HasSuffix(op, ")"):
			open = []string{op}
		default:
			out = append(out, op)
		}
	}
	if open != nil {
		return nil, errors.New("Unmatched parenthesis in acl selector starting at '" + open[0] + "'.")
	}
	return out, nil
}

// describeSelector is a selector's rules in ACL LIST's words: keys, channels, commands.
func (sel *aclSelector) describe() string {
	var b []string
	if sel.allKeys {
		b = append(b, "~*")
	} else {
		for _, k := range sel.keys {
			b = append(b, k.String())
		}
	}
	if sel.allChans {
		b = append(b, "&*")
	} else {
		b = append(b, "resetchannels")
		for _, c := range sel.chans {
			b = append(b, "&"+c.pat)
		}
	}
	b = append(b, sel.describeCommands())
	return strings.Join(b, " ")
}

func (k keyPattern) String() string {
	switch k.perm {
	case permRead:
		return "%R~" + k.pat
	case permWrite:
		return "%W~" + k.pat
	}
	return "~" + k.pat
}

func (sel *aclSelector) describeCommands() string {
	base := "-@all"
	if sel.allFuture {
		base = "+@all"
	}
	return strings.TrimSpace(base + " " + strings.Join(sel.rules, " "))
}

func (sel *aclSelector) describeKeys() string {
	if sel.allKeys {
		return "~*"
	}
	var b []string
	for _, k := range sel.keys {
		b = append(b, k.String())
	}
	return strings.Join(b, " ")
}

func (sel *aclSelector) describeChannels() string {
	if sel.allChans {
		return "&*"
	}
	var b []string
	for _, c := range sel.chans {
		b = append(b, "&"+c.pat)
	}
	return strings.Join(b, " ")
}

// describe is the user's rules as ACL LIST and the ACL file write them (after "user <name> ").
func (r *aclRules) describe() string {
	b := []string{r.describeRoot()}
	for _, s := range r.selectors[1:] {
		b = append(b, "("+s.describe()+")")
	}
	return strings.Join(b, " ")
}

// describeRoot is the user's flags, passwords and root selector, as describe begins.
func (r *aclRules) describeRoot() string {
	b := []string{"off"}
	if r.enabled {
		b[0] = "on"
	}
	if r.nopass {
		b = append(b, "nopass")
	}
	if r.sanitize != "" {
		b = append(b, r.sanitize)
	}
	for _, p := range r.passwords {
		b = append(b, "#"+p)
	}
	b = append(b, r.selectors[0].describe())
	return strings.Join(b, " ")
}

// flagNames are ACL GETUSER's flags.
func (r *aclRules) flagNames() []string {
	f := []string{"off"}
	if r.enabled {
		f[0] = "on"
	}
	if r.nopass {
		f = append(f, "nopass")
	}
	if r.sanitize != "" {
		f = append(f, r.sanitize)
	}
	return f
}

// aclRegistry is the server's users, their ACL LOG and counters.
type aclRegistry struct {
	mu    sync.Mutex
	users map[string]*aclUser
	def   *aclUser // "default", never deleted
	log   aclLog
	// denied counts refusals for INFO stats: auth, cmd, key, channel.
	denied [4]atomic.Int64
	// requirepass is CONFIG GET requirepass's value: the last one CONFIG SET or the start gave.
	requirepass string
}

// applyRules builds rules from ops over base (a clone), all or nothing, as ACL SETUSER does: the error names the
// rule that failed.
func applyRules(base *aclRules, ops []string) (*aclRules, error) {
	ops, err := mergeSelectorArgs(ops)
	if err != nil {
		return nil, err
	}
	r := base.clone()
	for _, op := range ops {
		if err := r.set(op); err != nil {
			return nil, errors.New("Error in ACL SETUSER modifier '" + op + "': " + err.Error())
		}
	}
	return r.finish(), nil
}

// defaultRules are the default user's at start: everything, with the password or nopass.
func defaultRules(password string) *aclRules {
	ops := []string{"on", "~*", "&*", "+@all", "nopass"}
	if password != "" {
		ops[4] = ">" + password
	}
	r, _ := applyRules(newRules(), ops)
	return r
}

// sortedUsers lists the users by name (Redis keeps them in a radix tree); the caller holds mu.
func (a *aclRegistry) sortedUsers() []*aclUser {
	out := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func validUserName(n string) bool { return !hasSpaces(n) }

// hasSpaces reports whether s holds white space or a zero byte (Redis's ACLStringHasSpaces): user names, key and
// channel patterns and first arguments may not, since the ACL file separates them with spaces, a user a line.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}
