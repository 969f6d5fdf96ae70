package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"anykv/internal/membudget"
)

// TestBlockedClientLetsGoOfEarlierReads: what an immediate command's batch read (EXEC's) counts against
// maxmemory-clients goes back once its reply is written, also when a blocking command after it in the same
// pipeline (BLPOP) sends that reply and then waits: the blocked connection holds none of it while it waits.
func TestBlockedClientLetsGoOfEarlierReads(t *testing.T) {
	budget := membudget.New(64<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	rc := ts.raw(t)
	bigHash(rc.do, "h", 32) // 2 MiB
	rc.send(respCmd("MULTI") + respCmd("HGETALL", "h") + respCmd("EXEC") + respCmd("BLPOP", "nothing", "0"))
	rc.reply()
	rc.reply()
	if r := rc.reply(); !strings.HasPrefix(r, "*1\r\n") {
		t.Fatalf("EXEC of HGETALL: %.40q", r)
	}
	if used := usedSettles(budget, 0, time.Second); used != 0 {
		t.Fatalf("blocked in BLPOP after MULTI HGETALL EXEC, the budget holds %d bytes", used)
	}
}

// TestTransactionReadsAreNotHeldAgainstTheirReply: an EXEC whose reads the budget held (twice what they read, past
// each MiB) writes its reply without that reservation counting against it: the reply's copy is part of it. Before,
// the reply's bytes past half the reservation (the reads' last, unreported MiB) were reserved as a reply that
// might evict, and the connection, the biggest holder because of its own reservation, was refused and closed,
// its applied transaction's reply dropped, where the budget had room for the reply.
func TestTransactionReadsAreNotHeldAgainstTheirReply(t *testing.T) {
	budget := membudget.New(4<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	rc := ts.raw(t)
	bigHash(rc.do, "h", 20)              // 1.25 MiB
	others := budget.Open("others", nil) // another client's reply being written, smaller than this one's
	defer others.Close()
	if err := others.Reserve(18 << 20 / 10); err != nil { // 1.8 MiB
		t.Fatal(err)
	}
	rc.send(respCmd("MULTI") + respCmd("INCR", "n") + respCmd("HGETALL", "h") + respCmd("EXEC"))
	rc.reply()
	rc.reply()
	rc.reply()
	if r := rc.reply(); !strings.HasPrefix(r, "*2\r\n:1\r\n") {
		t.Fatalf("EXEC of INCR and HGETALL of 1.25 MiB, 1.8 MiB of a 4 MiB budget held by another: %.40q", r)
	}
	if r := rc.do("GET", "n"); r != "$1\r\n1\r\n" {
		t.Fatalf("GET n after the EXEC: %q", r)
	}
}

// TestLengthReadsReserveTheValueOnce: STRLEN and the bit reads, whose replies carry none of the value, count it
// against maxmemory-clients once, not also for a reply's copy: a 600 KiB string under a 1 MiB budget answers them,
// where they were refused as GET is (twice 600 KiB does not fit).
func TestLengthReadsReserveTheValueOnce(t *testing.T) {
	budget := membudget.New(64<<20, nil)
	ts := startServer(t, Options{Budget: budget}, 0)
	rc := ts.raw(t)
	if r := rc.do("SET", "s", strings.Repeat("\xff", 600<<10)); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	budget.SetLimit(1 << 20)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"STRLEN", "s"}, ":614400\r\n"},
		{[]string{"GETBIT", "s", "7"}, ":1\r\n"},
		{[]string{"BITCOUNT", "s"}, fmt.Sprintf(":%d\r\n", 8*600<<10)},
		{[]string{"BITPOS", "s", "0"}, fmt.Sprintf(":%d\r\n", 8*600<<10)}, // past the end, as Redis without an end
	} {
		if r := rc.do(c.args...); r != c.want {
			t.Errorf("%v: %.80q, want %q", c.args, r, c.want)
		}
	}
	if r := rc.do("GET", "s"); !strings.HasPrefix(r, "-ERR client memory") {
		t.Errorf("GET of the 600 KiB string under a 1 MiB budget: %.80q, want refused", r)
	}
	if used := usedSettles(budget, 0, time.Second); used != 0 {
		t.Fatalf("after the reads the budget holds %d bytes", used)
	}
}
