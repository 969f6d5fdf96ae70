package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"anykv/internal/collections"
	"anykv/internal/engine"
)

// elems lists a list's elements as LRANGE 0 -1 reads them.
func elems(t *testing.T, e engine.Engine, key string) string {
	t.Helper()
	r := apply(t, e, collections.Range("t", []byte(key), 0, -1))[0]
	if r.Err != nil {
		t.Fatalf("range of %q: %v", key, r.Err)
	}
	var out []string
	for _, m := range r.Members {
		out = append(out, string(m.Item.Value))
	}
	return fmt.Sprint(out)
}

func vals(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// testLists checks the list functions (engine.OpCall): pushes and pops at both ends, indexes, ranges, trims,
// removals, inserts and moves, each atomic within its batch.
func testLists(t *testing.T, e engine.Engine) {
	k := []byte("l")
	r := apply(t, e, collections.Push("t", k, false, false, vals("b", "c")...), collections.Push("t", k, true, false, vals("a", "z")...))
	if collections.Int(r[0]) != 2 || collections.Int(r[1]) != 4 {
		t.Fatalf("push lengths: %+v", r)
	}
	if got := elems(t, e, "l"); got != "[z a b c]" {
		t.Fatalf("list = %s", got)
	}
	if it, _ := get(t, e, "t", "l"); it.Kind != engine.KindList {
		t.Fatalf("kind = %v", it.Kind)
	}
	if r := apply(t, e, collections.Index("t", k, -1), collections.Index("t", k, 1), collections.Index("t", k, 9)); string(r[0].New.Value) != "c" ||
		string(r[1].New.Value) != "a" || !errors.Is(r[2].Err, engine.ErrNotFound) {
		t.Fatalf("index: %+v", r)
	}
	if r := apply(t, e, collections.Set("t", k, 1, []byte("A")), collections.Set("t", k, 7, []byte("x")))[1]; !errors.Is(r.Err, collections.ErrOutOfRange) {
		t.Fatalf("set out of range: %+v", r)
	}
	r = apply(t, e, collections.Pop("t", k, true, -1), collections.Pop("t", k, false, 2))
	if string(r[0].New.Value) != "z" || len(r[1].Members) != 2 || string(r[1].Members[0].Item.Value) != "c" {
		t.Fatalf("pops: %+v", r)
	}
	if got := elems(t, e, "l"); got != "[A]" {
		t.Fatalf("after pops = %s", got)
	}
	apply(t, e, collections.Pop("t", k, true, 5))
	wantMissing(t, e, "t", "l") // the last pop removed the list
	wantErr(t, apply(t, e, collections.Pop("t", k, true, -1))[0], engine.ErrNotFound)
	if r := apply(t, e, collections.Push("t", k, true, true, vals("x")...))[0]; collections.Int(r) != 0 {
		t.Fatalf("pushx on a missing list: %+v", r)
	}
	wantMissing(t, e, "t", "l")

	apply(t, e, collections.Push("t", k, false, false, vals("1", "2", "3", "2", "1", "2")...))
	if r := apply(t, e, collections.Range("t", k, 1, -2))[0]; len(r.Members) != 4 {
		t.Fatalf("range 1 -2: %+v", r.Members)
	}
	if r := apply(t, e, collections.Rem("t", k, -1, []byte("2")))[0]; collections.Int(r) != 1 {
		t.Fatalf("rem: %+v", r)
	}
	if got := elems(t, e, "l"); got != "[1 2 3 2 1]" {
		t.Fatalf("after rem -1 = %s", got)
	}
	apply(t, e, collections.Rem("t", k, 0, []byte("1")))
	if r := apply(t, e, collections.Insert("t", k, true, []byte("3"), []byte("x")), collections.Insert("t", k, false, []byte("nope"), []byte("y"))); collections.Int(r[0]) != 4 || collections.Int(r[1]) != -1 {
		t.Fatalf("insert: %+v", r)
	}
	if got := elems(t, e, "l"); got != "[2 x 3 2]" {
		t.Fatalf("after insert = %s", got)
	}
	apply(t, e, collections.Trim("t", k, 1, 2))
	if got := elems(t, e, "l"); got != "[x 3]" {
		t.Fatalf("after trim = %s", got)
	}

	// Moves: to another list (created), within one list (rotation), and refused onto another kind.
	r = apply(t, e, collections.Move("t", k, "t", []byte("m"), true, false), collections.Move("t", []byte("m"), "t", []byte("m"), false, true))
	if string(r[0].New.Value) != "x" || string(r[1].New.Value) != "x" {
		t.Fatalf("moves: %+v", r)
	}
	apply(t, e, set("t", "s", "str"))
	wantErr(t, apply(t, e, collections.Move("t", k, "t", []byte("s"), true, true))[0], engine.ErrWrongType)
	if got := elems(t, e, "l"); got != "[3]" {
		t.Fatalf("a refused move changed the source: %s", got)
	}
	wantErr(t, apply(t, e, collections.Push("t", []byte("s"), true, false, vals("v")...))[0], engine.ErrWrongType)

	// A batch's pushes and pops see each other; an aborted batch leaves the list as it was.
	r = apply(t, e, collections.Push("t", []byte("q"), false, false, vals("1")...), collections.Pop("t", []byte("q"), true, -1),
		collections.Pop("t", []byte("q"), true, -1))
	if string(r[1].New.Value) != "1" || !errors.Is(r[2].Err, engine.ErrNotFound) {
		t.Fatalf("in-batch push/pop: %+v", r)
	}
}
