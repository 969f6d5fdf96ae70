package redis

import (
	"strings"
	"testing"
)

// TestContainerHelpMatchesRedis: CLIENT, CONFIG, SCRIPT, PUBSUB and COMMAND HELP answered "unknown subcommand
// 'HELP'" (the very error that tells a client to try HELP), and OBJECT HELP six bulk strings; redis-server 7.0
// answers each with its text as simple strings (checked against redis-server 7.0.15: CONFIG HELP byte for byte
// below, the others by line count; CLIENT HELP has Redis 7.2's lines for SETINFO and NO-TOUCH too), and a HELP
// with arguments with the container's arity error. Found in a Java client trial (Jedis's COMMAND INFO lists
// config|help and the rest).
func TestContainerHelpMatchesRedis(t *testing.T) {
	rc := startServer(t, Options{}, 0).raw(t)
	rc.expect("*11\r\n+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <pattern>\r\n"+
		"+    Return parameters matching the glob-like <pattern> and their values.\r\n+SET <directive> <value>\r\n"+
		"+    Set the configuration <directive> to <value>.\r\n+RESETSTAT\r\n+    Reset statistics reported by the INFO command.\r\n"+
		"+REWRITE\r\n+    Rewrite the configuration file.\r\n+HELP\r\n+    Prints this help.\r\n", "CONFIG", "HELP")
	for _, c := range []struct {
		container string
		lines     int // redis-server 7.0.15's (CLIENT: 48 and 7.2's six)
	}{{"OBJECT", 15}, {"CLIENT", 54}, {"CONFIG", 11}, {"SCRIPT", 17}, {"PUBSUB", 14}, {"COMMAND", 21}} {
		got := rc.do(c.container, "help")
		lines := strings.Split(strings.TrimSuffix(got, "\r\n"), "\r\n")
		if lines[0] != "*"+itoa(int64(c.lines)) || len(lines) != c.lines+1 {
			t.Errorf("%s HELP: %q, want %d lines", c.container, got, c.lines)
			continue
		}
		if want := "+" + c.container + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"; lines[1] != want {
			t.Errorf("%s HELP starts %q, want %q", c.container, lines[1], want)
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "+") {
				t.Errorf("%s HELP line %q is not a simple string", c.container, l)
			}
		}
		rc.expect("-ERR wrong number of arguments for '"+strings.ToLower(c.container)+"|help' command\r\n", c.container, "HELP", "x")
	}
	rc.expect("+PONG\r\n", "PING")
}
