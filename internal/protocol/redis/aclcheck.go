package redis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ACL enforcement: the ids and categories of commands and subcommands, the keys and channels a call names, and
// the check of a call against a user's rules. Every path a command takes asks check: dispatch (before a command
// runs or is queued), EXEC (again, for each queued command), a script's redis.call and redis.pcall, SORT's BY and
// GET (full key access), and the subscriptions a user keeps (ACL SETUSER closes a subscriber whose channels it
// no longer allows, as Redis does).

// ACL check results, in Redis's order of relevance (the highest of a user's selectors is reported).
const (
	aclOK = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedAuth
	aclDeniedChannel
)

// aclCategories are Redis 7's categories, in ACL CAT's order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
	"transaction", "scripting"}

// aclExtraCats are the categories of commands and subcommands anykv serves that commandinfo.json (redis-server
// 7.0) lacks: Redis 7.2's where it has them, anykv's own as administrative and dangerous.
var aclExtraCats = map[string][]string{
	"backup":          {"admin", "slow", "dangerous"},
	"waitaof":         {"slow", "connection"},
	"client|setinfo":  {"slow", "connection"},
	"client|no-touch": {"slow", "connection"},
}

type aclCmd struct {
	name   string // "get", "config|get"
	parent int    // -1 for a command
	subs   []int
	cats   []string
	specs  []keySpec
	arity  int // a subcommand's arity in Redis 7.0 (0: unknown, or a command: its own table has it)
	// specsPartial: a spec is incomplete, unknown or of variable flags: the command's own key finder decides
	// (Redis's getkeys procedures).
	specsPartial bool
}

type aclTab struct {
	n    int
	cmds []aclCmd
	ids  map[string]int
	cats map[string][]int
}

var (
	aclTabOnce sync.Once
	aclTabVal  *aclTab
)

// aclTable numbers every command of the table and Redis's subcommands of the containers, once all files
// registered theirs.
func aclTable() *aclTab {
	aclTabOnce.Do(func() {
		t := &aclTab{ids: map[string]int{}, cats: map[string][]int{}}
		for _, c := range aclCategories {
			t.cats[c] = nil
		}
		add := func(name string, parent int, cats []string, specs []keySpec, partial bool) int {
			id := len(t.cmds)
			t.cmds = append(t.cmds, aclCmd{name: name, parent: parent, cats: cats, specs: specs, specsPartial: partial})
			t.ids[name] = id
			for _, c := range cats {
				if _, ok := t.cats[c]; ok {
					t.cats[c] = append(t.cats[c], id)
				}
			}
			return id
		}
		for _, c := range sortedCommands() {
			info := parseCommandInfo(c.name)
			cats := info.cats
			if _, ok := commandInfoTail[c.name]; !ok {
				cats = aclExtraCats[c.name]
				if cats == nil {
					cats = []string{"admin", "slow", "dangerous"}
				}
			}
			id := add(c.name, -1, cats, info.specs, info.partial)
			var subs []int
			for _, sc := range info.subs {
				sid := add(sc.name, id, sc.cats, sc.specs, sc.partial)
				t.cmds[sid].arity = sc.arity
				subs = append(subs, sid)
			}
			for name, cats := range aclExtraCats {
				if p, _, _ := strings.Cut(name, "|"); p == c.name && name != c.name {
					if _, dup := t.ids[name]; !dup {
						subs = append(subs, add(name, id, cats, nil, false))
					}
				}
			}
			t.cmds[id].subs = subs
		}
		unserved := make([]string, 0, len(redisUnserved))
		for name := range redisUnserved {
			unserved = append(unserved, name)
		}
		sort.Strings(unserved) // a container before its subcommands
		for _, name := range unserved {
			if _, dup := t.ids[name]; dup {
				continue
			}
			parent := -1
			if p, _, ok := strings.Cut(name, "|"); ok {
				parent = t.ids[p]
			}
			id := add(name, parent, redisUnserved[name], nil, false)
			if parent >= 0 {
				t.cmds[parent].subs = append(t.cmds[parent].subs, id)
			}
		}
		t.n = len(t.cmds)
		aclTabVal = t
	})
	return aclTabVal
}

// keySpec is one of Redis 7's key specifications, as COMMAND INFO gives it.
type keySpec struct {
	flags      []string // as COMMAND INFO lists them (RO, RW, OW, RM, access, update, insert, delete, ...)
	perm       int      // what a key it finds needs: read if access, write if insert, delete or update
	notKey     bool
	bsType     string // index, keyword, unknown
	bsIndex    int
	bsKeyword  string
	bsStart    int
	fkType     string // range, keynum, unknown
	lastKey    int
	keyStep    int
	limit      int
	keyNumIdx  int
	firstKey   int
	incomplete bool
}

type aclInfo struct {
	name    string
	arity   int // Redis's (0: unknown)
	cats    []string
	specs   []keySpec
	partial bool
	subs    []aclInfo
}

// parseCommandInfo reads a command's categories, key specs and subcommands from commandinfo.json.
func parseCommandInfo(name string) aclInfo {
	info := aclInfo{name: name}
	raw, ok := commandInfoTail[name]
	if !ok {
		return info
	}
	// raw[1] has no array header: parse the four values one after the other.
	rest := string(raw[1])
	var vals []any
	for range 4 {
		v, n, err := parseRESP3(rest)
		if err != nil {
			panic(fmt.Sprintf("redis: commandinfo.json: %s: %v", name, err))
		}
		vals, rest = append(vals, v), rest[n:]
	}
	fillInfo(&info, vals[0], vals[2])
	for _, e := range vals[3].([]any) {
		sub := e.([]any)
		si := aclInfo{name: sub[0].(string), arity: int(sub[1].(int64))}
		fillInfo(&si, sub[6], sub[8])
		info.subs = append(info.subs, si)
	}
	return info
}

func fillInfo(info *aclInfo, cats, specs any) {
	for _, c := range cats.([]any) {
		info.cats = append(info.cats, strings.TrimPrefix(c.(string), "@"))
	}
	for _, s := range specs.([]any) {
		m := s.(map[string]any)
		var ks keySpec
		for _, f := range m["flags"].([]any) {
			ks.flags = append(ks.flags, f.(string))
			switch f.(string) {
			case "access":
				ks.perm |= permRead
			case "insert", "delete", "update":
				ks.perm |= permWrite
			case "not_key":
				ks.notKey = true
			case "incomplete", "variable_flags":
				ks.incomplete = true
			}
		}
		bs := m["begin_search"].(map[string]any)
		ks.bsType = bs["type"].(string)
		spec, _ := bs["spec"].(map[string]any)
		switch ks.bsType {
		case "index":
			ks.bsIndex = int(spec["index"].(int64))
		case "keyword":
			ks.bsKeyword, ks.bsStart = spec["keyword"].(string), int(spec["startfrom"].(int64))
		}
		fk := m["find_keys"].(map[string]any)
		ks.fkType = fk["type"].(string)
		spec, _ = fk["spec"].(map[string]any)
		switch ks.fkType {
		case "range":
			ks.lastKey, ks.keyStep, ks.limit = int(spec["lastkey"].(int64)), int(spec["keystep"].(int64)), int(spec["limit"].(int64))
		case "keynum":
			ks.keyNumIdx, ks.firstKey, ks.keyStep = int(spec["keynumidx"].(int64)), int(spec["firstkey"].(int64)), int(spec["keystep"].(int64))
		}
		if ks.incomplete || ks.bsType == "unknown" || ks.fkType == "unknown" {
			info.partial = true
		}
		info.specs = append(info.specs, ks)
	}
}

// parseRESP3 reads one RESP3 value (of commandinfo.json) into strings, int64s, []any and map[string]any.
func parseRESP3(v string) (any, int, error) {
	end := strings.Index(v, "\r\n")
	if end < 1 {
		return nil, 0, fmt.Errorf("no value at %q", v[:min(len(v), 16)])
	}
	body, next := v[1:end], end+2
	switch v[0] {
	case '+', '-':
		return body, next, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return n, next, err
	case '$':
		n, _ := strconv.Atoi(body)
		return v[next : next+n], next + n + 2, nil
	case '*', '~':
		n, _ := strconv.Atoi(body)
		out := make([]any, 0, n)
		for range n {
			e, l, err := parseRESP3(v[next:])
			if err != nil {
				return nil, 0, err
			}
			out, next = append(out, e), next+l
		}
		return out, next, nil
	case '%':
		n, _ := strconv.Atoi(body)
		out := make(map[string]any, n)
		for range n {
			k, l, err := parseRESP3(v[next:])
			if err != nil {
				return nil, 0, err
			}
			next += l
			e, l, err := parseRESP3(v[next:])
			if err != nil {
				return nil, 0, err
			}
			next += l
			out[fmt.Sprint(k)] = e
		}
		return out, next, nil
	}
	return nil, 0, fmt.Errorf("unexpected %q", v[0])
}

// aclID is the id a call of cmd is checked under: its subcommand's when Redis knows it (config|get), else the
// command's (a container's subcommand Redis lacks needs the whole container).
func aclID(cmd *command, args [][]byte) int {
	t := aclTable()
	id := t.ids[cmd.name]
	if len(t.cmds[id].subs) > 0 && len(args) >= 2 && len(args[1]) <= 32 {
		if sid, ok := t.ids[cmd.name+"|"+lower(args[1])]; ok {
			return sid
		}
	}
	return id
}

// subArityError is Redis's error for a container's subcommand given the wrong number of arguments (by Redis 7.0's
// arity for it), or "" when the call is not one: Redis checks it before the call runs or is queued.
func subArityError(cmd *command, args [][]byte) string {
	if cmd.subStats == nil || len(args) < 2 {
		return ""
	}
	sc := &aclTable().cmds[aclID(cmd, args)]
	n := sc.arity
	if a, ok := subArity72[sc.name]; ok {
		n = a
	}
	if sc.parent < 0 || n == 0 || n > 0 && len(args) == n || n < 0 && len(args) >= -n {
		return ""
	}
	return "ERR wrong number of arguments for '" + sc.name + "' command"
}

// subArity72 are Redis 7.2's arities where 7.0's differ and anykv answers as 7.2 (COMMAND GETKEYS of a command
// without its arguments answers "Invalid number of arguments specified for command", which client suites expect).
var subArity72 = map[string]int{"command|getkeys": -3, "command|getkeysandflags": -3}

// aclKeyRef is a key argument and the permission it needs.
type aclKeyRef struct{ pos, perm int }

// aclKeys finds the keys of a call and what each needs, as Redis's key specs say (with its getkeys procedures'
// flags for SET, BITFIELD and SORT), adding every key anykv's own key finder names (COMMAND GETKEYS) that the
// specs did not, needing all the permissions the command's specs need: no key the command touches escapes.
func aclKeys(cmd *command, id int, args [][]byte) []aclKeyRef {
	if cmd.notKeys {
		return nil
	}
	t := aclTable()
	ac := &t.cmds[id]
	var out []aclKeyRef
	found := map[int]int{}
	union := 0
	for i := range ac.specs {
		sp := &ac.specs[i]
		if sp.notKey {
			continue
		}
		union |= sp.perm
		if sp.incomplete && ac.specsPartial || ac.specsPartial && cmd.movable != nil {
			continue // Redis reads a command with an incomplete spec by its getkeys procedure alone (MIGRATE, SORT)
		}
		for _, p := range sp.find(args, cmd.arity) {
			if _, ok := found[p]; !ok {
				out = append(out, aclKeyRef{pos: p})
			}
			found[p] |= sp.perm
		}
	}
	if len(ac.specs) == 0 {
		union = permAll
	}
	for _, p := range keyPositions(cmd, args) {
		if p <= 0 || p >= len(args) {
			continue
		}
		if _, ok := found[p]; !ok {
			out = append(out, aclKeyRef{pos: p})
			found[p] = union
		}
	}
	for i := range out {
		out[i].perm = found[out[i].pos]
	}
	switch cmd.name { // Redis's getkeys procedures' flags for the specs marked variable or unknown
	case "set":
		perm := permWrite
		for _, a := range args[3:] {
			if eq(a, "get") {
				perm = permAll
			}
		}
		setPerm(out, 1, perm)
	case "bitfield":
		perm := permRead
		for _, a := range args[2:] {
			if eq(a, "set") || eq(a, "incrby") {
				perm = permAll
			}
		}
		setPerm(out, 1, perm)
	case "sort", "sort_ro":
		for i := range out {
			if out[i].pos == 1 {
				out[i].perm = permRead
			} else {
				out[i].perm = permWrite // STORE's destination
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

func setPerm(refs []aclKeyRef, pos, perm int) {
	for i := range refs {
		if refs[i].pos == pos {
			refs[i].perm = perm
		}
	}
}

// keyPositions is anykv's own key finder (COMMAND GETKEYS) by index.
func keyPositions(cmd *command, args [][]byte) []int {
	if cmd.movable != nil {
		return cmd.movable(args)
	}
	var out []int
	for i, last, step := cmd.keySpan(args); i <= last; i += step {
		out = append(out, i)
	}
	return out
}

// find is Redis's getKeysUsingKeySpecs for one spec: the key indexes it names in args (none when it names
// none or runs past them).
func (sp *keySpec) find(args [][]byte, arity int) []int {
	argc := len(args)
	first := 0
	switch sp.bsType {
	case "index":
		first = sp.bsIndex
	case "keyword":
		start, end := sp.bsStart, 1
		if sp.bsStart > 0 {
			end = argc - 1
		} else {
			start = argc + sp.bsStart
		}
		for i := start; i != end; {
			if i >= argc || i < 1 {
				break
			}
			if strings.EqualFold(string(args[i]), sp.bsKeyword) {
				first = i + 1
				break
			}
			if start <= end {
				i++
			} else {
				i--
			}
		}
		if first == 0 {
			return nil
		}
	default:
		return nil
	}
	last, step := 0, 1
	switch sp.fkType {
	case "range":
		step = sp.keyStep
		switch {
		case sp.lastKey >= 0:
			last = first + sp.lastKey
		case sp.limit == 0:
			last = argc + sp.lastKey
		default:
			last = first + ((argc-first)/sp.limit + sp.lastKey)
		}
	case "keynum":
		step = sp.keyStep
		if sp.keyNumIdx >= argc-first {
			return nil
		}
		n, err := strconv.ParseInt(string(args[first+sp.keyNumIdx]), 10, 64)
		if err != nil || n < 0 || n > int64(argc) {
			return nil
		}
		first += sp.firstKey
		last = first + int(n) - 1
	default:
		return nil
	}
	if last >= argc || last < first || first >= argc || step < 1 {
		return nil
	}
	var out []int
	for i := first; i <= last; i += step {
		out = append(out, i)
	}
	return out
}

// aclChannels finds the channels of a call that ACL checks (those published to and subscribed to; pattern: they
// are PSUBSCRIBE's patterns, allowed only as written).
func aclChannels(cmd *command, args [][]byte) (idx []int, pattern bool) {
	switch cmd.name {
	case "publish", "spublish":
		return []int{1}, false
	case "subscribe", "ssubscribe", "psubscribe":
		for i := 1; i < len(args); i++ {
			idx = append(idx, i)
		}
		return idx, cmd.name == "psubscribe"
	}
	return nil, false
}

// check is Redis's ACLCheckAllUserCommandPerm: aclOK when one selector allows the call, else the most relevant
// refusal and the index of the argument refused (a key or channel).
func (r *aclRules) check(cmd *command, args [][]byte) (res, pos int) {
	if r.full {
		return aclOK, 0
	}
	id := aclID(cmd, args)
	var keys []aclKeyRef
	keysDone := false
	best, bestPos := -1, -1
	for _, sel := range r.selectors {
		res, pos := sel.check(cmd, id, args, &keys, &keysDone)
		if res == aclOK {
			return aclOK, 0
		}
		if res > best || res == best && pos > bestPos {
			best, bestPos = res, pos
		}
	}
	return best, bestPos
}

func (sel *aclSelector) check(cmd *command, id int, args [][]byte, keys *[]aclKeyRef, keysDone *bool) (int, int) {
	if cmd.flags&flagNoAuth == 0 && !sel.bit(id) {
		idx := 1
		if aclTable().cmds[id].parent >= 0 {
			idx = 2
		}
		ok := false
		if len(args) > idx {
			for _, a := range sel.firstArgs[id] {
				ok = ok || strings.EqualFold(a, string(args[idx]))
			}
		}
		if !ok {
			return aclDeniedCmd, 0
		}
	}
	if !sel.allKeys {
		if !*keysDone {
			*keys, *keysDone = aclKeys(cmd, id, args), true
		}
		for _, k := range *keys {
			if !sel.keyAllowed(args[k.pos], k.perm) {
				return aclDeniedKey, k.pos
			}
		}
	}
	if !sel.allChans {
		idx, pattern := aclChannels(cmd, args)
		for _, i := range idx {
			if !sel.channelAllowed(args[i], pattern) {
				return aclDeniedChannel, i
			}
		}
	}
	return aclOK, 0
}

func (sel *aclSelector) keyAllowed(key []byte, perm int) bool {
	if sel.allKeys {
		return true
	}
	for i := range sel.keys {
		if k := &sel.keys[i]; k.perm&perm == perm && k.g.Matches(key) {
			return true
		}
	}
	return false
}

func (sel *aclSelector) channelAllowed(ch []byte, pattern bool) bool {
	if sel.allChans {
		return true
	}
	for i := range sel.chans {
		c := &sel.chans[i]
		if pattern && c.pat == string(ch) || !pattern && c.g.Matches(ch) {
			return true
		}
	}
	return false
}

// fullKeyAccess reports whether one selector that allows the call may read every key (SORT's BY and GET), as
// Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess.
func (r *aclRules) fullKeyAccess(cmd *command, args [][]byte) bool {
	if r.full {
		return true
	}
	id := aclID(cmd, args)
	var keys []aclKeyRef
	done := false
	for _, sel := range r.selectors {
		if res, _ := sel.check(cmd, id, args, &keys, &done); res != aclOK {
			continue
		}
		if sel.allKeys {
			return true
		}
		for _, k := range sel.keys {
			if k.perm&permRead != 0 && k.pat == "*" {
				return true
			}
		}
	}
	return false
}

// channelsAllowed reports whether the rules still allow every channel, pattern and shard channel a subscriber
// holds (ACL SETUSER closes the subscriber otherwise, as Redis's ACLKillPubsubClientsIfNeeded).
func (r *aclRules) channelsAllowed(channels, patterns, shards []string) bool {
	if r.full {
		return true
	}
	ok := func(ch string, pattern bool) bool {
		for _, sel := range r.selectors {
			if sel.channelAllowed([]byte(ch), pattern) {
				return true
			}
		}
		return false
	}
	for _, c := range channels {
		if !ok(c, false) {
			return false
		}
	}
	for _, c := range shards {
		if !ok(c, false) {
			return false
		}
	}
	for _, p := range patterns {
		if !ok(p, true) {
			return false
		}
	}
	return true
}

// nopermText is the NOPERM reply of a refused call (Redis 7.0's texts).
func nopermText(res, id int) string {
	switch res {
	case aclDeniedCmd:
		return "NOPERM this user has no permissions to run the '" + aclTable().cmds[id].name + "' command"
	case aclDeniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case aclDeniedChannel:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return "NOPERM no permission"
}

// keysAndFlags is COMMAND GETKEYSANDFLAGS's answer for a call of cmd (args[0] its name): the key positions and
// each key's flags, as Redis's getKeysFromCommandWithSpecs finds them: by the key specs in order when they are
// complete and their flags fixed, else by the command's own key finder with the flags Redis's getkeys procedures
// give (SET, BITFIELD, SORT, MIGRATE), or, for any other, those of all its specs.
func keysAndFlags(cmd *command, args [][]byte) (pos []int, flags [][]string) {
	t := aclTable()
	ac := &t.cmds[aclID(cmd, args)]
	if !ac.specsPartial && len(ac.specs) > 0 {
		for i := range ac.specs {
			sp := &ac.specs[i]
			if sp.notKey {
				continue
			}
			for _, p := range sp.find(args, cmd.arity) {
				pos, flags = append(pos, p), append(flags, sp.flags)
			}
		}
		return pos, flags
	}
	has := func(from int, words ...string) bool {
		for _, a := range args[min(from, len(args)):] {
			for _, w := range words {
				if eq(a, w) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range keyPositions(cmd, args) {
		var f []string
		switch {
		case cmd.name == "set" && has(3, "get"), cmd.name == "bitfield" && has(2, "set", "incrby"):
			f = []string{"RW", "access", "update"}
		case cmd.name == "set":
			f = []string{"OW", "update"}
		case cmd.name == "bitfield", cmd.name == "sort" && p == 1, cmd.name == "sort_ro":
			f = []string{"RO", "access"}
		case cmd.name == "sort":
			f = []string{"OW", "update"} // STORE's destination
		case cmd.name == "migrate":
			f = []string{"RW", "access", "delete"}
		default:
			seen := map[string]bool{}
			for i := range ac.specs {
				for _, fl := range ac.specs[i].flags {
					if !seen[fl] {
						seen[fl] = true
						f = append(f, fl)
					}
				}
			}
		}
		pos, flags = append(pos, p), append(flags, f)
	}
	return pos, flags
}
