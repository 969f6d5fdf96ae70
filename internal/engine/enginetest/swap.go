package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

// swapOf is the OpSwap of tables "t" and "u" (SWAPDB).
var swapOf = engine.Mutation{Op: engine.OpSwap, Table: "t", Target: engine.Target{Table: "u"}}

// in returns m addressed to table instead of "t".
func in(table string, m engine.Mutation) engine.Mutation {
	m.Table = table
	return m
}

// membersIn lists "name=value" of the hash at table/key.
func membersIn(t *testing.T, e engine.Engine, table, key string) string {
	t.Helper()
	r := apply(t, e, engine.Mutation{Op: engine.OpMembers, Table: table, Key: []byte(key), Coll: engine.CollArgs{Kind: engine.KindHash}})[0]
	if r.Err != nil {
		t.Fatalf("members of %s/%q: %v", table, key, r.Err)
	}
	var out []string
	for _, m := range r.Members {
		out = append(out, string(m.Name)+"="+string(m.Item.Value))
	}
	return fmt.Sprint(out)
}

// testSwap checks OpSwap: every live item of two tables trades places in one batch, strings with their versions
// and expiry times, collections with their members; an expired item and the members of a deleted collection stay
// behind; a later swap of the same batch sees the earlier one, and a member written after a swap joins the moved
// collection. An engine that cannot swap atomically must refuse the batch with ErrNotSupported, applying nothing.
func testSwap(t *testing.T, e engine.Engine) {
	r := apply(t, e, set("t", "k", "t1"), set("t", "onlyt", "x"), set("u", "k", "u1"),
		in("t", hset("h", "f", "v")), in("t", hset("h", "g", "w")),
		in("u", hset("gone", "f", "old")),
		engine.Mutation{Op: engine.OpSet, Table: "u", Key: []byte("ttl"), Value: []byte("e"), Expires: now + 60_000},
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("dead"), Value: []byte("d"), Expires: now + 10})
	tk := r[0].New.Version
	apply(t, e, engine.Mutation{Op: engine.OpDelete, Table: "u", Key: []byte("gone"), AnyKind: true})

	res, err := e.Apply(ctx, &engine.Batch{Now: now + 20, Muts: []engine.Mutation{swapOf}}) // "dead" expired
	if errors.Is(err, engine.ErrNotSupported) {
		wantValue(t, e, "t", "k", "t1") // refused whole
		wantValue(t, e, "u", "k", "u1")
		return
	}
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("swap: %v %+v", err, res)
	}
	if it := wantValue(t, e, "u", "k", "t1"); it.Version != tk {
		t.Errorf("swapped item's version %d, was %d", it.Version, tk)
	}
	wantValue(t, e, "t", "k", "u1")
	wantValue(t, e, "u", "onlyt", "x")
	wantMissing(t, e, "t", "onlyt")
	if it := wantValue(t, e, "t", "ttl", "e"); it.Expires != now+60_000 {
		t.Errorf("swapped expiry %d", it.Expires)
	}
	wantMissing(t, e, "u", "ttl")
	wantMissing(t, e, "t", "h")
	wantMissing(t, e, "u", "dead")
	if got := membersIn(t, e, "u", "h"); got != "[f=v g=w]" {
		t.Fatalf("swapped hash holds %s", got)
	}
	// A member written after the swap joins the moved collection; a hash created where the deleted one was
	// starts empty (its old members stayed behind).
	apply(t, e, in("u", hset("h", "n", "1")), in("t", hset("gone", "new", "1")))
	if got := membersIn(t, e, "u", "h"); got != "[f=v g=w n=1]" {
		t.Fatalf("after a member write: %s", got)
	}
	if got := membersIn(t, e, "t", "gone"); got != "[new=1]" {
		t.Fatalf("re-created hash holds %s", got)
	}

	// Two swaps in one batch, with writes between them, each seeing what came before.
	apply(t, e, set("t", "a", "1"), swapOf, set("t", "b", "2"), swapOf)
	wantValue(t, e, "t", "a", "1")
	wantValue(t, e, "u", "b", "2")
	wantValue(t, e, "t", "k", "u1")
	if got := membersIn(t, e, "u", "h"); got != "[f=v g=w n=1]" {
		t.Fatalf("after two swaps: %s", got)
	}
	if engine.AbilitiesOf(e)&engine.CanScan != 0 {
		if got := fmt.Sprint(scanKeys(t, e, "u", engine.Range{})); got != "[b=2 h=hash(3 members, <nil>) k=t1 onlyt=x]" {
			t.Errorf("table u holds %s", got)
		}
		if got := fmt.Sprint(scanKeys(t, e, "t", engine.Range{})); got != "[a=1 gone=hash(1 members, <nil>) k=u1 ttl=e]" {
			t.Errorf("table t holds %s", got)
		}
	}
}
