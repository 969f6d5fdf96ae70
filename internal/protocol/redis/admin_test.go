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
