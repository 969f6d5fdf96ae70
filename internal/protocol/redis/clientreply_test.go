package redis

import (
	"strings"
	"testing"
	"time"
)

// clientReplySteps exercise CLIENT REPLY OFF, SKIP and ON: commands of every kind (data, immediate, queued,
// refused, EXEC, scripts, a blocking pop that times out) answer nothing while silenced, SUBSCRIBE's confirmations
// (pushes) still come, RESET turns replies on again.
var clientReplySteps = [][]string{
	{"CLIENT", "REPLY", "OFF"}, {"SET", "a", "1"}, {"GET", "a"}, {"NOSUCH"}, {"GET"}, {"PING"}, {"INCR", "a"},
	{"MULTI"}, {"INCR", "a"}, {"EXEC"}, {"EVAL", "return redis.call('incr', 'a')", "0"}, {"BLPOP", "nolist", "0.01"},
	{"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "BAD"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
	{"CLIENT", "REPLY", "SKIP"}, {"GET", "a"}, {"ECHO", "after skip"},
	{"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "SKIP"}, {"ECHO", "x"}, {"ECHO", "two skips, one skipped"},
	{"CLIENT", "REPLY", "BAD"}, {"CLIENT", "REPLY"},
	{"CLIENT", "REPLY", "OFF"}, {"RESET"}, {"ECHO", "after reset"},
	{"CLIENT", "REPLY", "OFF"}, {"SUBSCRIBE", "ch"}, {"UNSUBSCRIBE", "ch"}, {"CLIENT", "REPLY", "ON"}, {"PING"},
}

// TestClientReplyMatchesRedis sends clientReplySteps as one pipeline to anykv and redis-server, in RESP2 and
// RESP3, and compares everything each answered, byte for byte.
func TestClientReplyMatchesRedis(t *testing.T) {
	ours, theirs := startServer(t, Options{}, 0).addr, startRedisServer(t)
	for _, proto := range []string{"2", "3"} {
		got, want := clientReplyTranscript(t, ours, proto), clientReplyTranscript(t, theirs, proto)
		if got != want {
			t.Errorf("RESP%s: anykv answered\n%q\nredis-server\n%q", proto, got, want)
		}
		if !strings.Contains(got, "after skip") || strings.Contains(got, "$1\r\nx\r\n") {
			t.Errorf("RESP%s: the transcript shows no skipping: %q", proto, got)
		}
	}
}

func clientReplyTranscript(t *testing.T, addr, proto string) string {
	c := dialRaw(t, addr)
	c.send(respCmd("HELLO", proto))
	c.reply()
	var b strings.Builder
	for _, step := range clientReplySteps {
		b.WriteString(respCmd(step...))
	}
	c.send(b.String())
	c.send(respCmd("ECHO", "end"))
	var out strings.Builder
	for !strings.HasSuffix(out.String(), "$3\r\nend\r\n") {
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		r := c.reply()
		out.WriteString(r)
	}
	return out.String()
}
