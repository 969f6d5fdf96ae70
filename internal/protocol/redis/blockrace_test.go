package redis

import (
	"strings"
	"testing"
	"time"
)

// TestPushToAKilledBlockedClientKeepsTheElement: CLIENT KILL closes a blocked client's connection, and a push
// right after must stay in the list (Redis frees the client at once), not be popped for the killed client and
// lost (nor an XREADGROUP's entry go pending to it): the peek that passes over a departed client could not see a
// connection closed on the server's side, and the 200 ms tick noticed it only after the push (every round lost
// the element). As redis-server 7.0 (checked by hand).
func TestPushToAKilledBlockedClientKeepsTheElement(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	ctl := ts.raw(t)
	for round := 0; round < 5; round++ {
		for _, c := range []struct{ setup, block, push, count, want string }{
			{"", "BLPOP q 0", "RPUSH q job", "LLEN q", ":1\r\n"},
			{"", "BLMOVE q dst LEFT LEFT 0", "RPUSH q job", "LLEN q", ":1\r\n"},
			{"", "BZPOPMIN z 0", "ZADD z 1 job", "ZCARD z", ":1\r\n"},
			{"XGROUP CREATE s g $ MKSTREAM", "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "XADD s 1-1 f v", "XPENDING s g - + 10", "*0\r\n"},
		} {
			if c.setup != "" {
				ctl.send(c.setup + "\r\n")
				ctl.reply()
			}
			b := ts.raw(t)
			b.send("CLIENT ID\r\n")
			id := strings.TrimSpace(strings.TrimPrefix(b.reply(), ":"))
			b.send(c.block + "\r\n")
			waitParked(t, ts, 1)
			ctl.send("CLIENT KILL ID " + id + "\r\n")
			if r := ctl.reply(); r != ":1\r\n" {
				t.Fatalf("CLIENT KILL ID %s = %q", id, r)
			}
			ctl.send(c.push + "\r\n")
			ctl.reply()
			ctl.send(c.count + "\r\n")
			if r := ctl.reply(); r != c.want {
				t.Fatalf("round %d, %s killed, then %s: %s = %q, want %q (served to the killed client)", round, c.block, c.push, c.count, r, c.want)
			}
			ctl.send("DEL q z dst s\r\n")
			ctl.reply()
			deadline := time.Now().Add(5 * time.Second)
			for ts.h.waiters.n.Load() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the killed client is still registered")
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}
