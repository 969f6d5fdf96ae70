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

// What a scanned span waits for: a group that wrote inside it or flushed its table, not one that wrote elsewhere
// or only other tables; a group too big to search that writes the table is waited for whatever its keys.
func TestSpanObservesOnlyWhatCouldChangeIt(t *testing.T) {
	key := func(table, k string) string { return string(appendKey(nil, table, []byte(k))) }
	mk := func(n int, table string, ks ...string) *group {
		g := &group{keys: map[string]ovEntry{}, tables: map[string]struct{}{table: {}}}
		for _, k := range ks {
			g.keys[key(table, k)] = ovEntry{}
		}
		for i := 0; i < n; i++ {
			g.keys[key(table, fmt.Sprintf("z%05d", i))] = ovEntry{}
		}
		return g
	}
	rs := &readSet{}
	rs.span([]byte(key("t", "b")), []byte(key("t", "d")), "t")
	for _, c := range []struct {
		name string
		g    *group
		want bool
	}{
		{"a key inside", mk(0, "t", "c"), true},
		{"keys outside", mk(0, "t", "a", "d", "e"), false},
		{"another table", mk(0, "u", "c"), false},
		{"the table flushed", &group{flushed: map[string]struct{}{"t": {}}, tables: map[string]struct{}{"t": {}}}, true},
		{"everything flushed", &group{flushAll: true}, true},
		{"a big group of the table", mk(spanCheckLimit+1, "t", "a"), true},
		{"a big group of another table", mk(spanCheckLimit+1, "u", "c"), false},
	} {
		if got := rs.observes(c.g); got != c.want {
			t.Errorf("%s: observes = %v, want %v", c.name, got, c.want)
		}
	}
}
