package redis

import (
	"strings"
	"testing"
)

// txPopWatchTranscript: a pop queued in MULTI changes only the key it popped from. A WATCH of another key it
// names (a later key of LMPOP or BLPOP, passed over because an earlier one had something) must not abort the
// watcher's transaction, as in Redis: the txpop call counted every key it names as written.
func txPopWatchTranscript(t *testing.T, addr string) []string {
	var steps []transcriptStep
	add := func(conn string, cmds ...string) {
		for _, c := range cmds {
			steps = append(steps, transcriptStep{conn, c, 1})
		}
	}
	add("pub", "FLUSHALL", "RPUSH l a b c", "SET s v")
	add("sub", "WATCH l2")
	add("pub", "MULTI", "LMPOP 2 l l2 LEFT", "EXEC")
	add("sub", "MULTI", "PING", "EXEC")
	add("sub", "WATCH s")
	add("pub", "MULTI", "BLPOP l s 0", "EXEC")
	add("sub", "MULTI", "PING", "EXEC")
	return pubsubTranscript(t, addr, steps)
}

// TestTxPopWatchesOnlyWhatItPopped: anykv aborted both watchers' EXECs (null array; redis-server: PONG).
func TestTxPopWatchesOnlyWhatItPopped(t *testing.T) {
	sameAsRedis(t, txPopWatchTranscript)
}

// TestTxPopAfterQueuedHello: a HELLO queued in MULTI before a pop changes the protocol of the replies after it
// (redis-server answers BLPOP's miss *-1 and BZPOPMIN's score as a bulk string after HELLO 2). The queued pop's
// reply was rendered with the protocol of the connection when EXEC compiled it, so a RESP3 connection that
// switched to RESP2 got RESP3 frames (`_`, `,1`) its RESP2 parser cannot read, and the reverse.
func TestTxPopAfterQueuedHello(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := dialRaw(t, ts.addr)
	rc.do("HELLO", "3")
	rc.do("ZADD", "z", "1", "a")
	for _, c := range [][]string{{"MULTI"}, {"HELLO", "2"}, {"BLPOP", "nol", "0"}, {"BZPOPMIN", "z", "0"},
		{"LMPOP", "1", "nol", "LEFT"}} {
		rc.do(c...)
	}
	got := rc.do("EXEC")
	if want := "*-1\r\n*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n*-1\r\n"; !strings.HasSuffix(got, want) {
		t.Errorf("EXEC after a queued HELLO 2 ends %q, want RESP2 replies %q", got[strings.Index(got, "modules"):], want)
	}
	rc.do("ZADD", "z", "1", "a")
	for _, c := range [][]string{{"MULTI"}, {"HELLO", "3"}, {"BLPOP", "nol", "0"}, {"BZPOPMIN", "z", "0"}} {
		rc.do(c...)
	}
	got = rc.do("EXEC")
	if want := "_\r\n*3\r\n$1\r\nz\r\n$1\r\na\r\n,1\r\n"; !strings.HasSuffix(got, want) {
		t.Errorf("EXEC after a queued HELLO 3 ends %q, want RESP3 replies %q", got[strings.Index(got, "modules"):], want)
	}
}

// TestTxMoveBadTimeoutCounts: a BLMOVE or BRPOPLPUSH queued in MULTI whose timeout is bad is a failed call of it
// in INFO commandstats, as in Redis (txMove planned its error with no command, so it was not counted at all).
func TestTxMoveBadTimeoutCounts(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := dialRaw(t, ts.addr)
	for _, c := range [][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, {"BLMOVE", "a", "b", "LEFT", "LEFT", "-1"},
		{"BRPOPLPUSH", "a", "b", "x"}, {"EXEC"}} {
		rc.do(c...)
	}
	info := rc.do("INFO", "commandstats")
	for _, name := range []string{"blmove", "brpoplpush"} {
		line := ""
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "cmdstat_"+name+":") {
				line = l
			}
		}
		if !strings.Contains(line, ":calls=1,") || !strings.HasSuffix(line, ",failed_calls=1") {
			t.Errorf("cmdstat_%s is %q, want one failed call:\n%s", name, line, info)
		}
	}
}
