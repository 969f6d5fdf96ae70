package redis

import (
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// respCmds encodes commands (fields split on spaces) as one RESP pipeline.
func respCmds(cmds ...string) string {
	var b strings.Builder
	for _, cmd := range cmds {
		b.WriteString(respCmd(strings.Fields(cmd)...))
	}
	return b.String()
}

// TestPipelinedGets: GETs pipelined with writes see exactly the writes sent before them, errors included, judge
// expiry by the store's clock, count in INFO commandstats by the time their replies arrive, and in a transaction
// run in EXEC's batch.
func TestPipelinedGets(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	rc := ts.raw(t)
	calls := func() (n, failed int) {
		v := infoField(t, c, "commandstats", "cmdstat_get")
		for _, f := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				n, _ = strconv.Atoi(val)
			case "failed_calls":
				failed, _ = strconv.Atoi(val)
			}
		}
		return n, failed
	}

	rc.send(respCmds("GET k", "SET k v1", "GET k", "GET k2", "LPUSH l x", "GET l", "DEL k", "GET k", "SET t v PX 100",
		"GET t"))
	want := []string{"$-1\r\n", "+OK\r\n", "$2\r\nv1\r\n", "$-1\r\n", ":1\r\n",
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ":1\r\n", "$-1\r\n", "+OK\r\n",
		"$1\r\nv\r\n"}
	for i, w := range want {
		if got := rc.reply(); got != w {
			t.Fatalf("reply %d: %q, want %q", i, got, w)
		}
	}
	if n, failed := calls(); n != 6 || failed != 1 {
		t.Fatalf("cmdstat_get calls=%d failed_calls=%d, want 6 and 1", n, failed)
	}

	rc.send(respCmds("GET t")) // alone: alive by the store's clock
	if got := rc.reply(); got != "$1\r\nv\r\n" {
		t.Fatalf("GET t before its expiry: %q", got)
	}
	ts.advance(200 * time.Millisecond) // past t's expiry, by the store's clock only
	rc.send(respCmds("GET t", "GET l"))
	for i, w := range []string{"$-1\r\n", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"} {
		if got := rc.reply(); got != w {
			t.Fatalf("after the expiry, reply %d: %q, want %q", i, got, w)
		}
	}

	// A long pipeline of GETs alone: every one counted once its replies are in.
	const n = 300
	cmds := make([]string, n)
	for i := range cmds {
		cmds[i] = "GET k" + strconv.Itoa(i%7)
	}
	rc.send(respCmds(cmds...))
	for i := 0; i < n; i++ {
		if got := rc.reply(); got != "$-1\r\n" {
			t.Fatalf("GET %d of the long pipeline: %q", i, got)
		}
	}
	if got, failed := calls(); got != 9+n || failed != 2 {
		t.Fatalf("cmdstat_get calls=%d failed_calls=%d after the long pipeline, want %d and 2", got, failed, 9+n)
	}

	// Inside a transaction a GET stays in EXEC's batch, before the SET queued after it.
	rc.send(respCmds("SET m old", "MULTI", "GET m", "SET m new", "EXEC", "GET m"))
	for i, w := range []string{"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n$3\r\nold\r\n+OK\r\n",
		"$3\r\nnew\r\n"} {
		if got := rc.reply(); got != w {
			t.Fatalf("transaction reply %d: %q, want %q", i, got, w)
		}
	}
}
