package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClientUnblockMatchesRedis: CLIENT UNBLOCK ends every kind of blocking command's wait as its timeout would
// (TIMEOUT, the default) or with the UNBLOCKED error (ERROR), in RESP2 and RESP3, answering 1; a connection not
// blocked answers 0, and bad arguments get redis-server's errors, byte for byte.
func TestClientUnblockMatchesRedis(t *testing.T) {
	ours := startServer(t, Options{}, 0).addr
	theirs := startRedisServer(t)
	setup := []string{"DEL l l2 z s", "XGROUP CREATE s2 g $ MKSTREAM"}
	blocking := []string{"BLPOP l 0", "BRPOP l l2 0", "BRPOPLPUSH l l2 0", "BLMOVE l l2 LEFT RIGHT 0", "BLMPOP 0 1 l LEFT",
		"BZPOPMIN z 0", "BZMPOP 0 1 z MIN", "XREAD BLOCK 0 STREAMS s $", "XREADGROUP GROUP g c BLOCK 0 STREAMS s2 >"}
	transcript := func(addr string) string {
		var out strings.Builder
		ctl := dialRaw(t, addr)
		for _, c := range setup {
			ctl.send(c + "\r\n")
			ctl.reply()
		}
		for _, proto := range []string{"2", "3"} {
			for _, cmd := range blocking {
				for _, mode := range []string{"", " TIMEOUT", " error"} {
					c := dialRaw(t, addr)
					c.send("HELLO " + proto + "\r\n")
					c.reply()
					c.send("CLIENT ID\r\n")
					id := strings.TrimSpace(strings.TrimPrefix(c.reply(), ":"))
					ctl.send("CLIENT UNBLOCK " + id + mode + "\r\n") // not blocked yet
					fmt.Fprintf(&out, "before %q: %q\n", cmd, ctl.reply())
					c.send(cmd + "\r\n")
					deadline := time.Now().Add(5 * time.Second)
					for {
						ctl.send("CLIENT UNBLOCK " + id + mode + "\r\n")
						if r := ctl.reply(); r == ":1\r\n" || time.Now().After(deadline) {
							fmt.Fprintf(&out, "unblock %q%s: %q\n", cmd, mode, r)
							break
						}
						time.Sleep(time.Millisecond)
					}
					fmt.Fprintf(&out, "RESP%s %q%s: %q\n", proto, cmd, mode, c.reply())
					c.send("PING\r\n") // the connection goes on
					fmt.Fprintf(&out, "then %q\n", c.reply())
				}
			}
		}
		for _, bad := range []string{"CLIENT UNBLOCK x", "CLIENT UNBLOCK 1 foo", "CLIENT UNBLOCK 99999", "CLIENT UNBLOCK -1",
			"CLIENT UNBLOCK 1 TIMEOUT x", "CLIENT UNBLOCK"} {
			ctl.send(bad + "\r\n")
			fmt.Fprintf(&out, "%s: %q\n", bad, ctl.reply())
		}
		return out.String()
	}
	got, want := transcript(ours), transcript(theirs)
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("line %d: anykv %s\nredis-server %s", i, gl[i], wl[i])
			}
		}
		t.Fatalf("transcripts differ (%d and %d lines)", len(gl), len(wl))
	}
	if !strings.Contains(got, "UNBLOCKED client unblocked via CLIENT UNBLOCK") || !strings.Contains(got, `unblock "BLPOP l 0": ":1\r\n"`) {
		t.Fatalf("the transcript shows no unblocking:\n%s", got)
	}
}

// A CLIENT UNBLOCK sent as soon as INFO counts a client in blocked_clients unblocks it (what Redis's suite does
// after wait_for_blocked_client): the client counted itself before it registered for CLIENT UNBLOCK, which in
// that window answered 0 and left a BLPOP with no timeout waiting for good (a CI run of unit/type/list hung).
func TestUnblockRightAfterCounted(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	blocked, other := ts.raw(t), ts.raw(t)
	blocked.send(respCmd("CLIENT", "ID"))
	id := strings.TrimSpace(strings.TrimPrefix(blocked.reply(), ":"))
	counted, proceed := make(chan struct{}), make(chan struct{})
	hook := func() {
		close(counted)
		<-proceed
	}
	testHookCounted.Store(&hook)
	defer testHookCounted.Store(nil)
	blocked.send(respCmd("BLPOP", "nolist", "0"))
	<-counted
	other.send(respCmd("CLIENT", "UNBLOCK", id))
	got := other.reply()
	close(proceed)
	if got != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK of a client counted as blocked: %q, want :1", got)
	}
	if r := blocked.reply(); r != "*-1\r\n" {
		t.Fatalf("the unblocked BLPOP answered %q", r)
	}
}
