package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// rangeMap is a mapReader that can list a table in key order (a RangeReader without RangeReverse).
type rangeMap struct{ mapReader }

func (m rangeMap) Range(table string, r Range, fn func([]byte, Item) bool) error {
	var keys []string
	for k := range m.mapReader[table] {
		if r.Contains([]byte(k)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !fn([]byte(k), m.mapReader[table][k]) {
			break
		}
	}
	return nil
}

// reverseMap adds RangeReverse, as the embedded engines have it.
type reverseMap struct{ rangeMap }

func (m reverseMap) RangeReverse(table string, r Range, fn func([]byte, Item) bool) error {
	var keys [][]byte
	var items []Item
	_ = m.Range(table, r, func(k []byte, it Item) bool { keys, items = append(keys, k), append(items, it); return true })
	for i := len(keys) - 1; i >= 0 && fn(keys[i], items[i]); i-- {
	}
	return nil
}

// test.scanboth writes its arguments' keys ("+k" puts, "-k" deletes), then scans [start, end) forward and in
// reverse as the batch sees it, and returns both lists in Members, forward first, then a "|", then reverse.
func init() {
	RegisterFunc("test.scanboth", func(tx *Tx, args [][]byte) (Result, error) {
		for _, a := range args[2:] {
			if a[0] == '+' {
				tx.Put(tx.Table(), a[1:], Item{Value: []byte("v")})
			} else {
				tx.Delete(tx.Table(), a[1:])
			}
		}
		r := Range{Start: args[0], End: args[1]}
		if len(r.End) == 0 {
			r.End = nil
		}
		var out Result
		add := func(k []byte, _ Item) bool {
			out.Members = append(out.Members, Member{Name: append([]byte(nil), k...)})
			return true
		}
		if err := tx.Scan(tx.Table(), r, add); err != nil {
			return Result{}, err
		}
		out.Members = append(out.Members, Member{Name: []byte("|")})
		return out, tx.ScanReverse(tx.Table(), r, add)
	})
}

// Tx.ScanReverse lists exactly what Tx.Scan lists, backwards: the engine's items merged with the batch's own
// puts and deletes, over a reader with RangeReverse and over one without it (read forward, then reversed).
func TestScanReverseIsScanBackwards(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for round := 0; round < 300; round++ {
		stored := mapReader{"t": {}}
		live := map[string]bool{}
		for i := rng.IntN(12); i > 0; i-- {
			k := fmt.Sprintf("k%d", rng.IntN(20))
			stored["t"][k], live[k] = Item{Value: []byte("v")}, true
		}
		m := Mutation{Op: OpCall, Table: "t", Key: []byte("k0"), Call: CallArgs{Name: "test.scanboth", AnyKey: true}}
		start, end := fmt.Sprintf("k%d", rng.IntN(20)), fmt.Sprintf("k%d", rng.IntN(20))
		if rng.IntN(3) == 0 {
			end = ""
		}
		m.Call.Args = [][]byte{[]byte(start), []byte(end)}
		for i := rng.IntN(8); i > 0; i-- {
			k := fmt.Sprintf("k%d", rng.IntN(20))
			if rng.IntN(2) == 0 {
				m.Call.Args, live[k] = append(m.Call.Args, []byte("+"+k)), true
			} else {
				m.Call.Args = append(m.Call.Args, []byte("-"+k))
				delete(live, k)
			}
		}
		var want []string
		for k := range live {
			if k >= start && (end == "" || k < end) {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		back := slices.Clone(want)
		slices.Reverse(back)
		want = append(append(want, "|"), back...)
		for _, r := range []Reader{rangeMap{stored}, reverseMap{rangeMap{stored}}} {
			v := uint64(0)
			_, res, err := Resolve(r, &Batch{Now: 1, Muts: []Mutation{m}}, func() uint64 { v++; return v })
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, mem := range res[0].Members {
				got = append(got, string(mem.Name))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, %T, range [%s, %s) with %q over %v: got %v, want %v", round, r, start, end, m.Call.Args[2:], stored["t"], got, want)
			}
		}
	}
}
