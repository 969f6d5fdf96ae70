package collections

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// applyOne applies m alone to st and fails the test on a batch error.
func applyOne(t *testing.T, st engine.Engine, m engine.Mutation) engine.Result {
	t.Helper()
	res, err := st.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// TestRandMembersAreUniform: picks by rank (few members, read from either end) and over a full read (many) return
// members of the collection, distinct for a positive count, the number asked for, and each member about equally
// often: a chi-square test over 60 members fails for a pick that favours one end or skips a rank.
func TestRandMembersAreUniform(t *testing.T) {
	st := memstore.New()
	const n = 60
	for i := 0; i < n; i++ {
		m := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte(fmt.Sprint("v", i)),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(fmt.Sprintf("f%02d", i))}}
		applyOne(t, st, m)
		applyOne(t, st, ZAdd("t", []byte("z"), 0, []byte(fmt.Sprint(i)), []byte(fmt.Sprintf("f%02d", i))))
	}
	// The sorted set's picks carry their scores.
	for _, count := range []int64{2, -7, 60} {
		res := applyOne(t, st, RandMembers("t", []byte("z"), engine.KindZSet, count, 9))
		for _, m := range res.Members {
			var i int
			if _, err := fmt.Sscanf(string(m.Name), "f%02d", &i); err != nil || string(m.Item.Value) != fmt.Sprint(i) {
				t.Fatalf("ZRANDMEMBER %d: %q with score %q", count, m.Name, m.Item.Value)
			}
		}
	}
	for _, count := range []int64{1, 3, 20, -1, -25, 45, -200, 60, 100} {
		seen := map[string]int{}
		const rounds = 3000
		total := 0
		for r := 0; r < rounds; r++ {
			res := applyOne(t, st, RandMembers("t", []byte("h"), engine.KindHash, count, uint64(r)*7919+uint64(count+1000)))
			want := min(count, n)
			if count < 0 {
				want = -count
			}
			if int64(len(res.Members)) != want {
				t.Fatalf("count %d: %d members, want %d", count, len(res.Members), want)
			}
			distinct := map[string]bool{}
			for _, m := range res.Members {
				var i int
				if _, err := fmt.Sscanf(string(m.Name), "f%02d", &i); err != nil || string(m.Item.Value) != fmt.Sprint("v", i) {
					t.Fatalf("count %d: picked %q = %q", count, m.Name, m.Item.Value)
				}
				if count > 0 && distinct[string(m.Name)] {
					t.Fatalf("count %d: %q picked twice", count, m.Name)
				}
				distinct[string(m.Name)] = true
				seen[string(m.Name)]++
				total++
			}
		}
		if count >= n {
			continue // every member every time
		}
		expect := float64(total) / n
		chi := 0.0
		for i := 0; i < n; i++ {
			d := float64(seen[fmt.Sprintf("f%02d", i)]) - expect
			chi += d * d / expect
		}
		if chi > 120 { // 59 degrees of freedom: p < 1e-6 for a fair pick
			t.Errorf("count %d: chi-square %.0f over %d picks: not uniform (%v)", count, chi, total, seen)
		}
	}
	if res := applyOne(t, st, RandMembers("t", []byte("none"), engine.KindSet, 3, 1)); len(res.Members) != 0 || res.Err != nil {
		t.Fatalf("missing key: %+v", res)
	}
	if res := applyOne(t, st, RandMembers("t", []byte("h"), engine.KindSet, 3, 1)); res.Err != engine.ErrWrongType {
		t.Fatalf("a hash read as a set: %+v", res)
	}
}

// TestSPopTakesEveryMemberOnce: popping a set one and three at a time returns each member exactly once, keeps
// SCARD's count, and removes the set with its last member.
func TestSPopTakesEveryMemberOnce(t *testing.T) {
	st := memstore.New()
	const n = 500
	for i := 0; i < n; i++ {
		applyOne(t, st, engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("s"), Value: []byte{},
			Coll: engine.CollArgs{Kind: engine.KindSet, Member: []byte(fmt.Sprint("m", i))}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	popped := map[string]bool{}
	for left := n; left > 0; {
		count := int64(-1)
		if rng.IntN(2) == 0 {
			count = 3
		}
		res := applyOne(t, st, SPop("t", []byte("s"), count, rng.Uint64()))
		names := [][]byte{res.New.Value}
		if count > 0 {
			names = nil
			for _, m := range res.Members {
				names = append(names, m.Name)
			}
		}
		if want := min(left, int(max(count, 1))); len(names) != want {
			t.Fatalf("%d left: popped %d, want %d", left, len(names), want)
		}
		for _, name := range names {
			if popped[string(name)] {
				t.Fatalf("%q popped twice", name)
			}
			popped[string(name)] = true
		}
		left -= len(names)
		if left > 0 {
			meta := applyOne(t, st, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("s"), AnyKind: true})
			cm, err := engine.DecodeCollMeta(meta.New.Value)
			if err != nil || cm.Count != int64(left) {
				t.Fatalf("%d left, meta count %d (%v)", left, cm.Count, err)
			}
		}
	}
	if res := applyOne(t, st, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte("s"), AnyKind: true}); res.Err != engine.ErrNotFound {
		t.Fatalf("the emptied set is still there: %+v", res)
	}
	if len(popped) != n {
		t.Fatalf("popped %d distinct members of %d", len(popped), n)
	}
}

// TestCorruptScoreIsAnError: a sorted set's member item that does not hold a score fails ZRANDMEMBER and ZSCAN
// with ErrCorrupt, never a short or absent answer (ZSCAN's page once dropped the error and came back short).
func TestCorruptScoreIsAnError(t *testing.T) {
	st := memstore.New()
	key := []byte("z")
	for i := 0; i < 10; i++ {
		applyOne(t, st, ZAdd("t", key, 0, []byte(fmt.Sprint(i)), []byte(fmt.Sprintf("m%d", i))))
	}
	meta := applyOne(t, st, engine.Mutation{Op: engine.OpGet, Table: "t", Key: key, AnyKind: true})
	cm, err := engine.DecodeCollMeta(meta.New.Value)
	if err != nil {
		t.Fatal(err)
	}
	applyOne(t, st, engine.Mutation{Op: engine.OpSet, Table: engine.MemberTable("t"),
		Key: engine.MemberKey(key, cm.Gen, []byte("mm5")), Value: []byte("bad")})
	for name, m := range map[string]engine.Mutation{
		"ZRANDMEMBER": RandMembers("t", key, engine.KindZSet, 10, 1),
		"ZSCAN":       ScanMembers("t", key, engine.KindZSet, false, nil, 100),
	} {
		if _, err := st.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); !errors.Is(err, engine.ErrCorrupt) {
			t.Errorf("%s over a corrupt score: %v, want ErrCorrupt", name, err)
		}
	}
}
