package kv

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

type ctxKey struct{}

func itoa(i int) string { return strconv.Itoa(i) }

// TestOnAppliedHearsEveryBatch: while set, OnApplied's function hears every batch Apply and ApplyWatched applied,
// with the caller's context, and EachWritten names what it changed (a delete of an absent key changes nothing, a
// flush is a flush); once unset it hears nothing.
func TestOnAppliedHearsEveryBatch(t *testing.T) {
	s := New(memstore.New(), Options{SweepInterval: -1})
	defer s.Close()
	var got []string
	s.OnApplied(func(ctx context.Context, muts []engine.Mutation, res []engine.Result) {
		who, _ := ctx.Value(ctxKey{}).(string)
		EachWritten(muts, res, func(i int, table string, key []byte) { got = append(got, who+":"+itoa(i)+table+"/"+string(key)) },
			func(i int, table string) { got = append(got, who+":"+itoa(i)+"flush "+table) })
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "a")
	if _, err := s.Apply(ctx, []engine.Mutation{wset("t", "k"), wdel("t", "absent"), {Op: engine.OpGet, Table: "t", Key: []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	w := s.NewWatch()
	defer w.Release()
	if _, err := s.ApplyWatched(context.WithValue(ctx, ctxKey{}, "b"), w, []engine.Mutation{wdel("t", "k"), {Op: engine.OpFlush, Table: "u"}}); err != nil {
		t.Fatal(err)
	}
	s.OnApplied(nil)
	if _, err := s.Apply(ctx, []engine.Mutation{wset("t", "later")}); err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got, " "); g != "a:0t/k b:0t/k b:1flush u" {
		t.Fatalf("heard %q", g)
	}
}
