package remote

import (
	"context"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

// rangeBackend is stampBackend (which also serves as the Ranger) recording the range checks commits get.
type rangeBackend struct {
	*stampBackend
	got [][]RangeCheck
}

func (b *rangeBackend) CommitRanges(ctx context.Context, checks []Check, ranges []RangeCheck, w *Writes, tok any) error {
	b.got = append(b.got, ranges)
	return b.Commit(ctx, checks, w, tok)
}

func init() {
	// remotetest.scan reads up to Args[0] keys of its table (0: all) and writes its own key.
	engine.RegisterFunc("remotetest.scan", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		limit, n := 0, 0
		fmt.Sscan(string(args[0]), &limit)
		err := tx.Scan(tx.Table(), engine.Range{}, func([]byte, engine.Item) bool { n++; return limit == 0 || n < limit })
		tx.Put(tx.Table(), tx.Key(), engine.Item{Value: []byte("x")})
		return engine.Result{}, err
	})
}

// TestRangeReadsAreChecked: a batch's range read of a client's table reaches a RangeCommitter's commit as the keys
// and versions it saw, ending where the read stopped (the rest of the table was not read and needs no check), or
// at the table's end; a batch that read no range commits with Commit.
func TestRangeReadsAreChecked(t *testing.T) {
	b := &rangeBackend{stampBackend: newStampBackend()}
	e := New(b)
	e.Ranger = b
	ctx := context.Background()
	apply := func(muts ...engine.Mutation) {
		t.Helper()
		if _, err := e.Apply(ctx, &engine.Batch{Now: 1, Muts: muts}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		apply(engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte(k)})
	}
	b.got = nil
	apply(engine.CallMutation("t", []byte("z"), "remotetest.scan", []byte("2")))
	apply(engine.CallMutation("t", []byte("z"), "remotetest.scan", []byte("0")))
	apply(engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("y"), Value: []byte("v")})
	var desc []string
	for _, rs := range b.got {
		var one []string
		for _, r := range rs {
			end := "end"
			if r.End != nil {
				end = fmt.Sprintf("%q", r.End)
			}
			one = append(one, fmt.Sprintf("%s [%q,%s) %q %v", r.Table, r.Start, end, r.Keys, r.Versions))
		}
		desc = append(desc, fmt.Sprint(one))
	}
	want := []string{ // the plain SET's commit checks no range: Commit, not CommitRanges
		`[t ["","b\x00") ["a" "b"] [1 2]]`,
		`[t ["",end) ["a" "b" "c" "z"] [1 2 3 4]]`,
	}
	if fmt.Sprint(desc) != fmt.Sprint(want) {
		t.Fatalf("range checks committed:\n%q\nwant\n%q", desc, want)
	}
}
