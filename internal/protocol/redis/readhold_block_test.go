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
	field := strings.Repeat("f", 64<<10)
	for i := range 32 { // 2 MiB
		rc.do("HSET", "h", fmt.Sprint("f", i), field)
	}
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
