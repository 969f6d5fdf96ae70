package redis

import "testing"

// protoSwitchTranscript subscribes a connection to a channel, a pattern and a shard channel in one protocol,
// switches it to the other (HELLO 2 while subscribed in RESP3; HELLO after leaving every subscription; RESET and
// HELLO), subscribes again and has another connection publish: every message, pattern message and shard message
// must come in the protocol the subscriber speaks at the time. HELLO's own replies (the server's version and the
// client's id) are read, not compared.
func protoSwitchTranscript(t *testing.T, addr string) []string {
	var out []string
	for _, first := range []string{"3", "2"} { // the protocol the connection first subscribes in
		sub, pub := dialRaw(t, addr), dialRaw(t, addr)
		step := func(rc *rawConn, cmd string, replies int) {
			rc.send(cmd + "\r\n")
			for i := 0; i < replies; i++ {
				out = append(out, first+" "+cmd+" -> "+rc.reply())
			}
		}
		hello := func(proto string) {
			sub.send("HELLO " + proto + "\r\n")
			sub.reply()
		}
		messages := func(n int) {
			got := ""
			for i := 0; i < n; i++ {
				got += sub.reply()
			}
			out = append(out, first+" messages -> "+got)
		}
		second := map[string]string{"2": "3", "3": "2"}[first]
		hello(first)
		step(sub, "SUBSCRIBE ch", 1)
		step(sub, "PSUBSCRIBE c*", 1)
		step(sub, "SSUBSCRIBE s", 1)
		step(pub, "PUBLISH ch m1", 1)
		step(pub, "SPUBLISH s m2", 1)
		messages(3)
		if first == "3" {
			hello("2") // allowed while subscribed in RESP3
			step(pub, "PUBLISH ch m3", 1)
			step(pub, "SPUBLISH s m4", 1)
			messages(3)
		}
		step(sub, "UNSUBSCRIBE", 1)
		step(sub, "PUNSUBSCRIBE", 1)
		step(sub, "SUNSUBSCRIBE", 1)
		hello(second)
		step(sub, "SUBSCRIBE ch", 1)
		step(sub, "PSUBSCRIBE c*", 1)
		step(sub, "SSUBSCRIBE s", 1)
		step(pub, "PUBLISH ch m5", 1)
		step(pub, "SPUBLISH s m6", 1)
		messages(3)
		step(sub, "RESET", 1) // back to RESP2, no subscriptions
		hello(first)
		step(sub, "SUBSCRIBE ch", 1)
		step(pub, "PUBLISH ch m7", 1)
		messages(1)
		step(sub, "RESET", 1)
		hello(second)
		step(sub, "SUBSCRIBE ch", 1)
		step(pub, "PUBLISH ch m8", 1)
		messages(1)
		sub.c.Close()
		pub.c.Close()
	}
	return out
}

// TestSubscriberMessagesFollowHelloAndReset: a subscriber's messages come in the protocol it speaks when they
// are sent, as in Redis: after HELLO 2 a RESP3 subscriber gets RESP2 arrays, and a connection that had subscribed
// in RESP2 gets RESP3 pushes once it speaks RESP3. The pusher kept the protocol of the connection's first
// subscription (or tracking push) for good, so a RESP3 client got `*3 message ...` arrays, which it reads as
// the reply of its next command, and a RESP2 client `>3` pushes it cannot parse.
func TestSubscriberMessagesFollowHelloAndReset(t *testing.T) {
	sameAsRedis(t, protoSwitchTranscript)
}
