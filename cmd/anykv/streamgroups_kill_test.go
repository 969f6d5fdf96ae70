package main

import (
	"fmt"
	"testing"

	"anykv/internal/servertest"
)

// TestStreamGroupsSurviveKill: a consumer group's state (last-delivered-id, entries-read, the pending entries with
// their consumers and delivery counts, acknowledgements, its consumers) is as durable as the entries: acknowledged
// before a SIGKILL, all of it is there after the restart, and reading the group goes on where it was.
func TestStreamGroupsSurviveKill(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Fsync: "always"})
	c := client(t, s.RESP)
	do := func(args ...any) string {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return fmt.Sprint(v)
	}
	do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	for i := 1; i <= 3; i++ {
		do("XADD", "s", fmt.Sprintf("%d-1", i), "f", i)
	}
	do("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
	do("XACK", "s", "g", "1-1")
	do("XCLAIM", "s", "g", "d", "0", "2-1", "RETRYCOUNT", "7", "JUSTID")
	do("XGROUP", "CREATECONSUMER", "s", "g", "e")
	want := map[string]string{
		"XPENDING":    "[1 2-1 2-1 [[d 1]]]",
		"XINFO":       "[map[consumers:3 entries-read:2 lag:1 last-delivered-id:2-1 name:g pending:1]]",
		"XREADGROUP0": "map[s:[[2-1 [f 2]]]]", // d's history
	}
	check := func(when string) {
		t.Helper()
		got := map[string]string{
			"XPENDING":    do("XPENDING", "s", "g"),
			"XINFO":       do("XINFO", "GROUPS", "s"),
			"XREADGROUP0": do("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", "0"),
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s = %s, want %s", when, k, got[k], w)
			}
		}
	}
	check("before the kill")
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	check("after kill -9 and restart")
	if got := do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"); got != "map[s:[[3-1 [f 3]]]]" {
		t.Errorf("after the restart the group reads %s, want 3-1 only", got)
	}
	v, err := c.Do(ctx, "XPENDING", "s", "g", "-", "+", "10", "d").Slice()
	if err != nil || len(v) != 1 {
		t.Fatalf("d's pending entries: %v, %v", v, err)
	}
	if e := v[0].([]any); fmt.Sprintf("%v %v %v", e[0], e[1], e[3]) != "2-1 d 9" {
		t.Errorf("d's pending entry: %v, want 2-1 delivered 9 times (7, and two history reads)", e)
	}
}
