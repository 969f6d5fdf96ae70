package memcache

import (
	"fmt"
	"regexp"
	"testing"
)

// TestStaleSetKeepsTheItemsTTLAndWin checks ms I with an older CAS against what memcached 1.6.18 does
// (do_store_item's stale branch): the value is stored marked stale, but keeps the replaced item's expiry
// (whatever T says) and its "win sent" bit, so a reader does not get a second W while the winner of a vivify
// or recache is still recaching. Before, the item took the ms's T (none: it never expired) and the next
// reader won again.
func TestStaleSetKeepsTheItemsTTLAndWin(t *testing.T) {
	ts := startServer(t)
	cl := dial(t, ts.addr)
	casOf := func(reply []byte) uint64 {
		t.Helper()
		m := regexp.MustCompile(` c(\d+)`).FindSubmatch(reply)
		if m == nil {
			t.Fatalf("no CAS in %q", reply)
		}
		var c uint64
		fmt.Sscan(string(m[1]), &c)
		return c
	}
	exchange := func(in, want string) {
		t.Helper()
		if got := render(cl.roundTrip([]byte(in))); got != want {
			t.Fatalf("%q: got\n%s\nwant\n%s", in, got, want)
		}
	}

	// An item with a TTL, replaced by a late writer holding an older CAS (T500 is ignored, as memcached does).
	cl.roundTrip([]byte("ms k 1 T100\r\na\r\nms k 1 T100\r\na\r\n"))
	c := casOf(cl.roundTrip([]byte("mg k c\r\n")))
	exchange(fmt.Sprintf("ms k 1 I T500 C%d\r\nb\r\nmg k v t\r\nmg k v t\r\n", c-1),
		"HD\nVA 1 t100 X W\nb\nVA 1 t100 Z X\nb\n")

	// An item without a TTL stays without one.
	cl.roundTrip([]byte("ms n 1\r\na\r\nms n 1\r\na\r\n"))
	c = casOf(cl.roundTrip([]byte("mg n c\r\n")))
	exchange(fmt.Sprintf("ms n 1 I T500 C%d\r\nb\r\nmg n v t\r\n", c-1), "HD\nVA 1 t-1 X W\nb\n")

	// A vivified item whose win was handed out: the stale value's next reader gets Z, not a second W.
	c = casOf(cl.roundTrip([]byte("mg v N30 c\r\n")))
	exchange(fmt.Sprintf("ms v 1 I C%d\r\ng\r\nmg v v t\r\nmg v v\r\n", c-1),
		"HD\nVA 1 t30 Z X\ng\nVA 1 Z X\ng\n")
}
