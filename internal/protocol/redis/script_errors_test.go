package redis

import (
	"fmt"
	"testing"
)

// TestScriptErrorsMatchRedis: a failed script's error names the line it failed on as Redis 7 does (", on
// @user_script:N."; it was missing), whichever way it failed: error() with and without a position, an error
// table, an error reply redis.call raised, a runtime error; the message itself is Lua's (interpreters word
// runtime errors differently, so none is compared here).
func TestScriptErrorsMatchRedis(t *testing.T) {
	scripts := []string{
		"local x = 1\nerror('boom')",
		"local function f()\n  return redis.call('INCR', 'nokey', 'x')\nend\nreturn f()",
		"\nerror({err='MYERR custom'})",
		"error('nopos', 0)",
		"return redis.call('nosuch')",
		"local function g() error('deep') end\nlocal function f()\n  g()\nend\nf()",
		"redis.call('SET', 'k', 'v')\n\n\nreturn redis.call('INCR', 'k')",
		"return redis.pcall('nosuch')",
		"local x = struct.pack('!3 b', 1) return x", // luaL_error's text, not a bad argument's (a review)
		"error()", "\nerror(nil)", "error(true)", "error(false)", // "ERR nil", not "ERR user_script: nil"
	}
	want := evalReplies(t, startRedisServer(t), scripts, "0")
	got := evalReplies(t, startServer(t, Options{}, 0).addr, scripts, "0")
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%q:\n%q\nredis-server: %q", scripts[i], got[i], want[i])
		}
	}
}

// evalReplies sends EVAL script args... for each script on one connection to addr and returns the raw replies.
func evalReplies(t *testing.T, addr string, scripts []string, args ...string) []string {
	rc := dialRaw(t, addr)
	defer rc.c.Close()
	var out []string
	for _, s := range scripts {
		cmd := fmt.Sprintf("*%d\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n", 2+len(args), len(s), s)
		for _, a := range args {
			cmd += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		rc.send(cmd)
		out = append(out, rc.reply())
	}
	return out
}
