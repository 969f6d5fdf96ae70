package redis

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// respSplit splits v, a run of RESP3 values, into its values (their bytes).
func respSplit(t *testing.T, v string) []string {
	t.Helper()
	var skip func(i int) int
	skip = func(i int) int {
		end := i + strings.Index(v[i:], "\r\n")
		if end < i {
			t.Fatalf("no CRLF in %q", v[i:])
		}
		n, _ := strconv.Atoi(v[i+1 : end])
		next := end + 2
		switch v[i] {
		case '$', '=', '!':
			return next + n + 2
		case '*', '~', '>':
			for k := 0; k < n; k++ {
				next = skip(next)
			}
		case '%', '|':
			for k := 0; k < 2*n; k++ {
				next = skip(next)
			}
		}
		return next
	}
	var out []string
	for i := 0; i < len(v); {
		j := skip(i)
		out, i = append(out, v[i:j]), j
	}
	return out
}

// redisInfoTails fetches, for each command anykv serves that redis-server at addr knows, the last four values of
// its RESP3 COMMAND INFO entry (categories, tips, key specs, subcommands) as one array; and the first six
// (name to step), to compare with anykv's.
func redisInfoTails(t *testing.T, addr string) (tails, heads map[string]string) {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	rc.reply()
	tails, heads = map[string]string{}, map[string]string{}
	for _, c := range sortedCommands() {
		rc.send("*3\r\n$7\r\nCOMMAND\r\n$4\r\nINFO\r\n$" + itoa(int64(len(c.name))) + "\r\n" + c.name + "\r\n")
		r := rc.reply()
		if !strings.HasPrefix(r, "*1\r\n*10\r\n") {
			continue // unknown to this redis-server: "*1\r\n_\r\n"
		}
		vals := respSplit(t, r[len("*1\r\n*10\r\n"):])
		if len(vals) != 10 {
			t.Fatalf("COMMAND INFO %s: %d values", c.name, len(vals))
		}
		tails[c.name] = "*4\r\n" + strings.Join(vals[6:], "")
		heads[c.name] = vals[0] + vals[1] + vals[3] + vals[4] + vals[5] // the flags (vals[2]) are anykv's own
	}
	return tails, heads
}

// canonInfoTail compares two tails regardless of the order of the subcommands, which redis-server lists in its
// hash table's order.
func canonInfoTail(t *testing.T, v string) string {
	vals := respSplit(t, strings.TrimPrefix(v, "*4\r\n"))
	if len(vals) != 4 {
		t.Fatalf("%d values in a COMMAND INFO tail", len(vals))
	}
	subs := vals[3] // a set in RESP3
	head := subs[:strings.Index(subs, "\r\n")+2]
	items := respSplit(t, subs[len(head):])
	sort.Strings(items)
	return strings.Join(vals[:3], "") + head + strings.Join(items, "")
}

// arity72 are the commands whose arity Redis 7.2 changed (ZRANK's WITHSCORE), which anykv reports as 7.2 does.
var arity72 = map[string]bool{"zrank": true, "zrevrank": true}

// TestCommandInfoFile: commandinfo.json holds redis-server's own ACL categories, tips, key specs and subcommands of
// every command anykv serves that Redis has, and anykv's COMMAND INFO entries start as Redis's (name, arity, key
// positions); -rewrite regenerates the file from a real redis-server.
func TestCommandInfoFile(t *testing.T) {
	addr := startRedisServer(t)
	tails, heads := redisInfoTails(t, addr)
	if rewriteJSON(t, "commandinfo.json", tails) {
		t.Skip("commandinfo.json rewritten: rebuild to embed it")
	}
	ts := startServer(t, Options{}, 0)
	mineTails, mineHeads := redisInfoTails(t, ts.addr)
	for n, tail := range tails {
		if _, ok := commandInfoTail[n]; !ok {
			t.Errorf("commandinfo.json lacks %s, which redis-server has: run with -rewrite", n)
			continue
		}
		if canonInfoTail(t, mineTails[n]) != canonInfoTail(t, tail) {
			t.Errorf("COMMAND INFO %s ends otherwise than redis-server's:\n%q\n%q", n, mineTails[n], tail)
		}
		if mineHeads[n] != heads[n] && !arity72[n] {
			t.Errorf("COMMAND INFO %s starts otherwise than redis-server's:\n%q\n%q", n, mineHeads[n], heads[n])
		}
	}
}

// TestCommandListFilterBy: COMMAND LIST FILTERBY selects as Redis 7 (compared with redis-server on filters whose
// commands anykv all serves: Redis lists in its hash table's order, so as sets), and RESP2's COMMAND INFO carries
// the tips (go-redis's and redis-py's own suites: FILTERBY was ignored and the tips were empty).
func TestCommandListFilterBy(t *testing.T) {
	addr := startRedisServer(t)
	ts := startServer(t, Options{}, 0)
	list := func(addr, cmd string) string {
		rc := dialRaw(t, addr)
		rc.send(cmd + "\r\n")
		r := rc.reply()
		if !strings.HasPrefix(r, "*") {
			return r
		}
		lines := strings.Split(r, "\r\n")
		var names []string
		for i := 2; i < len(lines); i += 2 {
			names = append(names, lines[i])
		}
		sort.Strings(names)
		return strings.Join(names, " ")
	}
	for _, cmd := range []string{"COMMAND LIST FILTERBY ACLCAT geo", "COMMAND LIST FILTERBY ACLCAT GEO",
		"COMMAND LIST FILTERBY ACLCAT @geo", "COMMAND LIST FILTERBY ACLCAT bogus", "COMMAND LIST FILTERBY PATTERN z*",
		"COMMAND LIST FILTERBY PATTERN GEO*", "COMMAND LIST FILTERBY PATTERN config*", "COMMAND LIST FILTERBY PATTERN xinfo*",
		"COMMAND LIST FILTERBY MODULE json", "COMMAND LIST FILTERBY",
		"COMMAND LIST FILTERBY ACLCAT", "COMMAND LIST FILTERBY bogus x", "COMMAND LIST x",
		"COMMAND LIST FILTERBY PATTERN a b"} {
		want, got := list(addr, cmd), list(ts.addr, cmd)
		if got != want {
			t.Errorf("%s: %q\nredis-server: %q", cmd, got, want)
		}
	}
	for _, name := range []string{"touch", "flushall", "mget", "set", "client", "xreadgroup"} {
		cmd := "*3\r\n$7\r\nCOMMAND\r\n$4\r\nINFO\r\n$" + itoa(int64(len(name))) + "\r\n" + name + "\r\n"
		mine, theirs := dialRaw(t, ts.addr), dialRaw(t, addr)
		mine.send(cmd)
		theirs.send(cmd)
		got, want := respSplit(t, mine.reply()[len("*1\r\n*10\r\n"):]), respSplit(t, theirs.reply()[len("*1\r\n*10\r\n"):])
		if name != "client" && strings.Join(got[6:], "") != strings.Join(want[6:], "") { // CLIENT's subcommands come in any order
			t.Errorf("RESP2 COMMAND INFO %s ends with %q\nredis-server: %q", name, got[6:], want[6:])
		}
	}
}
