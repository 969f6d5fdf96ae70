package pebblestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// A batch that only reads is answered without the writer, yet never with a write whose fsync is still pending:
// with a group's fsync held, a read batch of other keys answers at once (through the writer it would wait for
// the next group, whose fsync waits behind the held one), while a point read of a key the group wrote and a
// scan of a collection the group added to wait until the fsync returns, and then see the writes.
func TestReadBatchesWaitOnlyForWhatTheyRead(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := open(t, gfs, SyncAlways)
	hset := func(key, field, v string) engine.Mutation {
		return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte(v),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(field)}}
	}
	members := func(key string) engine.Mutation {
		return engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte(key), Coll: engine.CollArgs{Kind: engine.KindHash}}
	}
	get := func(table, key string) engine.Mutation {
		return engine.Mutation{Op: engine.OpGet, Table: table, Key: []byte(key)}
	}
	mustApply(t, s, set("t", "k", "old"), hset("h", "a", "1"), set("other", "o", "1"), hset("quiet", "x", "1"))

	gfs.hold()
	defer gfs.release()
	applied := applyAsync(s, set("t", "k", "new"), hset("h", "b", "2"))
	waitFor(t, func() bool { return gfs.blocked() > 0 && pebbleHas(s, "t", "k", "new") })

	// Other keys, a point read and a collection scan, answer while the fsync is held.
	res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{get("other", "o"), members("quiet")}})
	if err != nil || string(res[0].New.Value) != "1" || len(res[1].Members) != 1 {
		t.Fatalf("reads of untouched keys: %+v, %v", res, err)
	}

	pending := map[string]chan applyOut{
		"get k":      applyAsync(s, get("t", "k")),
		"members h":  applyAsync(s, members("h")),
		"get k+mine": applyAsync(s, get("other", "o"), get("t", "k")),
	}
	select {
	case <-pending["get k"]:
		t.Fatal("a read of the held group's key answered before its fsync")
	case <-pending["members h"]:
		t.Fatal("a scan of the held group's collection answered before its fsync")
	case <-pending["get k+mine"]:
		t.Fatal("a batch reading the held group's key among others answered before its fsync")
	case <-time.After(200 * time.Millisecond):
	}
	gfs.release()
	for name, ch := range pending {
		o := <-ch
		if o.err != nil {
			t.Fatalf("%s: %v", name, o.err)
		}
		got := ""
		for _, r := range o.res {
			got += fmt.Sprintf("%s%d;", r.New.Value, len(r.Members))
		}
		want := map[string]string{"get k": "new0;", "members h": "2;", "get k+mine": "10;new0;"}[name]
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if o := <-applied; o.err != nil {
		t.Fatal(o.err)
	}
}
