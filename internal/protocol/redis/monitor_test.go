package redis

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// monitorScript is what one client sends while another monitors: one command per entry, as RESP, each answered
// before the next is sent.
var monitorScript = [][]string{
	{"SET", "k\"\\\n\r\t\a\b\x01\xff \xc3\xa9", "v"},
	{"AUTH", "pw"},
	{"AUTH", "u", "pw"},
	{"GET", "k"},
	{"MULTI"}, {"SET", "a", "b"}, {"EXEC"},
	{"CONFIG", "GET", "maxclients"}, // administrative: not shown
	{"CLIENT", "LIST"},              // also administrative
	{"CLIENT", "ID"},
	{"NOSUCHCOMMAND", "x"}, // refused before running: not shown
	{"GET"},
	{"SELECT", "2"}, {"SET", "x", "1"}, {"SELECT", "0"},
	{"HELLO", "2", "AUTH", "default", "secret", "SETNAME", "x"},
	// A script's commands follow its own line, as run by "lua"; those refused before running are not shown.
	{"EVAL", "redis.call('set','s','1') redis.pcall('nosuch') redis.pcall('set','a') redis.call('ping') return redis.call('get',KEYS[1])", "1", "s"},
	{"MULTI"}, {"EVAL", "return redis.call('incr','x')", "0"}, {"EXEC"},
	{"FUNCTION", "LOAD", "#!lua name=mon\nredis.register_function('mf', function(keys) return redis.call('get', keys[1]) end)"},
	{"FCALL", "mf", "1", "s"},
	{"ECHO", "done"},
}

// monitorWant are the lines redis-server 7 shows for monitorScript, with the time and address replaced by A.
var monitorWant = []string{
	`[0 A] "SET" "k\"\\\n\r\t\a\b\x01\xff \xc3\xa9" "v"`,
	`[0 A] "AUTH" "(redacted)"`,
	`[0 A] "AUTH" "(redacted)" "(redacted)"`,
	`[0 A] "GET" "k"`,
	`[0 A] "MULTI"`, `[0 A] "SET" "a" "b"`, `[0 A] "EXEC"`,
	`[0 A] "CLIENT" "ID"`,
	`[2 A] "SELECT" "2"`, `[2 A] "SET" "x" "1"`, `[0 A] "SELECT" "0"`,
	`[0 A] "HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`,
	`[0 A] "EVAL" "redis.call('set','s','1') redis.pcall('nosuch') redis.pcall('set','a') redis.call('ping') return redis.call('get',KEYS[1])" "1" "s"`,
	`[0 lua] "set" "s" "1"`, `[0 lua] "ping"`, `[0 lua] "get" "s"`,
	`[0 A] "MULTI"`, `[0 A] "EVAL" "return redis.call('incr','x')" "0"`, `[0 lua] "incr" "x"`, `[0 A] "EXEC"`,
	`[0 A] "FUNCTION" "LOAD" "#!lua name=mon\nredis.register_function('mf', function(keys) return redis.call('get', keys[1]) end)"`,
	`[0 A] "FCALL" "mf" "1" "s"`, `[0 lua] "get" "s"`,
	`[0 A] "ECHO" "done"`,
}

var monitorPrefix = regexp.MustCompile(`(?m)^\+[0-9]+\.[0-9]{6} \[([0-9]+) ([^\]]+)\]`)

// runMonitorScript monitors addr while a second connection runs monitorScript, and returns the lines seen,
// normalized, checking that each names the second connection's address.
func runMonitorScript(t *testing.T, addr string) []string {
	t.Helper()
	mon := dialRaw(t, addr)
	mon.send(respCmd("MONITOR"))
	if r := mon.reply(); r != "+OK\r\n" {
		t.Fatalf("MONITOR: %q", r)
	}
	c := dialRaw(t, addr)
	for _, cmd := range monitorScript {
		c.send(respCmd(cmd...))
		c.reply()
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != `[0 A] "ECHO" "done"` {
		line := mon.reply()
		m := monitorPrefix.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("monitor line %q", line)
		}
		if m[2] != c.c.LocalAddr().String() && m[2] != "lua" {
			t.Errorf("line %q names %s, the client is %s", line, m[2], c.c.LocalAddr())
		}
		who := "A"
		if m[2] == "lua" {
			who = "lua"
		}
		got = append(got, "["+m[1]+" "+who+"]"+strings.TrimSuffix(line[len(m[0]):], "\r\n"))
	}
	return got
}

// TestMonitor: MONITOR shows every command that ran, quoted and redacted as Redis 7 does, and (compared with a
// real redis-server when one is installed) the same lines.
func TestMonitor(t *testing.T) { matchRedis(t, runMonitorScript, monitorWant) }

// monitorSelfWant is what a monitoring connection gets for its own commands: keyspace commands refused, others
// answered and then shown, RESET ending MONITOR mode.
const monitorSelfWant = "+OK\r\n" +
	"-ERR Replica can't interact with the keyspace\r\n" +
	"+PONG\r\n+T [0 A] \"PING\"\r\n" +
	"$1\r\nx\r\n+T [0 A] \"ECHO\" \"x\"\r\n" +
	"+RESET\r\n" +
	"$-1\r\n"

func monitorSelf(t *testing.T, addr string) string {
	mon := dialRaw(t, addr)
	var b strings.Builder
	for _, cmd := range [][]string{{"MONITOR"}, {"GET", "nokey"}, {"PING"}, {"ECHO", "x"}, {"RESET"}, {"GET", "nokey"}} {
		mon.send(respCmd(cmd...))
		r := mon.reply()
		if cmd[0] == "PING" || cmd[0] == "ECHO" {
			r += mon.reply()
		}
		b.WriteString(monitorPrefix.ReplaceAllString(r, "+T [$1 A]"))
	}
	return b.String()
}

// TestMonitorOwnCommands compares a monitoring connection's own exchanges with Redis 7's.
func TestMonitorOwnCommands(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	if got := monitorSelf(t, ts.addr); got != monitorSelfWant {
		t.Errorf("anykv:\n%q\nwant\n%q", got, monitorSelfWant)
	}
	if addr := startRedisServerIfAny(t); addr != "" {
		if got := monitorSelf(t, addr); got != monitorSelfWant {
			t.Errorf("redis-server:\n%q\nwant\n%q", got, monitorSelfWant)
		}
	}
}

// TestSlowMonitorIsDisconnected: a monitor that reads nothing does not slow the clients it shows; once it is
// pubsubLimit behind it is disconnected.
func TestSlowMonitorIsDisconnected(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	mon, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	mon.Write([]byte(respCmd("MONITOR")))
	r := bufio.NewReader(mon)
	if line, _ := r.ReadString('\n'); line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q", line)
	}
	c := ts.raw(t)
	big := strings.Repeat("\x01", 1000000) // 4 MB once quoted
	for i := 0; i*4000000 < 3*pubsubLimit; i++ {
		c.send(respCmd("SET", "k", big))
		if got := c.reply(); got != "+OK\r\n" {
			t.Fatalf("SET while a monitor lags: %q", got)
		}
	}
	mon.SetReadDeadline(time.Now().Add(30 * time.Second)) // an upper bound: the server closed it already
	n, err := io.Copy(io.Discard, r)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("the lagging monitor was not disconnected: read %d bytes, then %v", n, err)
	}
	if n >= 3*pubsubLimit {
		t.Fatalf("the lagging monitor received %d bytes: it was not cut off", n)
	}
}
