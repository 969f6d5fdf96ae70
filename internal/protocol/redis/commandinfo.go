package redis

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"anykv/internal/glob"
)

// COMMAND INFO ends each entry with Redis's ACL categories, tips (request_policy, response_policy, ...), key
// specifications and subcommands. commandinfo.json holds, per command anykv serves, those four values as
// redis-server 7 answers them in RESP3 (as one array of four); TestCommandInfoFile checks it against a real
// redis-server and regenerates it with -rewrite. Cluster clients route by the tips (go-redis: request_policy
// multi_shard for TOUCH), and COMMAND LIST FILTERBY ACLCAT selects by the categories.

//go:embed commandinfo.json
var commandInfoJSON []byte

// commandInfoTail holds the four values in both protocols by command name (RESP2: sets and maps as arrays), without
// the array header; commandCats holds each command's categories ("@read").
var (
	commandInfoTail = map[string][2][]byte{}
	commandCats     = map[string][]string{}
	// commandSubs are a container's subcommands ("config|get") with their categories, as COMMAND LIST lists them.
	commandSubs = map[string][]subcommand{}
)

type subcommand struct {
	name string
	cats []string
}

func init() {
	var raw map[string]string
	if err := json.Unmarshal(commandInfoJSON, &raw); err != nil {
		panic("redis: commandinfo.json: " + err.Error())
	}
	for name, r3 := range raw {
		r2, err := resp3To2([]byte(r3))
		if err != nil || !strings.HasPrefix(r3, "*4\r\n") || !strings.HasPrefix(string(r2), "*4\r\n") {
			panic(fmt.Sprintf("redis: commandinfo.json: %s: not an array of four (%v)", name, err))
		}
		commandInfoTail[name] = [2][]byte{r2[4:], []byte(r3[4:])}
		cats, err := respSimpleSet(r3[4:])
		if err != nil {
			panic(fmt.Sprintf("redis: commandinfo.json: %s: categories: %v", name, err))
		}
		commandCats[name] = cats
		subs, err := respSubcommands(r3[4:])
		if err != nil {
			panic(fmt.Sprintf("redis: commandinfo.json: %s: subcommands: %v", name, err))
		}
		commandSubs[name] = subs
	}
}

// respSkip returns the length of the RESP3 value v starts with.
func respSkip(v string) (int, error) {
	end := strings.Index(v, "\r\n")
	if end < 1 {
		return 0, fmt.Errorf("no value at %q", v[:min(len(v), 16)])
	}
	n, _ := strconv.Atoi(v[1:end])
	next, items := end+2, 0
	switch v[0] {
	case '$', '=', '!':
		return next + n + 2, nil
	case '*', '~', '>':
		items = n
	case '%', '|':
		items = 2 * n
	}
	for range items {
		l, err := respSkip(v[next:])
		if err != nil {
			return 0, err
		}
		next += l
	}
	return next, nil
}

// respSubcommands reads, from the four values of a COMMAND INFO tail, the subcommands' names and categories.
func respSubcommands(v string) ([]subcommand, error) {
	for range 3 { // categories, tips, key specs
		l, err := respSkip(v)
		if err != nil {
			return nil, err
		}
		v = v[l:]
	}
	end := strings.Index(v, "\r\n")
	if end < 1 || v[0] != '*' && v[0] != '~' {
		return nil, fmt.Errorf("no set of subcommands")
	}
	n, _ := strconv.Atoi(v[1:end])
	v = v[end+2:]
	var out []subcommand
	for range n {
		l, err := respSkip(v)
		if err != nil {
			return nil, err
		}
		entry := v[:l]
		v = v[l:]
		var vals []string
		for e := entry[strings.Index(entry, "\r\n")+2:]; e != ""; {
			k, err := respSkip(e)
			if err != nil {
				return nil, err
			}
			vals, e = append(vals, e[:k]), e[k:]
		}
		if len(vals) != 10 || vals[0][0] != '$' {
			return nil, fmt.Errorf("a subcommand entry of %d values", len(vals))
		}
		name := vals[0][strings.Index(vals[0], "\r\n")+2 : len(vals[0])-2]
		cats, err := respSimpleSet(vals[6])
		if err != nil {
			return nil, err
		}
		out = append(out, subcommand{name, cats})
	}
	return out, nil
}

// respSimpleSet reads the RESP3 set of simple strings v starts with (the categories).
func respSimpleSet(v string) ([]string, error) {
	end := strings.Index(v, "\r\n")
	if end < 1 || v[0] != '~' {
		return nil, fmt.Errorf("no set at %q", v[:min(len(v), 16)])
	}
	n, err := strconv.Atoi(v[1:end])
	if err != nil {
		return nil, err
	}
	v = v[end+2:]
	out := make([]string, 0, n)
	for range n {
		end = strings.Index(v, "\r\n")
		if end < 1 || v[0] != '+' {
			return nil, fmt.Errorf("no simple string at %q", v[:min(len(v), 16)])
		}
		out, v = append(out, v[1:end]), v[end+2:]
	}
	return out, nil
}

// writeCommandInfoTail writes the last four values of c's COMMAND INFO entry: Redis's, or none for a command Redis
// lacks (BACKUP).
func writeCommandInfoTail(s *session, c *command) {
	if t, ok := commandInfoTail[c.name]; ok {
		if s.w.Proto() == 3 {
			s.w.Raw(t[1])
		} else {
			s.w.Raw(t[0])
		}
		return
	}
	s.w.SetHeader(0) // ACL categories
	s.w.SetHeader(0) // tips
	s.w.SetHeader(0) // key specs
	s.w.SetHeader(0) // subcommands
}

// commandList answers COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern] as Redis 7: each
// command, a container followed by Redis's subcommands of it ("config|get"; as COMMAND INFO and DOCS, all of
// them, also those anykv does not serve); no command comes from a module, a category is named without its @ in
// any case, a pattern matches names in any case.
func commandList(s *session, args [][]byte) {
	match := func(string, []string) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && eq(args[2], "filterby") && eq(args[3], "module"):
		match = func(string, []string) bool { return false }
	case len(args) == 5 && eq(args[2], "filterby") && eq(args[3], "aclcat"):
		cat := "@" + lower(args[4])
		match = func(_ string, cats []string) bool {
			for _, k := range cats {
				if k == cat {
					return true
				}
			}
			return false
		}
	case len(args) == 5 && eq(args[2], "filterby") && eq(args[3], "pattern"):
		g := glob.Compile([]byte(lower(args[4])))
		match = func(name string, _ []string) bool { return g.Matches([]byte(name)) }
	default:
		s.w.Error(errSyntax)
		return
	}
	var names []string
	for _, c := range sortedCommands() {
		if match(c.name, commandCats[c.name]) {
			names = append(names, c.name)
		}
		for _, sc := range commandSubs[c.name] {
			if match(sc.name, sc.cats) {
				names = append(names, sc.name)
			}
		}
	}
	s.w.ArrayHeader(len(names))
	for _, n := range names {
		s.w.BulkString(n)
	}
}
