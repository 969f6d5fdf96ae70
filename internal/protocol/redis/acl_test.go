package redis

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// aclTranscript runs steps on addr: each step is "conn: command" (conn names a connection, opened on first use)
// and records each reply; "conn! command" sends without reading (a connection about to be closed), "conn?"
// records whether the server closed the connection.
func aclTranscript(t *testing.T, addr string, steps []string) string {
	t.Helper()
	conns := map[string]*rawConn{}
	var out strings.Builder
	for _, st := range steps {
		i := strings.IndexAny(st, ":!?")
		name, kind, cmd := st[:i], st[i], strings.TrimSpace(st[i+1:])
		c := conns[name]
		if c == nil {
			c = dialRaw(t, addr)
			conns[name] = c
		}
		switch kind {
		case '?':
			fmt.Fprintf(&out, "%s closed: %v\n", name, c.closed())
			continue
		case '!':
			c.send(inlineToRESP(cmd))
			continue
		}
		c.send(inlineToRESP(cmd))
		fmt.Fprintf(&out, "%s> %s\n%q\n", name, cmd, maskACL(c.reply()))
	}
	return out.String()
}

// inlineToRESP writes a command given as words ('single quoted' words may hold spaces) as a RESP array.
func inlineToRESP(cmd string) string {
	words, err := splitArgs(cmd)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(w), w)
	}
	return b.String()
}

var (
	maskAge     = regexp.MustCompile(`age-seconds\r\n(\$\d+\r\n[^\r]*|,[^\r]*)\r\n`)
	maskInfo    = regexp.MustCompile(`client-info\r\n\$\d+\r\n[^\r]*\r\n`)
	maskLog72   = regexp.MustCompile(`\$8\r\nentry-id\r\n:\d+\r\n\$17\r\ntimestamp-created\r\n:\d+\r\n\$22\r\ntimestamp-last-updated\r\n:\d+\r\n`)
	maskLogLen  = regexp.MustCompile(`([*%])(20|10|14|7)\r\n\$5\r\ncount`)
	maskHelloID = regexp.MustCompile(`\$2\r\nid\r\n:\d+\r\n`)
	maskVersion = regexp.MustCompile(`\$7\r\nversion\r\n\$\d+\r\n[0-9.]+\r\n`)
)

// maskACL hides what differs between servers and runs: ACL LOG's ages, client lines and Redis 7.2's three
// fields (anykv reports 7.2), HELLO's id and version.
func maskACL(r string) string {
	r = maskAge.ReplaceAllString(r, "age-seconds\r\n<age>\r\n")
	r = maskInfo.ReplaceAllString(r, "client-info\r\n<info>\r\n")
	r = maskLog72.ReplaceAllString(r, "")
	r = maskLogLen.ReplaceAllString(r, "${1}N\r\n$$5\r\ncount")
	r = maskHelloID.ReplaceAllString(r, "id <id>")
	return maskVersion.ReplaceAllString(r, "version <v>")
}

// TestACLMatchesRedis: ACL SETUSER's rules and errors, GETUSER (RESP2 and RESP3) and LIST, AUTH and HELLO AUTH,
// NOPERM for commands, subcommands, keys by read and write patterns, channels and patterns, in MULTI (queued and
// changed before EXEC), in scripts, functions and SORT, DELUSER closing its user's connections, CLIENT KILL
// USER, DRYRUN, GENPASS, WHOAMI and ACL LOG, byte for byte as redis-server 7.0 answers.
func TestACLMatchesRedis(t *testing.T) {
	ours := startServer(t, Options{}, 0).addr
	theirs := startRedisServer(t)
	h := "#" + strings.Repeat("ab", 32)
	steps := []string{
		// rules, errors and their description
		"a: ACL SETUSER u1", "a: ACL LIST", "a: ACL GETUSER u1",
		"a: ACL SETUSER u2 on >p1 " + h + " ~a* %R~r* %W~w* %RW~b* &ch* +@hash +get (~x* +set) (%R~y* &z +@read)",
		"a: ACL GETUSER u2", "a: ACL LIST", "m: HELLO 3", "m: ACL GETUSER u2", "m: ACL GETUSER default",
		"a: ACL SETUSER u3 reset", "a: ACL GETUSER u3",
		"a: ACL SETUSER u4 on nopass allkeys allchannels allcommands", "a: ACL GETUSER u4",
		"a: ACL SETUSER u4 resetkeys resetchannels nocommands +config|get", "a: ACL GETUSER u4",
		"a: ACL SETUSER u4 nocommands +select|0 +select|1", "a: ACL GETUSER u4",
		"a: ACL SETUSER u4 -@all +@all -config|get clearselectors resetpass >x <x", "a: ACL GETUSER u4",
		"a: ACL SETUSER u4 %R~ %R %RW~a %WR~b %rw~c %W~* ~ &", "a: ACL GETUSER u4",
		"a: ACL SETUSER e %~a", "a: ACL SETUSER e %RR~d",
		"a: ACL SETUSER e foo", "a: ACL SETUSER e +nosuch", "a: ACL SETUSER e +@nosuch", "a: ACL SETUSER e -@nosuch",
		"a: ACL SETUSER e +config|nosuch", "a: ACL SETUSER e +config|", "a: ACL SETUSER e +config|get|x",
		"a: ACL SETUSER e %X~a", "a: ACL SETUSER e %", "a: ACL SETUSER e #abc", "a: ACL SETUSER e !abc",
		"a: ACL SETUSER e <nope", "a: ACL SETUSER e (~a", "a: ACL SETUSER e (~a +nosuch)", "a: ACL SETUSER e ~* ~x",
		"a: ACL SETUSER e &* &x", "a: ACL SETUSER e allkeys %R~x", "a: ACL SETUSER 'a b'", "a: ACL GETUSER e",
		"a: ACL SETUSER default ~x", "a: ACL DELUSER default", "a: ACL DELUSER nosuch", "a: ACL GETUSER nosuch",
		"a: ACL WHOAMI", "a: ACL USERS", "a: ACL CAT nosuch", "a: ACL GENPASS 0", "a: ACL GENPASS 4097", "a: ACL GENPASS x",
		"a: ACL LOG x", "a: ACL LOG 1 2", "a: ACL FOO", "a: ACL GETUSER", "a: ACL SAVE", "a: ACL LOAD", "a: ACL HELP",
		"a: ACL DRYRUN nosuch get", "a: ACL DRYRUN u2 nosuch", "a: ACL DRYRUN u2 get", "a: ACL DRYRUN u2 get a1",
		"a: ACL DRYRUN u2 get x1", "a: ACL DRYRUN u2 set x1 v", "a: ACL DRYRUN u2 set r1 v", "a: ACL DRYRUN u2 hset b1 f v",
		"a: ACL DRYRUN u2 publish nope m", "a: ACL DRYRUN u2 lpush a1 v",
		// AUTH and HELLO
		"a: ACL LOG RESET",
		"b: AUTH u2 wrong", "b: AUTH nosuch p1", "b: AUTH u3 x", "b: AUTH p1", "b: AUTH u2 p1", "b: ACL WHOAMI",
		"c: HELLO 3 AUTH u2 wrong", "c: HELLO 2 AUTH u2 p1", "c: ACL WHOAMI",
		// commands, keys, channels
		"b: GET a1", "b: GET x1", "b: GET r1", "b: SET r1 v", "b: SET w1 v", "b: GET w1", "b: SET x1 v", "b: GET y1",
		"b: EXISTS w1", "b: HSET b1 f v", "b: HGET b1 f", "b: HGET a1 f", "b: DEL a1", "b: MGET a1 b1", "b: MGET a1 q1",
		"b: RENAME a1 q", "b: LPUSH a1 v", "b: CONFIG GET maxclients", "b: PUBLISH ch1 m", "b: PUBLISH z m", "b: PUBLISH q m",
		"b: SUBSCRIBE ch1 q", "d: AUTH u2 p1", "d: PSUBSCRIBE ch*", "d: PSUBSCRIBE c*", "d: PSUBSCRIBE ch1",
		"e: AUTH u2 p1", "e: SSUBSCRIBE q",
		// MULTI: refused at queue time (EXECABORT), and rules changed before EXEC
		"f: AUTH u2 p1", "f: MULTI", "f: EXEC",
		"a: ACL SETUSER mu on nopass ~a* &* +@all", "f: AUTH mu x", "f: MULTI", "f: SET q1 v", "f: EXEC",
		"f: MULTI", "f: GET a1", "f: HSET a2 f v", "f: PUBLISH x m", "a: ACL SETUSER mu -hset resetchannels", "f: EXEC",
		"a: ACL SETUSER mu +hset &*",
		// scripts and functions
		"f: EVAL \"return redis.call('get','a1')\" 0", "f: EVAL \"return redis.call('get','q1')\" 0",
		"f: EVAL \"return redis.pcall('get','q1')\" 0", "f: EVAL \"return redis.call('set','a1','v')\" 0",
		"f: EVAL \"return redis.call('publish','q','m')\" 0", "f: EVAL \"return redis.call('lpush','a1','v')\" 0",
		"f: EVAL \"return 1\" 1 q1",
		"a: ACL SETUSER fu on nopass ~* &* +@all -set",
		"a: FUNCTION LOAD \"#!lua name=acllib\nredis.register_function('f', function(k, a) return redis.call('set', k[1], 'v') end)\"",
		"g: AUTH fu x", "g: FCALL f 1 k", "a: FUNCTION DELETE acllib",
		// SORT
		"a: ACL SETUSER so on nopass %R~s* %W~d* +@all", "h: AUTH so x", "h: SORT s1", "h: SORT s1 BY nosort",
		"h: SORT s1 BY w_*", "h: SORT s1 GET #", "h: SORT s1 STORE d1", "h: SORT s1 STORE s2",
		"a: ACL SETUSER so2 on nopass %R~* +@all", "i: AUTH so2 x", "i: SORT s1 BY w_* GET #",
		// the log
		"a: ACL LOG 20",
		// DELUSER and CLIENT KILL USER close connections
		"a: ACL SETUSER k1 on nopass +@all ~*", "j: AUTH k1 x", "k: AUTH k1 x", "a: CLIENT KILL USER nosuch",
		"a: CLIENT KILL USER k1", "j?", "k?",
		"l: AUTH u2 p1", "a: ACL DELUSER u2 nosuch", "l?",
		"a: AUTH default x", "a: ACL USERS",
	}
	got, want := aclTranscript(t, ours, steps), aclTranscript(t, theirs, steps)
	compareTranscripts(t, strings.Split(got, "\n"), strings.Split(want, "\n"))
	for _, w := range []string{"NOPERM this user has no permissions to access one of the keys", "WRONGPASS", "closed: true",
		"NOPERM ACLs rules changed", "can't access at least one of the keys"} {
		if !strings.Contains(got, w) {
			t.Errorf("the transcript lacks %q", w)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
}

// TestACLEveryCommandRefused: a user with no permissions at all is refused every command of the table and every
// subcommand Redis has, with the NOPERM of its full name; only the commands Redis lets any client run (AUTH,
// HELLO, QUIT, RESET: no_auth) run. No command path escapes the check.
func TestACLEveryCommandRefused(t *testing.T) {
	c := connectAsNewUser(t, "none", "nocommands resetkeys resetchannels")
	tab := aclTable()
	checked := 0
	for _, ac := range tab.cmds {
		name, sub, _ := strings.Cut(ac.name, "|")
		cmd := commands[name]
		if cmd == nil { // a Redis command anykv does not serve (redisUnserved): rules may name it, it never runs
			if _, unserved := redisUnserved[ac.name]; !unserved {
				t.Errorf("%s is in the ACL table, neither served nor one of Redis's", ac.name)
			}
			continue
		}
		if cmd.flags&flagNoAuth != 0 {
			continue
		}
		args := []string{name}
		if sub != "" {
			args = append(args, sub)
		} else if len(tab.cmds[tab.ids[name]].subs) > 0 {
			args = append(args, "nosuchsub")
		}
		for len(args) < max(cmd.arity, -cmd.arity, ac.arity, -ac.arity) { // a subcommand's arity is checked first
			args = append(args, "1")
		}
		c.send(inlineToRESP(strings.Join(args, " ")))
		want := "-NOPERM this user has no permissions to run the '" + ac.name + "' command\r\n"
		if args[len(args)-1] == "nosuchsub" { // as Redis: a subcommand no one has is answered before any ACL check
			want = "-ERR unknown subcommand 'nosuchsub'. Try " + strings.ToUpper(name) + " HELP.\r\n"
		}
		if name == "exec" {
			want = "-EXECABORT Transaction discarded because of: " + want[1:]
		}
		if r := c.reply(); r != want {
			t.Errorf("%s: %q, want %q", strings.Join(args, " "), r, want)
		}
		checked++
	}
	if checked < 200 {
		t.Fatalf("only %d commands checked", checked)
	}
	c.send(inlineToRESP("HELLO 2"))
	if r := c.reply(); !strings.HasPrefix(r, "*14\r\n") {
		t.Fatalf("HELLO: %q", r)
	}
	c.send(inlineToRESP("RESET"))
	if r := c.reply(); r != "+RESET\r\n" {
		t.Fatalf("RESET: %q", r)
	}
}

// connectAsNewUser starts a server, makes user (on, nopass) with rules, and returns a connection authenticated as
// it.
func connectAsNewUser(t *testing.T, user, rules string) *rawConn {
	ts := startServer(t, Options{}, 0)
	admin, c := ts.raw(t), ts.raw(t)
	for _, step := range []struct {
		rc  *rawConn
		cmd string
	}{{admin, "ACL SETUSER " + user + " on nopass " + rules}, {c, "AUTH " + user + " x"}} {
		step.rc.send(inlineToRESP(step.cmd))
		if r := step.rc.reply(); r != "+OK\r\n" {
			t.Fatalf("%s: %q", step.cmd, r)
		}
	}
	return c
}

// aclKeyExamples are calls for the commands whose keys a run of "1"s does not reach.
var aclKeyExamples = map[string]string{
	"xread": "XREAD STREAMS k 0", "xreadgroup": "XREADGROUP GROUP g c STREAMS k >", "migrate": "MIGRATE h 1 k 0 1",
	"sort": "SORT k STORE d", "georadius": "GEORADIUS k 0 0 1 m STORE d", "georadiusbymember": "GEORADIUSBYMEMBER k m 1 m STORE d",
	"object": "OBJECT ENCODING k", "memory": "MEMORY USAGE k", "xinfo": "XINFO STREAM k", "xgroup": "XGROUP CREATE k g $",
	"bitfield": "BITFIELD k GET u8 0", "bitfield_ro": "BITFIELD_RO k GET u8 0", "lmpop": "LMPOP 1 k LEFT",
	"blmpop": "BLMPOP 0 1 k LEFT", "zmpop": "ZMPOP 1 k MIN", "bzmpop": "BZMPOP 0 1 k MIN", "sintercard": "SINTERCARD 1 k",
	"zintercard": "ZINTERCARD 1 k", "georadius_ro": "GEORADIUS_RO k 0 0 1 m", "georadiusbymember_ro": "GEORADIUSBYMEMBER_RO k m 1 m",
}

// TestACLEveryKeyCommandRefused: a user with every command but no key is refused, with the key NOPERM, every
// command and subcommand that names a key (by anykv's key finder or Redis's key specs).
func TestACLEveryKeyCommandRefused(t *testing.T) {
	c := connectAsNewUser(t, "nokeys", "+@all resetkeys allchannels")
	tab := aclTable()
	checked := 0
	for _, ac := range tab.cmds {
		name, sub, _ := strings.Cut(ac.name, "|")
		cmd := commands[name]
		if cmd == nil { // not served (redisUnserved): it never runs
			continue
		}
		line, ok := aclKeyExamples[name]
		if !ok || sub != "" && !strings.Contains(strings.ToLower(line), " "+sub+" ") {
			args := []string{name}
			target := max(cmd.arity, -cmd.arity)
			if sub != "" {
				args = append(args, sub)
				target = 5
				if ac.arity > 0 { // exactly, or the call answers Redis's arity error before any ACL check
					target = ac.arity
				}
			}
			for len(args) < target {
				args = append(args, "1")
			}
			line = strings.Join(args, " ")
		}
		words, _ := splitArgs(line)
		args := make([][]byte, len(words))
		for i, w := range words {
			args[i] = []byte(w)
		}
		hasKeys := len(ac.specs) > 0 && !cmd.notKeys
		if !cmd.notKeys && len(keyPositions(cmd, args)) > 0 {
			hasKeys = true
		}
		if !hasKeys || cmd.flags&flagNoAuth != 0 {
			continue
		}
		if len(aclKeys(cmd, aclID(cmd, args), args)) == 0 {
			if cmd.flags&flagNoMandatoryKeys == 0 {
				t.Errorf("%s: no key found in %q: add an example", ac.name, line)
			}
			continue
		}
		c.send(inlineToRESP(line))
		if r := c.reply(); r != "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n" {
			t.Errorf("%s: %q", line, r)
		}
		checked++
	}
	if checked < 150 {
		t.Fatalf("only %d commands checked", checked)
	}
}

// TestACLSaveAndLoad: ACL SAVE writes the users to the ACL file (hashes, never passwords), ACL LOAD refuses a file
// with a bad line naming it and changes nothing, and reads a good one. The restart of the binary is
// cmd/anykv's TestACLFileSurvivesRestart.
func TestACLSaveAndLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	os.WriteFile(file, []byte("user default on nopass ~* &* +@all\n"), 0o600)
	ts := startServer(t, Options{ACLFile: file}, 0)
	c := ts.raw(t)
	for _, cmd := range []string{"ACL SETUSER app on >s3cret ~app:* +@read +@write -flushall", "ACL SAVE"} {
		c.send(inlineToRESP(cmd))
		if r := c.reply(); r != "+OK\r\n" {
			t.Fatalf("%s: %q", cmd, r)
		}
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "user app on #") || strings.Contains(string(b), "s3cret") {
		t.Fatalf("the file: %s", b)
	}
	os.WriteFile(file, append(b, []byte("user bad +nosuch\n")...), 0o600)
	c.send(inlineToRESP("ACL LOAD"))
	if r := c.reply(); !strings.Contains(r, "users.acl:3: '+nosuch': Unknown command or category name in ACL") {
		t.Fatalf("ACL LOAD of a bad file: %q", r)
	}
	// A closing quote must end its word, as in Redis's sdssplitargs: the line is refused, where it was read as
	// two rules, a pattern and +@all.
	os.WriteFile(file, append(b, []byte("user mallory on nopass \"~app:*\"+@all\n")...), 0o600)
	c.send(inlineToRESP("ACL LOAD"))
	if r := c.reply(); !strings.Contains(r, "users.acl:3: unbalanced quotes in acl line.") {
		t.Fatalf("ACL LOAD of a line whose quote does not end its word: %q", r)
	}
	os.WriteFile(file, b, 0o600)
	c.send(inlineToRESP("ACL LOAD"))
	if r := c.reply(); r != "+OK\r\n" {
		t.Fatalf("ACL LOAD: %q", r)
	}
}

// TestACLPatternsWithSpacesRefused: a key pattern, channel pattern or first argument holding white space or a
// zero byte is a syntax error (Redis's ACLStringHasSpaces for patterns; anykv also for first arguments, which
// redis-server 7.0 lets through), as ACL SAVE writes rules space-separated on one line: a newline in one of them
// wrote a line of its own into the ACL file, "user root on nopass +@all ~* &*", a user with every permission and
// no password after ACL LOAD or a restart.
func TestACLPatternsWithSpacesRefused(t *testing.T) {
	file, send := aclFileServer(t)
	const inj = "\nuser root on nopass +@all ~* &*"
	for _, rule := range []string{"~x" + inj, "%R~x" + inj, "&x" + inj, "+select|x" + inj, "+client|x" + inj,
		"(~x" + inj + ")", "~a b", "~a\tb", "&a\rb", "~a\x00b", "+select|a\x0bb", "&a\fb"} {
		if r := send("ACL", "SETUSER", "tenant", rule); !strings.HasPrefix(r, "-ERR Error in ACL SETUSER modifier") {
			t.Errorf("ACL SETUSER tenant %q: %q", rule, r)
		}
	}
	if r := send("ACL", "SAVE"); r != "+OK\r\n" {
		t.Fatalf("ACL SAVE: %q", r)
	}
	if r := send("ACL", "LOAD"); r != "+OK\r\n" {
		t.Fatalf("ACL LOAD: %q", r)
	}
	if r := send("ACL", "USERS"); strings.Contains(r, "root") {
		b, _ := os.ReadFile(file)
		t.Fatalf("ACL USERS after SAVE and LOAD: %q; the file:\n%s", r, b)
	}
	if r := send("AUTH", "root", "x"); r != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("AUTH root: %q", r)
	}
}

// TestMigrateAuthRedacted: MIGRATE's AUTH password and AUTH2 user and password are hidden from MONITOR and the
// slow log, as Redis's migrateCommand redacts them: a user with +monitor or +slowlog read another's password.
func TestMigrateAuthRedacted(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`MIGRATE h 1 k 0 10 AUTH pw1`, `"MIGRATE" "h" "1" "k" "0" "10" "AUTH" "(redacted)"`},
		{`MIGRATE h 1 '' 0 10 COPY REPLACE AUTH2 u pw2 KEYS a b`, `"MIGRATE" "h" "1" "" "0" "10" "COPY" "REPLACE" "AUTH2" "(redacted)" "(redacted)" "KEYS" "a" "b"`},
		{`MIGRATE h 1 '' 0 10 KEYS auth pw`, `"MIGRATE" "h" "1" "" "0" "10" "KEYS" "auth" "pw"`},
	} {
		words, _ := splitArgs(c.line)
		args := make([][]byte, len(words))
		for i, w := range words {
			args[i] = []byte(w)
		}
		got := string(monitorLine(time.Unix(0, 0), 0, "a", "migrate", args))
		if !strings.HasSuffix(got, "] "+c.want+"\r\n") {
			t.Errorf("%s: %q", c.line, got)
		}
	}
}

// TestACLSaveRoundTrips: what ACL SAVE writes, ACL LOAD reads back as the same users. A user name beginning with
// a quote was read as a quoted word ("ops" became the user ops; "x never closed and the file no longer loaded, nor
// the server started), and a selector's pattern or first argument ending in ")" closed the selector early, the
// rules after it given to the root selector: (~a) +@all +select|a)) gave the user every command.
func TestACLSaveRoundTrips(t *testing.T) {
	file, send := aclFileServer(t)
	for _, u := range [][]string{{`"ops"`, "on", ">pw", "~t:*", "+get"}, {`"x`, "on", "~a\"b"}, {`'q'`, "on"},
		{`a"b`, "on", `%R~"c\d`}, {"sel", "on", ">pw", "~t:*", "(~a) +@all +select|a))", `(~"b" &c" +get)`}} {
		if r := send(append([]string{"ACL", "SETUSER"}, u...)...); r != "+OK\r\n" {
			t.Fatalf("ACL SETUSER %q: %q", u, r)
		}
	}
	before := send("ACL", "LIST")
	for _, cmd := range []string{"SAVE", "LOAD"} {
		if r := send("ACL", cmd); r != "+OK\r\n" {
			b, _ := os.ReadFile(file)
			t.Fatalf("ACL %s: %q; the file:\n%s", cmd, r, b)
		}
	}
	if after := send("ACL", "LIST"); after != before {
		b, _ := os.ReadFile(file)
		t.Fatalf("ACL LIST before SAVE:\n%q\nafter LOAD:\n%q\nthe file:\n%s", before, after, b)
	}
}

// TestACLDeletedUserAllowsNothing: a user ACL DELUSER removed allows nothing any more, so a connection that
// becomes it after the deletion closed its connections (an AUTH that looked the user up just before, and set
// it just after) runs no command with the rules it had.
func TestACLDeletedUserAllowsNothing(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.raw(t)
	for _, cmd := range []string{"ACL SETUSER gone on nopass +@all ~* &*", "ACL SETUSER gone2 on nopass +@all ~* &*"} {
		c.send(inlineToRESP(cmd))
		if r := c.reply(); r != "+OK\r\n" {
			t.Fatalf("%s: %q", cmd, r)
		}
	}
	ts.h.acl.mu.Lock()
	u, u2 := ts.h.acl.users["gone"], ts.h.acl.users["gone2"]
	ts.h.acl.mu.Unlock()
	c.send(inlineToRESP("ACL DELUSER gone gone2"))
	if r := c.reply(); r != ":2\r\n" {
		t.Fatalf("ACL DELUSER: %q", r)
	}
	for _, u := range []*aclUser{u, u2} {
		r := u.get()
		if res, _ := r.check(commands["get"], [][]byte{[]byte("get"), []byte("k")}); r.enabled || r.full || res == aclOK {
			t.Fatalf("%s after DELUSER: enabled %v, full %v, GET k %d", u.name, r.enabled, r.full, res)
		}
	}
}

// TestACLRulesNameUnservedCommands: rules may name Redis commands anykv does not serve (an ACL file written for
// Redis says "-cluster" or "+cluster|info"), as Redis takes them; ACL LIST shows them, and they still do not run.
func TestACLRulesNameUnservedCommands(t *testing.T) {
	rc := startServer(t, Options{}, 0).raw(t)
	rc.expect("+OK\r\n", "ACL", "SETUSER", "app", "on", "nopass", "+@all", "-cluster", "-swapdb", "+cluster|info", "~*")
	rc.send(respCmd("ACL", "LIST"))
	if got := rc.reply(); !strings.Contains(got, "user app on nopass ~* resetchannels +@all -cluster -swapdb +cluster|info") {
		t.Fatalf("ACL LIST: %q", got)
	}
	rc.expect("-ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL\r\n", "ACL", "SETUSER", "app", "+nosuch")
	rc.send(respCmd("CLUSTER", "INFO"))
	if got := rc.reply(); !strings.HasPrefix(got, "-ERR unknown command 'CLUSTER'") {
		t.Fatalf("CLUSTER INFO: %q", got)
	}
}

// aclFileServer starts a server whose users live in an ACL file (the default user with every permission) and
// returns the file and a function that sends one command and returns its reply.
func aclFileServer(t *testing.T) (string, func(args ...string) string) {
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Options{ACLFile: file}, 0).raw(t)
	return file, func(args ...string) string {
		c.send(respCmd(args...))
		return c.reply()
	}
}

// TestACLScriptTimeWithArgumentsRefused: a script's redis.call('time', ...) with arguments is the wrong number of
// arguments, as in Redis, and never runs TIME for a user whose rules refuse it (it ran TIME for anyone, the ACL
// check being skipped for a call of the wrong arity).
func TestACLScriptTimeWithArgumentsRefused(t *testing.T) {
	rc := startServer(t, Options{}, 0).raw(t)
	rc.expect("+OK\r\n", "ACL", "SETUSER", "nt", "on", "nopass", "+@all", "-time", "~*")
	rc.expect("+OK\r\n", "AUTH", "nt", "x")
	for _, call := range []string{"redis.call('time', 'x')", "redis.pcall('time', 'x')"} {
		rc.send(respCmd("EVAL", "return "+call, "0"))
		if got := rc.reply(); !strings.HasPrefix(got, "-ERR Wrong number of args calling Redis command from script") {
			t.Fatalf("EVAL %s: %q", call, got)
		}
	}
	rc.send(respCmd("EVAL", "return redis.call('time')", "0"))
	if got := rc.reply(); !strings.HasPrefix(got, "-ERR The user executing the script can't run this command or subcommand") {
		t.Fatalf("EVAL redis.call('time'): %q", got)
	}
}
