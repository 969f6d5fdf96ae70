package collections

import (
	"context"
	"fmt"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// A capped stream (XADD MAXLEN on every add) records where its live entries start, so the next trim and every
// read seek past what earlier trims deleted; reads forward, backwards and with COUNT see exactly the last
// entries.
func TestCappedStreamKeepsItsFloor(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	apply := func(m engine.Mutation) engine.Result {
		t.Helper()
		res, err := st.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("%v %v", err, res[0].Err)
		}
		return res[0]
	}
	key, capLen := []byte("s"), int64(5)
	all := ID{MS: ^uint64(0), Seq: ^uint64(0)}
	for i := uint64(1); i <= 40; i++ {
		apply(XAdd("t", key, []byte(fmt.Sprintf("%d-0", i)), false, StreamTrim{By: "maxlen", MaxLen: capLen}, []byte("f"), []byte("v")))
		it, err := st.Get(ctx, "t", key, 1)
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := engine.DecodeCollMeta(it.Value)
		if i > uint64(capLen) && string(meta.Floor) != string(ID{MS: i - uint64(capLen)}.key()) {
			t.Fatalf("after %d adds the floor is %x, want the last trimmed entry %d-0", i, meta.Floor, i-uint64(capLen))
		}
		first := max(1, int64(i)-capLen+1)
		for _, c := range []struct {
			rev   bool
			count int64
		}{{false, -1}, {true, -1}, {false, 2}, {true, 2}} {
			got := apply(XRange("t", key, ID{}, all, c.rev, c.count)).Members
			var want []string
			for n := first; n <= int64(i); n++ {
				want = append(want, fmt.Sprintf("%d-0", n))
			}
			if c.rev {
				for a, b := 0, len(want)-1; a < b; a, b = a+1, b-1 {
					want[a], want[b] = want[b], want[a]
				}
			}
			if c.count >= 0 && int64(len(want)) > c.count {
				want = want[:c.count]
			}
			if len(got) != len(want) {
				t.Fatalf("after %d adds, XRANGE rev=%v count=%d: %d entries, want %v", i, c.rev, c.count, len(got), want)
			}
			for j := range want {
				if string(got[j].Name) != want[j] {
					t.Fatalf("after %d adds, XRANGE rev=%v count=%d: entry %d is %s, want %s", i, c.rev, c.count, j, got[j].Name, want[j])
				}
			}
		}
	}
}
