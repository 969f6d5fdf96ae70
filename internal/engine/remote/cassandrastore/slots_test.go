package cassandrastore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// keysInSlots returns two keys of different slots of n, and a key sharing the first one's slot by hash tag.
func keysInSlots(n int) (a, b, tagged []byte) {
	a = []byte("{x}a")
	for i := 0; ; i++ {
		b = fmt.Appendf(nil, "b%d", i)
		if engine.SlotOf("default", b, n) != engine.SlotOf("default", a, n) {
			return a, b, []byte("{x}b")
		}
	}
}

// A namespace over several slots refuses a batch across two of them, applying nothing, and applies batches
// whose keys share a hash tag; collections, scans of every slot, and a flush of every slot work.
func testCrossSlot(t *testing.T, url string) {
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	const now = int64(1_700_000_000_000)
	set := func(k []byte) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "default", Key: k, Value: []byte("v")}
	}
	a, b, tagged := keysInSlots(4)
	_, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set(a), set(b)}})
	if !errors.Is(err, engine.ErrCrossSlot) || !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("a batch across slots: %v, want ErrCrossSlot", err)
	}
	for _, k := range [][]byte{a, b} {
		if _, err := s.Get(ctx, "default", k, now); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("%s after a refused batch: %v, want not found", k, err)
		}
	}
	ren := engine.Mutation{Op: engine.OpRename, Table: "default", Key: a, Target: engine.Target{Table: "default", Key: b}}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{ren}}); !errors.Is(err, engine.ErrCrossSlot) {
		t.Fatalf("RENAME across slots: %v, want ErrCrossSlot", err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set(a), set(tagged)}}); err != nil {
		t.Fatalf("a batch of keys with one hash tag: %v", err)
	}
	// One key per slot at least, and a hash in another slot than a: a scan and the table list see them all, in
	// key order.
	var want []string
	for i := range 40 {
		k := fmt.Appendf(nil, "k%02d", i)
		if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set(k)}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(k))
	}
	h := engine.Mutation{Op: engine.OpMemberSet, Table: "other", Key: b, Value: []byte("1"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{h}}); err != nil {
		t.Fatalf("HSET in another slot: %v", err)
	}
	var got []string
	if err := s.Scan(ctx, "default", engine.PrefixRange([]byte("k")), now, func(k []byte, _ engine.Item) bool {
		got = append(got, string(k))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan over every slot = %v, want %v", got, want)
	}
	if tables, err := s.Tables(ctx); err != nil || len(tables) < 2 {
		t.Fatalf("tables = %v, %v", tables, err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpFlush}}}); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	for _, k := range [][]byte{a, tagged, []byte("k00"), []byte("k39")} {
		if _, err := s.Get(ctx, "default", k, now); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("%s after FLUSHALL: %v", k, err)
		}
	}
	if _, err := s.Get(ctx, "other", b, now); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the hash after FLUSHALL: %v", err)
	}
}

// A namespace keeps the slot count it was created with: a URL asking for another one is refused.
func testSlotCountKept(t *testing.T, server string) {
	ctx := context.Background()
	for _, c := range []struct{ first, then string }{{"&slots=4", "&slots=8"}, {"&slots=4", ""}, {"", "&slots=4"}} {
		url := fmt.Sprintf("%s/anykv_test?partition=t%d", server, parts.Add(1))
		s := open(t, url+c.first)
		m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("v")}
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err := Open(ctx, url+c.then); !errors.Is(err, remote.ErrBadURL) {
			if err == nil {
				s.Close()
			}
			t.Errorf("created with %q, opened with %q: %v, want ErrBadURL", c.first, c.then, err)
		}
		s = open(t, url+c.first)
		if _, err := s.Get(ctx, "default", []byte("k"), 1); err != nil {
			t.Errorf("reopened with %q: %v", c.first, err)
		}
		s.Close()
	}
}
