package kv_test

import (
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// the reclaimer deletes up to 2,000 dead members in one batch of OpDeletes; each OpDelete reads the
// member (resolver.get) and so counts its value against engine.MaxBatchRead. Members of a deleted collection
// whose values pass the bound together are refused with ErrBatchTooBig at every step, and never reclaimed.
func TestReclaimOfBigMembersIsNotRefused(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 1 << 20
	eng := memstore.New()
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	big := strings.Repeat("v", 256<<10)
	for _, f := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} { // 2 MiB of members, one batch each
		m := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("gone"), Value: []byte(big),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
		if _, err := s.Apply(ctx, []engine.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte("gone"), AnyKind: true}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.SweepOnce(ctx); err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
	}
	n := 0
	eng.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func([]byte, engine.Item) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d members of the deleted hash left after three sweeps", n)
	}
}
