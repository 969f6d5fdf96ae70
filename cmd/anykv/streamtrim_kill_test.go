package main

import (
	"fmt"
	"testing"

	"anykv/internal/servertest"
)

// TestStreamApproxTrimSurvivesKill: a stream capped with XADD MAXLEN ~ (nodes of 10 entries, the serve flag) is
// the same after a SIGKILL and a restart (its entries, XLEN, entries-added and first entry), and its next "~"
// trims fall on the same node boundaries as before: where the nodes begin is in the stream's meta, written in the
// same batch as the trim.
func TestStreamApproxTrimSurvivesKill(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Fsync: "always", Args: []string{"--stream-node-max-entries", "10"}})
	c := client(t, s.RESP)
	do := func(args ...any) string {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return fmt.Sprint(v)
	}
	// Exact trims end inside a node; the "~" ones then free the rest of it, then whole nodes.
	for i := 1; i <= 137; i++ {
		trim := []any{"MAXLEN", "~", 50}
		if i%40 == 0 {
			trim = []any{"MAXLEN", 47}
		}
		do(append(append([]any{"XADD", "s"}, trim...), fmt.Sprintf("%d-0", i), "f", i)...)
	}
	state := func() string {
		info, err := c.XInfoStream(ctx, "s").Result()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(do("XLEN", "s"), " ", info.EntriesAdded, " ", info.FirstEntry.ID, " ", do("XRANGE", "s", "-", "+"))
	}
	before := state()
	if want := "57 137 81-0"; before[:len(want)] != want {
		t.Fatalf("before the kill: %s, want %s...", before, want)
	}
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	if after := state(); after != before {
		t.Fatalf("after kill -9 and restart: %s\nbefore: %s", after, before)
	}
	for n := 57; n < 60; n++ { // the first node (81-0 to 90-0) goes once 60 entries leave 50
		if got := do("XTRIM", "s", "MAXLEN", "~", 50); got != "0" {
			t.Fatalf("XTRIM MAXLEN ~ 50 at %d entries trimmed %s, want 0", n, got)
		}
		do("XADD", "s", fmt.Sprintf("%d-0", 81+n), "f", "v")
	}
	if got := do("XTRIM", "s", "MAXLEN", "~", 50); got != "10" || do("XLEN", "s") != "50" {
		t.Fatalf("XTRIM MAXLEN ~ 50 at 60 entries trimmed %s, leaving %s; want 10, 50", got, do("XLEN", "s"))
	}
}
