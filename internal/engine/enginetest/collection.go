package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

func hset(key, field, val string) engine.Mutation {
	return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte(val),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(field)}}
}

func hop(op engine.Op, key, field string) engine.Mutation {
	return engine.Mutation{Op: op, Table: "t", Key: []byte(key), Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(field)}}
}

// members lists "name=value" of the collection at key as OpMembers reads it.
func members(t *testing.T, e engine.Engine, kind engine.Kind, key string) string {
	t.Helper()
	r := apply(t, e, engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte(key), Coll: engine.CollArgs{Kind: kind}})[0]
	if r.Err != nil {
		t.Fatalf("members of %q: %v", key, r.Err)
	}
	var out []string
	for _, m := range r.Members {
		out = append(out, string(m.Name)+"="+string(m.Item.Value))
	}
	return fmt.Sprint(out)
}

// count reads the member count from the collection's meta item.
func count(t *testing.T, e engine.Engine, key string) int64 {
	t.Helper()
	it, found := get(t, e, "t", key)
	if !found {
		return 0
	}
	m, err := engine.DecodeCollMeta(it.Value)
	if err != nil {
		t.Fatal(err)
	}
	return m.Count
}

// testCollections checks the member ops: one item per member, the count in the meta, the kind checks both ways,
// O(1) deletion by generation, and members moving with RENAME/COPY and leaving with a flush.
func testCollections(t *testing.T, e engine.Engine) {
	r := apply(t, e, hset("h", "b", "2"), hset("h", "a", "1"), hset("h", "b", "22"))
	if r[0].OldFound || r[1].OldFound || !r[2].OldFound || string(r[2].Old.Value) != "2" {
		t.Fatalf("hset results: %+v", r)
	}
	if it, _ := get(t, e, "t", "h"); it.Kind != engine.KindHash {
		t.Fatalf("meta kind = %v", it.Kind)
	}
	if got := members(t, e, engine.KindHash, "h"); got != "[a=1 b=22]" {
		t.Fatalf("members = %s", got)
	}
	if n := count(t, e, "h"); n != 2 {
		t.Fatalf("count = %d", n)
	}
	if r := apply(t, e, hop(engine.OpMemberGet, "h", "a"))[0]; r.Err != nil || string(r.New.Value) != "1" {
		t.Fatalf("member get: %+v", r)
	}
	wantErr(t, apply(t, e, hop(engine.OpMemberGet, "h", "zz"))[0], engine.ErrNotFound)
	wantErr(t, apply(t, e, hop(engine.OpMemberGet, "nohash", "a"))[0], engine.ErrNotFound)

	// Kinds: a string op on a hash and a hash op on a string are ErrWrongType and change nothing.
	apply(t, e, set("t", "s", "str"))
	wantErr(t, apply(t, e, hset("s", "f", "v"))[0], engine.ErrWrongType)
	wantErr(t, apply(t, e, engine.Mutation{Op: engine.OpAppend, Table: "t", Key: []byte("h"), Value: []byte("x")})[0], engine.ErrWrongType)
	wantErr(t, apply(t, e, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("h")})[0], engine.ErrWrongType)
	wantErr(t, apply(t, e, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("h")})[0], engine.ErrWrongType)
	wantErr(t, apply(t, e, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"),
		Coll: engine.CollArgs{Kind: engine.KindSet, Member: []byte("m")}})[0], engine.ErrWrongType)
	if r := apply(t, e, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("h"), AnyKind: true})[0]; r.Err != nil || r.New.Kind != engine.KindHash {
		t.Fatalf("OpGet AnyKind on a hash: %+v", r)
	}
	wantValue(t, e, "t", "s", "str")
	if got := members(t, e, engine.KindHash, "h"); got != "[a=1 b=22]" {
		t.Fatalf("members after refused ops = %s", got)
	}

	// Increments of a member; a failed one writes nothing.
	inc := hop(engine.OpMemberIncr, "h", "n")
	inc.Incr = engine.IncrArgs{Delta: 5, Create: true}
	if r := apply(t, e, inc, inc)[1]; r.Err != nil || string(r.New.Value) != "10" {
		t.Fatalf("member incr: %+v", r)
	}
	bad := hop(engine.OpMemberIncr, "h", "a")
	bad.Incr = engine.IncrArgs{Delta: 1 << 62, Create: true}
	apply(t, e, bad)
	wantErr(t, apply(t, e, bad)[0], engine.ErrOverflow)
	if n := count(t, e, "h"); n != 3 {
		t.Fatalf("count after incr = %d", n)
	}

	// Deleting members; the last one takes the collection with it.
	if r := apply(t, e, hop(engine.OpMemberDel, "h", "a"), hop(engine.OpMemberDel, "h", "a"))[1]; !errors.Is(r.Err, engine.ErrNotFound) {
		t.Fatalf("second delete: %+v", r)
	}
	apply(t, e, hop(engine.OpMemberDel, "h", "b"), hop(engine.OpMemberDel, "h", "n"))
	wantMissing(t, e, "t", "h")

	// Deleting the collection is one write; a new one of that name starts empty.
	apply(t, e, hset("g", "x", "1"), hset("g", "y", "2"))
	apply(t, e, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("g"), AnyKind: true})
	wantMissing(t, e, "t", "g")
	apply(t, e, hset("g", "z", "3"))
	if got := members(t, e, engine.KindHash, "g"); got != "[z=3]" {
		t.Fatalf("recreated collection holds %s", got)
	}

	// A batch sees its own member writes, merged with the stored ones.
	r = apply(t, e, hset("g", "a", "0"), hop(engine.OpMemberDel, "g", "z"),
		engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("g"), Coll: engine.CollArgs{Kind: engine.KindHash}})
	if len(r[2].Members) != 1 || string(r[2].Members[0].Name) != "a" {
		t.Fatalf("in-batch members: %+v", r[2].Members)
	}

	// Rename and copy carry the members; the source of a rename is gone.
	apply(t, e, hset("src", "f1", "v1"), hset("src", "f2", "v2"))
	apply(t, e, engine.Mutation{Op: engine.OpCopy, Table: "t", Key: []byte("src"), Target: engine.Target{Table: "t", Key: []byte("cp")}})
	apply(t, e, engine.Mutation{Op: engine.OpRename, Table: "t", Key: []byte("src"), Target: engine.Target{Table: "t", Key: []byte("dst")}})
	wantMissing(t, e, "t", "src")
	apply(t, e, hset("cp", "f3", "v3")) // the copy is independent
	if got := members(t, e, engine.KindHash, "dst"); got != "[f1=v1 f2=v2]" {
		t.Fatalf("renamed members = %s", got)
	}
	if got := members(t, e, engine.KindHash, "cp"); got != "[f1=v1 f2=v2 f3=v3]" {
		t.Fatalf("copied members = %s", got)
	}
	if n := count(t, e, "dst"); n != 2 {
		t.Fatalf("renamed count = %d", n)
	}

	// Expiring the meta hides the whole collection at once.
	apply(t, e, engine.Mutation{Op: engine.OpExpire, Table: "t", Key: []byte("dst"), Expires: now - 1})
	wantMissing(t, e, "t", "dst")
	wantErr(t, apply(t, e, hop(engine.OpMemberGet, "dst", "f1"))[0], engine.ErrNotFound)

	// A flush of the table takes the members too.
	apply(t, e, engine.Mutation{Op: engine.OpFlush, Table: "t"})
	apply(t, e, hset("cp", "only", "1"))
	if got := members(t, e, engine.KindHash, "cp"); got != "[only=1]" {
		t.Fatalf("after flush: %s", got)
	}
}
