package pebblestore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/collections"
	"anykv/internal/engine"
)

// A genFilter never forgets a key it took, whatever its size, and its false positives stay rare.
func TestGenFilterKeepsEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 15, 16, 17, 1000, 100_000} {
		var g genFilter
		added := make([]uint64, n)
		for i := range added {
			added[i] = rng.Uint64()
			g.add(added[i])
		}
		for _, h := range added {
			if !g.mayHave(h) {
				t.Fatalf("%d keys: a key added is missing", n)
			}
		}
		fp := 0
		for range 100_000 {
			if g.mayHave(rng.Uint64()) {
				fp++
			}
		}
		if fp > 1500 { // 1.5%: a full part has about 0.07%, and a filter of 100,000 keys 12 parts (0.76% measured)
			t.Fatalf("%d keys: %d false positives in 100,000 lookups", n, fp)
		}
	}
}

// The filters answer "absent" only for generations above their floor, and for those only for keys never added;
// dropping them raises the floor past every generation allocated so far.
func TestMemberFiltersProveOnlyWhatTheySaw(t *testing.T) {
	mt := engine.MemberTable("t")
	f := newMemberFilters(100, 1<<20)
	key := func(gen uint64, member string) ([]byte, []byte) {
		mk := engine.MemberKey([]byte("coll"), gen, []byte(member))
		return mk, appendKey(nil, mt, mk)
	}
	if mk, k := key(50, "a"); f.absent(mt, mk, k) {
		t.Fatal("a generation at or below the floor was proved absent: it may have members from before")
	}
	if mk, k := key(150, "a"); !f.absent(mt, mk, k) {
		t.Fatal("a member of a generation above the floor that was never written was not proved absent")
	}
	if f.absent("t", []byte("plain"), appendKey(nil, "t", []byte("plain"))) {
		t.Fatal("a key of a user table was proved absent")
	}
	mk, k := key(150, "a")
	f.added(mt, mk, k, 150)
	if f.absent(mt, mk, k) {
		t.Fatal("a member written was proved absent")
	}
	proved := 0
	for i := range 20 {
		if mk, k := key(150, fmt.Sprint("other", i)); f.absent(mt, mk, k) {
			proved++
		}
	}
	if proved < 19 {
		t.Fatalf("only %d of 20 members never written were proved absent", proved)
	}

	// Past the bound the filters of the older generations go, and the floor rises past them; a newer one keeps its
	// filter, and generations above the floor never written are still absent.
	f = newMemberFilters(100, 1000)
	for _, gen := range []uint64{110, 200, 390} {
		mk, k := key(gen, "first")
		f.added(mt, mk, k, 400)
	}
	for i := range 300 { // 110's filter grows to five parts and the filters pass 1000 bytes
		mk, k := key(110, fmt.Sprint("m", i))
		f.added(mt, mk, k, 400)
	}
	if f.floor < 200 || f.floor >= 390 || len(f.m) != 1 || f.m[390] == nil || f.bytes > 500 {
		t.Fatalf("after passing the bound: floor %d, filters of %v, %d bytes; want 390's alone, the floor in [200, 390)",
			f.floor, slices.Collect(maps.Keys(f.m)), f.bytes)
	}
	for _, gen := range []uint64{110, 200} {
		if mk, k := key(gen, "first"); f.absent(mt, mk, k) {
			t.Fatalf("a member of generation %d written before its filter was shed was proved absent", gen)
		}
	}
	if mk, k := key(390, "first"); f.absent(mt, mk, k) {
		t.Fatal("a member of the generation whose filter was kept was proved absent")
	}
	if mk, k := key(390, "second"); !f.absent(mt, mk, k) {
		t.Fatal("a member never written of the generation whose filter was kept was not proved absent")
	}
	if mk, k := key(395, "a"); !f.absent(mt, mk, k) {
		t.Fatal("a generation above the floor never written was not proved absent")
	}
}

// Through the store: new members of a collection created since Open are proved absent without reading Pebble, and
// members written before a restart, or before the filters were dropped at their bound, are found (HSET answers
// that the field existed; a wrong absence would answer "new" and count it twice in HLEN).
func TestMemberFiltersThroughTheStore(t *testing.T) {
	for _, bound := range []int64{0, 256} { // the default, and one that sheds filters again and again
		t.Run(fmt.Sprint("bound=", bound), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := Options{Dir: "/db", FS: fs, CacheBytes: 8 << 20, Logger: quiet, memberFilterBytes: bound}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			hset := func(key, field string) engine.Mutation {
				return engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte(key), Value: []byte("v"),
					Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(field)}}
			}
			// existed applies HSETs of key's fields, one batch each (the writer's reads, not the batch's own
			// writes, answer whether they existed), and reports which existed.
			existed := func(s *Store, key string, fields ...string) []bool {
				var out []bool
				for _, f := range fields {
					res := mustApply(t, s, hset(key, f))
					out = append(out, res[0].OldFound)
				}
				return out
			}
			fields := make([]string, 200)
			for i := range fields {
				fields[i] = fmt.Sprint("f", i)
			}
			for i, e := range existed(s, "h", fields...) {
				if e {
					t.Fatalf("field %d of a new hash existed", i)
				}
			}
			// 199 reads of new fields (the first HSET creates the hash and reads none); a bloom filter's false
			// positives send a few to Pebble (about 0.1% each).
			if got := s.Stats()["writer_filter_absent"]; bound == 0 && got < 190 {
				t.Fatalf("writer_filter_absent %d after 200 new fields: the filter was not asked", got)
			}
			for i, e := range existed(s, "h", fields...) {
				if !e {
					t.Fatalf("field %d written before was proved absent", i)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(opts); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, e := range existed(s, "h", fields[:50]...) {
				if !e {
					t.Fatalf("after a restart, field %d written before it was proved absent", i)
				}
			}
			for i, e := range existed(s, "h2", fields[:50]...) {
				if e {
					t.Fatalf("after a restart, field %d of a new hash existed", i)
				}
			}
			res := mustApply(t, s, engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("h"),
				Coll: engine.CollArgs{Kind: engine.KindHash}})
			if n := len(res[0].Members); n != len(fields) {
				t.Fatalf("HGETALL found %d fields, want %d", n, len(fields))
			}
		})
	}
}

// A list's pops read elements they know are stored (engine.StoredReader): the filters, which only pay for absent
// keys, are not asked, yet every element comes back in order.
func TestListPopsSkipTheMemberFilters(t *testing.T) {
	s, err := Open(Options{Dir: "/db", FS: vfs.NewMem(), CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		mustApply(t, s, collections.Push("t", []byte("q"), false, false, []byte(fmt.Sprint("e", i))))
	}
	asked := s.Stats()["writer_filter_asked"]
	for i := range 100 {
		res := mustApply(t, s, collections.Pop("t", []byte("q"), true, -1))
		if got, want := string(res[0].New.Value), fmt.Sprint("e", i); got != want {
			t.Fatalf("pop %d: %q, want %q", i, got, want)
		}
	}
	if n := s.Stats()["writer_filter_asked"] - asked; n != 0 {
		t.Fatalf("100 pops asked the member filters %d times", n)
	}
	// A membership read of the same kind of key does ask them (the counter counts).
	mustApply(t, s, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte("v"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("a")}})
	mustApply(t, s, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte("v"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("b")}})
	if s.Stats()["writer_filter_asked"] == asked {
		t.Fatal("an HSET of a new field of a new hash did not ask the member filters")
	}
}
