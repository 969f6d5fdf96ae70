package redis

import (
	"regexp"
	"strconv"
	"testing"
)

// TestLatencyMonitor: with latency-monitor-threshold set, a command that took that long is an event "command" in
// LATENCY LATEST and HISTORY (one sample a second, the worst, as Redis; the time BLPOP waited blocked is left out),
// DOCTOR names its spikes in Redis's words, RESET forgets it (go-redis's own suite: LATENCY answered as with the
// monitor off, always empty).
func TestLatencyMonitor(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	at := strconv.FormatInt(ts.store.Time().Unix(), 10)
	for _, step := range []struct{ cmd, want string }{
		{"CONFIG SET latency-monitor-threshold 15", `^\+OK`},
		{"DEBUG SLEEP 0.02", `^\+OK`},
		{"DEBUG SLEEP 0", `^\+OK`}, // quicker than the threshold: no sample
		{"BLPOP k 0.1", `^\*-1`},   // waited blocked, otherwise quick: no sample
		{"LATENCY LATEST", `^\*1\r\n\*4\r\n\$7\r\ncommand\r\n:` + at + `\r\n:(1[5-9]|[2-9]\d)\r\n:(1[5-9]|[2-9]\d)\r\n`},
		{"LATENCY HISTORY command", `^\*1\r\n\*2\r\n:` + at + `\r\n:(1[5-9]|[2-9]\d)\r\n`},
		{"LATENCY HISTORY fast-command", `^\*0\r\n`},
		{"LATENCY DOCTOR", `1\. command: 1 latency spikes \(average \d+ms, mean deviation 0ms, period 1\.00 sec\)\. Worst all time event \d+ms\.`},
		{"LATENCY GRAPH command", `command - high \d+ ms, low \d+ ms \(all time high \d+ ms\)`},
		{"LATENCY RESET nosuch", `^:0`},
		{"LATENCY RESET command nosuch", `^:1`},
		{"LATENCY LATEST", `^\*0\r\n`},
		{"LATENCY DOCTOR", `Dave, no latency spike was observed`},
		{"CONFIG SET latency-monitor-threshold 0", `^\+OK`},
		{"DEBUG SLEEP 0.02", `^\+OK`},
		{"LATENCY LATEST", `^\*0\r\n`},
		{"LATENCY DOCTOR", `Latency monitoring is disabled`},
	} {
		rc.send(step.cmd + "\r\n")
		if got := rc.reply(); !regexp.MustCompile(step.want).MatchString(got) {
			t.Errorf("%s: %q, want %s", step.cmd, got, step.want)
		}
	}
}
