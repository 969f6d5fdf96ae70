package enginetest

import (
	"fmt"
	"sort"
	"testing"

	"anykv/internal/engine"
)

// testSweepReport: an engine.SweepReporter names exactly the user items its sweeps removed (a string and an
// expired hash's meta), never the members of collections, which live in the engine's own tables.
func testSweepReport(t *testing.T, e engine.Engine) {
	sr, ok := e.(engine.SweepReporter)
	if !ok {
		t.Skipf("%T does not name what it sweeps", e)
	}
	apply(t, e,
		engine.Mutation{Op: engine.OpSet, Table: "r", Key: []byte("gone"), Value: []byte("v"), Expires: now - 1},
		engine.Mutation{Op: engine.OpSet, Table: "r", Key: []byte("kept"), Value: []byte("v")},
		engine.Mutation{Op: engine.OpMemberSet, Table: "r", Key: []byte("hash"), Value: []byte("1"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}},
		engine.Mutation{Op: engine.OpExpire, Table: "r", Key: []byte("hash"), Expires: now + 1}, // a past time deletes at once
	)
	var named []string
	removed := 0
	for i := 0; i < 10; i++ {
		n, err := sr.SweepReport(ctx, now+2, 3, func(table string, key []byte) {
			named = append(named, fmt.Sprintf("%s/%s", table, key))
		})
		if err != nil {
			t.Fatal(err)
		}
		removed += n
	}
	sort.Strings(named)
	if fmt.Sprint(named) != "[r/gone r/hash]" {
		t.Fatalf("sweeps named %q, want the expired string and hash", named)
	}
	if removed < len(named) {
		t.Fatalf("sweeps removed %d items but named %d", removed, len(named))
	}
}
