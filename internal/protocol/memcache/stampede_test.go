package memcache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"anykv/internal/engine"
)

// TestStampedeOneWinner checks that of many clients reading a stale item at once exactly one gets W (the others
// Z), and likewise for N on a missing key: the win is handed out in the same atomic step as the read.
func TestStampedeOneWinner(t *testing.T) {
	ts := startServer(t)
	setup := dial(t, ts.addr)
	if out := string(setup.roundTrip([]byte("ms k 1 T100\r\nx\r\nmd k I\r\n"))); out != "HD\r\nHD\r\n" {
		t.Fatalf("setup: %q", out)
	}
	for _, req := range []string{"mg k v\r\n", "mg viv N30 v\r\n"} {
		const clients = 16
		replies := make([]string, clients)
		var wg sync.WaitGroup
		for i := range clients {
			cl := dial(t, ts.addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = string(cl.roundTrip([]byte(req)))
			}()
		}
		wg.Wait()
		wins := 0
		for _, r := range replies {
			head, _, _ := strings.Cut(r, "\r\n")
			switch {
			case strings.HasSuffix(head, " W"):
				wins++
			case !strings.HasSuffix(head, " Z X") && !strings.HasSuffix(head, " Z"):
				t.Errorf("%q: reply %q has neither W nor Z", req, r)
			}
		}
		if wins != 1 {
			t.Errorf("%q: %d clients won, want 1: %q", req, wins, replies)
		}
	}
}

// TestStampedeBitsFollowTheItem checks that a write from another protocol (here straight through kv, as RESP
// and HTTP write) clears the stale and win bits, since they belong to the version they were set on.
func TestStampedeBitsFollowTheItem(t *testing.T) {
	ts := startServer(t)
	cl := dial(t, ts.addr)
	if out := string(cl.roundTrip([]byte("ms k 1\r\nx\r\nmd k I\r\nmg k v\r\n"))); out != "HD\r\nHD\r\nVA 1 X W\r\nx\r\n" {
		t.Fatalf("stale: %q", out)
	}
	res := ts.store.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("fresh")})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if out := string(cl.roundTrip([]byte("mg k v\r\n"))); out != "VA 5\r\nfresh\r\n" {
		t.Fatalf("after a write through kv: %q", out)
	}
	// The bits survive a restart of nothing but the connection: they are stored, not kept per connection.
	cl.roundTrip([]byte("md k I\r\n"))
	other := dial(t, ts.addr)
	if out := string(other.roundTrip([]byte("mg k c\r\n"))); out != fmt.Sprintf("HD c%d X W\r\n", res.New.Version+1) {
		t.Fatalf("another connection: %q", out)
	}
}
