package redis

import (
	"strings"
	"testing"
)

// TestMonitorSeesWhatRunsAfterItsOK: a command run once MONITOR answered +OK is shown; the +OK used to reach
// the client before the monitor was registered, and a command sent at once could run unseen (a CI failure).
func TestMonitorSeesWhatRunsAfterItsOK(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := dialRaw(t, ts.addr)
	for i := 0; i < 300; i++ {
		mon := dialRaw(t, ts.addr)
		mon.send(respCmd("MONITOR"))
		if r := mon.reply(); r != "+OK\r\n" {
			t.Fatalf("MONITOR: %q", r)
		}
		c.send(respCmd("ECHO", "seen"))
		c.reply()
		if line := mon.reply(); !strings.HasSuffix(line, `"ECHO" "seen"`+"\r\n") {
			t.Fatalf("round %d: the monitor's first line is %q", i, line)
		}
		mon.c.Close()
	}
}
