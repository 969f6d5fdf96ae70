package collections_test

import (
	"context"
	"testing"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// A stream's consumer groups are members of the stream's own collection: RENAME moves them with the entries, and
// once the stream is deleted the background reclaim removes them with its entries, leaving no member behind.
func TestStreamGroupRecordsMoveAndAreReclaimed(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	s := kv.New(mem, kv.Options{SweepInterval: -1})
	defer s.Close()
	apply := func(muts ...engine.Mutation) {
		t.Helper()
		res, err := s.Apply(ctx, muts)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("mutation %d: %v", i, r.Err)
			}
		}
	}
	members := func(key string) (entries, records int) {
		mem.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func(mk []byte, _ engine.Item) bool {
			k, _, m, _ := engine.SplitMemberKey(mk)
			switch {
			case string(k) != key:
			case len(m) == 16:
				entries++
			default:
				records++
			}
			return true
		})
		return entries, records
	}
	key := []byte("s")
	for _, id := range []string{"1-1", "2-1", "3-1"} {
		apply(collections.XAdd("t", key, []byte(id), false, collections.StreamTrim{}, []byte("f"), []byte("v")))
	}
	apply(collections.XGroup("t", key, "create", []byte("g"), []byte("0"), []byte("0"), nil),
		collections.XReadGroup("t", key, []byte("g"), []byte("c"), []byte(">"), 2, false),
		collections.XDel("t", key, []byte("3-1")))
	// a group, a consumer, two pending entries and their index entries, the tally
	if e, r := members("s"); e != 2 || r != 7 {
		t.Fatalf("%d entries and %d group records, want 2 and 7", e, r)
	}
	apply(engine.Mutation{Op: engine.OpRename, Table: "t", Key: key, Target: engine.Target{Table: "t", Key: []byte("r")}})
	for i := 0; i < 5; i++ {
		if err := s.SweepOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if e, r := members("r"); e != 2 || r != 7 {
		t.Fatalf("renamed: %d entries and %d group records, want 2 and 7", e, r)
	}
	if e, r := members("s"); e != 0 || r != 0 {
		t.Fatalf("renamed away: %d entries and %d group records left under the old name", e, r)
	}
	apply(engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte("r"), AnyKind: true})
	for i := 0; i < 5; i++ {
		if err := s.SweepOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if e, r := members("r"); e != 0 || r != 0 {
		t.Fatalf("deleted: %d entries and %d group records left after the reclaim", e, r)
	}
}
