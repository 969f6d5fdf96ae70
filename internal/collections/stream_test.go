package collections

import (
	"context"
	"fmt"
	"strconv"
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

// A "~" trim deletes only whole nodes (StreamTrim): a stream capped with XADD MAXLEN ~ keeps at least MAXLEN
// entries and deletes a node's worth at once, when a whole node lies beyond MAXLEN, from the oldest entry on;
// LIMIT caps a call's deletions (0: none) and MINID ~ keeps the node its ID falls in. Without "~" the trim is
// exact whatever LIMIT and the node size say.
func TestStreamApproxTrimWholeNodes(t *testing.T) {
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
	all := ID{MS: ^uint64(0), Seq: ^uint64(0)}
	first := func(key []byte) string {
		ms := apply(XRange("t", key, ID{}, all, false, 1)).Members
		if len(ms) == 0 {
			return ""
		}
		return string(ms[0].Name)
	}
	add := func(key []byte, n uint64, trim StreamTrim) int64 {
		t.Helper()
		trimmed, _ := strconv.ParseInt(string(apply(XAdd("t", key, []byte(fmt.Sprintf("%d-0", n)), false, trim,
			[]byte("f"), []byte("v"))).Old.Value), 10, 64)
		return trimmed
	}
	trimmed := func(m engine.Mutation) int64 {
		t.Helper()
		n, _ := strconv.ParseInt(string(apply(m).New.Value), 10, 64)
		return n
	}
	capped := StreamTrim{By: "maxlen", MaxLen: 50, Approx: true, Node: 10, Limit: 1000}
	for i := uint64(1); i <= 500; i++ {
		trimmed := add([]byte("capped"), i, capped)
		n := apply(XRange("t", []byte("capped"), ID{}, all, false, -1)).Members
		switch {
		case int64(i) <= 59 && trimmed != 0, int64(i) > 59 && trimmed != map[bool]int64{true: 10, false: 0}[i%10 == 0]:
			t.Fatalf("add %d trimmed %d: the stream had %d entries", i, trimmed, len(n)+int(trimmed)-1)
		case len(n) != int(min(i, 50+i%10)):
			t.Fatalf("after add %d the stream has %d entries, want %d", i, len(n), min(i, 50+i%10))
		case string(n[0].Name) != fmt.Sprintf("%d-0", i-uint64(len(n))+1):
			t.Fatalf("after add %d the stream starts at %s", i, n[0].Name)
		}
	}

	key := []byte("limited")
	for i := uint64(1); i <= 100; i++ {
		add(key, i, StreamTrim{})
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 5, Approx: true, Node: 10, Limit: 35})); got != 30 {
		t.Fatalf("MAXLEN ~ 5 LIMIT 35 (nodes of 10) trimmed %d, want 30", got)
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 5, Approx: true, Node: 10, Limit: 9})); got != 0 {
		t.Fatalf("MAXLEN ~ 5 LIMIT 9 (nodes of 10) trimmed %d, want 0", got)
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 67, Limit: 9, Node: 10})); got != 3 {
		t.Fatalf("MAXLEN 67 (exact) trimmed %d, want 3", got)
	}
	// The first node has 7 entries left (34-0 to 40-0): they go alone, or with whole nodes after them.
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 55, Approx: true, Node: 10})); got != 7 || first(key) != "41-0" {
		t.Fatalf("MAXLEN ~ 55 trimmed %d, the stream starts at %s; want 7, 41-0", got, first(key))
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "minid", MinID: ID{MS: 75}, Approx: true, Node: 10})); got != 30 || first(key) != "71-0" {
		t.Fatalf("MINID ~ 75 trimmed %d, the stream starts at %s; want 30, 71-0", got, first(key))
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 0, Approx: true, Node: 10})); got != 30 || first(key) != "" {
		t.Fatalf("MAXLEN ~ 0 trimmed %d, the stream starts at %q; want 30, empty", got, first(key))
	}
	// Emptied, the stream starts its nodes again with the next entry.
	for i := uint64(101); i <= 115; i++ {
		add(key, i, StreamTrim{})
	}
	if got := trimmed(XTrim("t", key, StreamTrim{By: "maxlen", MaxLen: 1, Approx: true, Node: 10})); got != 10 || first(key) != "111-0" {
		t.Fatalf("MAXLEN ~ 1 after emptying trimmed %d, the stream starts at %s; want 10, 111-0", got, first(key))
	}
}
