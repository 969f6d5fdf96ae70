package redis

import (
	"sync"
	"testing"
)

// TestRevocationDuringSubscribeClosesTheSubscriber: an ACL change that refuses a channel, landing after a SUBSCRIBE,
// SSUBSCRIBE or PSUBSCRIBE passed its check but before the channel joined the connection's set, closes the
// connection as a change after it does: the subscriber never hears the channel (it stayed subscribed, and heard
// what was published there after the revocation). Redis's unit/acl checks the change after the subscription.
func TestRevocationDuringSubscribeClosesTheSubscriber(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := dialRaw(t, ts.addr)
	for _, c := range []struct{ sub, pub, channel string }{
		{"SUBSCRIBE", "PUBLISH", "foo:1"}, {"SSUBSCRIBE", "SPUBLISH", "foo:1"}, {"PSUBSCRIBE", "PUBLISH", "foo:*"},
	} {
		admin.expect("+OK\r\n", "ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "resetkeys", "~*", "resetchannels",
			"&foo:*")
		var once sync.Once
		hook := func(s *session) {
			once.Do(func() {
				if err := ts.h.setUser("psuser", []string{"resetchannels"}); err != nil {
					t.Error(err)
				}
			})
		}
		testHookSubscribing.Store(&hook)
		sub := dialRaw(t, ts.addr)
		sub.expect("+OK\r\n", "AUTH", "psuser", "pspass")
		sub.send(respCmd(c.sub, c.channel))
		if !sub.closed() {
			t.Errorf("%s of a channel revoked during the command: the connection stays open", c.sub)
		}
		testHookSubscribing.Store(nil)
		if got := admin.do(c.pub, "foo:1", "after the revocation"); got != ":0\r\n" {
			t.Errorf("%s after the revocation reached %s subscribers", c.pub, got)
		}
	}
}
