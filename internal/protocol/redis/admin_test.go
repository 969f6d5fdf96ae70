package redis

import (
	"strings"
	"testing"
)

// TestOperatorCommands: WAIT answers 0 replicas, LATENCY answers as Redis with its monitor off, CLIENT KILL closes
// the connections it names and counts them, SHUTDOWN calls the server's shutdown and closes the connection.
func TestOperatorCommands(t *testing.T) {
	stopped := make(chan struct{})
	ts := startServer(t, Options{Shutdown: func() { close(stopped) }}, 0)
	rc := ts.raw(t)
	for cmd, want := range map[string]string{
		"WAIT 1 100\r\n":          ":0\r\n",
		"WAIT 1 -1\r\n":           "-ERR timeout is negative\r\n",
		"WAIT x 0\r\n":            "-ERR value is not an integer or out of range\r\n",
		"LATENCY LATEST\r\n":      "*0\r\n",
		"LATENCY HISTORY cmd\r\n": "*0\r\n",
		"LATENCY RESET\r\n":       ":0\r\n",
		"LATENCY FOO\r\n":         "-ERR unknown subcommand 'FOO'. Try LATENCY HELP.\r\n",
		"SHUTDOWN ABORT\r\n":      "-ERR No shutdown in progress.\r\n",
		"SHUTDOWN LATER\r\n":      "-ERR syntax error\r\n",
	} {
		rc.send(cmd)
		if got := rc.reply(); got != want {
			t.Errorf("%q: %q, want %q", cmd, got, want)
		}
	}
	rc.send("LATENCY DOCTOR\r\n")
	if got := rc.reply(); !strings.Contains(got, "Latency monitoring is disabled in this Redis instance") {
		t.Errorf("LATENCY DOCTOR: %q", got)
	}

	victim := ts.raw(t)
	victim.send("CLIENT ID\r\n")
	id := strings.TrimSuffix(strings.TrimPrefix(victim.reply(), ":"), "\r\n")
	rc.send("CLIENT KILL ID " + id + "\r\n")
	if got := rc.reply(); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID %s: %q", id, got)
	}
	if !victim.closed() {
		t.Fatal("the killed connection is still open")
	}
	rc.send("CLIENT KILL 127.0.0.1:1\r\n")
	if got := rc.reply(); got != "-ERR No such client\r\n" {
		t.Errorf("CLIENT KILL of an unknown address: %q", got)
	}
	rc.send("CLIENT KILL ID 999999 SKIPME no\r\n")
	if got := rc.reply(); got != ":0\r\n" {
		t.Errorf("CLIENT KILL of an unknown id: %q", got)
	}

	rc.send("SHUTDOWN NOSAVE\r\n")
	<-stopped
	if !rc.closed() {
		t.Fatal("SHUTDOWN left the connection open")
	}
}

// TestSubcommandErrorsMatchRedis: a container's unknown subcommand and a served subcommand's wrong number of
// arguments answer Redis 7's texts byte for byte (they answered Redis 6's catch-all: a compatibility check).
func TestSubcommandErrorsMatchRedis(t *testing.T) {
	cmds := []string{"CLIENT FOO", "CLIENT GETNAME x", "CLIENT SETNAME", "CLIENT ID x", "CONFIG FOO", "CONFIG GET",
		"CONFIG RESETSTAT x", "CONFIG SET a", "PUBSUB FOO", "PUBSUB NUMPAT x", "SCRIPT FOO", "SCRIPT FLUSH a b",
		"SCRIPT FLUSH x", "SCRIPT FLUSH ASYNC", "COMMAND COUNT x", "SLOWLOG LEN x", "SLOWLOG FOO", "SLOWLOG GET 1 2"}
	run := func(addr string) []string {
		rc := dialRaw(t, addr)
		var out []string
		for _, c := range cmds {
			rc.send(c + "\r\n")
			out = append(out, c+" -> "+rc.reply())
		}
		return out
	}
	want := run(startRedisServer(t))
	got := run(startServer(t, Options{}, 0).addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%q\nredis-server: %q", got[i], want[i])
		}
	}
}

// TestWaitAOF: Redis 7.2's WAITAOF (go-redis's own suite calls it; anykv reports 7.2.4) answers at once, a local
// fsync when every acknowledged write is on disk (appendfsync always) and no replica, after Redis's checks of its
// arguments in Redis's order; numlocal 1 without an append-only file is Redis's error.
func TestWaitAOF(t *testing.T) {
	const noAOF = "-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"
	for _, tc := range []struct {
		settings map[string]string
		cmds     map[string]string
	}{
		{map[string]string{"appendonly": "yes", "appendfsync": "always"}, map[string]string{
			"WAITAOF 1 0 0": "*2\r\n:1\r\n:0\r\n", "WAITAOF 0 1 100": "*2\r\n:1\r\n:0\r\n", "WAITAOF 0 0 0": "*2\r\n:1\r\n:0\r\n",
		}},
		{map[string]string{"appendonly": "yes", "appendfsync": "everysec"}, map[string]string{
			"WAITAOF 1 0 10": "*2\r\n:0\r\n:0\r\n",
		}},
		{nil, map[string]string{ // no append-only file (an engine other than pebble)
			"WAITAOF 1 0 0": noAOF, "WAITAOF 0 0 0": "*2\r\n:0\r\n:0\r\n",
			"WAITAOF x 0 0":   "-ERR value is not an integer or out of range\r\n",
			"WAITAOF 2 0 0":   "-ERR value is out of range, value must between 0 and 1\r\n",
			"WAITAOF -1 0 0":  "-ERR value is out of range, value must between 0 and 1\r\n",
			"WAITAOF 1 x 0":   "-ERR value is out of range, must be positive\r\n",
			"WAITAOF 0 -1 0":  "-ERR value is out of range, must be positive\r\n",
			"WAITAOF 1 0 x":   "-ERR timeout is not an integer or out of range\r\n",
			"WAITAOF 1 0 -5":  "-ERR timeout is negative\r\n",
			"WAITAOF 0 0":     "-ERR wrong number of arguments for 'waitaof' command\r\n",
			"WAIT 0 x":        "-ERR timeout is not an integer or out of range\r\n",
			"WAIT 0 1.5":      "-ERR timeout is not an integer or out of range\r\n",
			"WAITAOF 0 0 1.5": "-ERR timeout is not an integer or out of range\r\n",
		}},
	} {
		ts := startServer(t, Options{Settings: tc.settings}, 0)
		rc := ts.raw(t)
		for cmd, want := range tc.cmds {
			rc.send(cmd + "\r\n")
			if got := rc.reply(); got != want {
				t.Errorf("%v: %q: %q, want %q", tc.settings, cmd, got, want)
			}
		}
	}
}
