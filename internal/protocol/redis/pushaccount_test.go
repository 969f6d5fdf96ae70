package redis

import (
	"strings"
	"testing"
	"time"
)

// TestConfirmationLeavesAfterItsCommandIsLogged: a PSUBSCRIBE's confirmation and MONITOR's +OK reach the client
// only once the command is in the slow log and its line went to the monitors, as Redis logs a command before it
// writes the reply. They were written by the pusher as soon as the command released it, and accounted after: a
// client that read the confirmation and ran SLOWLOG RESET could find the PSUBSCRIBE logged after the reset, and
// a MONITOR begun after the confirmation could see the PSUBSCRIBE (TestPipelinedCommandsKeepTheirArgs failed so
// in CI under load). A hook delays the accounting by 300 ms to open that window.
func TestConfirmationLeavesAfterItsCommandIsLogged(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := dialRaw(t, ts.addr)
	admin.expect("+OK\r\n", "CONFIG", "SET", "slowlog-log-slower-than", "0")
	hook := func(name string) {
		if name == "psubscribe" || name == "monitor" {
			time.Sleep(300 * time.Millisecond)
		}
	}
	testHookAccounting.Store(&hook)
	defer testHookAccounting.Store(nil)
	for _, cmd := range [][]string{{"PSUBSCRIBE", "news.*"}, {"MONITOR"}} {
		admin.expect("+OK\r\n", "SLOWLOG", "RESET")
		c := dialRaw(t, ts.addr)
		c.send(respCmd(cmd...))
		c.reply() // the confirmation
		admin.send(respCmd("SLOWLOG", "GET", "10"))
		if got := admin.reply(); !strings.Contains(strings.ToUpper(got), "\r\n"+cmd[0]+"\r\n") {
			t.Errorf("%s confirmed before it was in the slow log: %q", cmd[0], got)
		}
	}
	// A monitor begun after a confirmation does not see the command confirmed.
	mon := dialRaw(t, ts.addr)
	sub := dialRaw(t, ts.addr)
	sub.send(respCmd("PSUBSCRIBE", "sport.*"))
	sub.reply()
	mon.expect("+OK\r\n", "MONITOR")
	time.Sleep(400 * time.Millisecond) // past the PSUBSCRIBE's delayed accounting, had its confirmation gone before
	admin.expect("+PONG\r\n", "PING")
	if line := mon.reply(); !strings.Contains(line, `"PING"`) {
		t.Errorf("a monitor begun after the PSUBSCRIBE's confirmation saw %q before the PING after it", line)
	}
}
