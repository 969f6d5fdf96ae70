package engine

import (
	"errors"
	"testing"
)

// A function that writes the keys its arguments name, through Tx.Apply as a script's commands do.
func init() {
	RegisterFunc("test.setkeys", func(tx *Tx, args [][]byte) (Result, error) {
		muts := make([]Mutation, len(args))
		for i, k := range args {
			muts[i] = set(tx.Table(), string(k), "v")
		}
		_, err := tx.Apply(muts)
		return Result{}, err
	})
}

// A call may write only the keys it names, unless Call.AnyKey: then it may write any key of its table (not of
// another), and the keys beyond those named come back in Result.Wrote, each once, in the order first written.
func TestCallAnyKeyWritesUndeclaredKeysAndReportsThem(t *testing.T) {
	call := func(anyKey bool, table string, keys ...string) Mutation {
		m := Mutation{Op: OpCall, Table: "t", Key: []byte("named"),
			Call: CallArgs{Name: "test.setkeys", Keys: [][]byte{[]byte("declared")}, AnyKey: anyKey}}
		for _, k := range keys {
			m.Call.Args = append(m.Call.Args, []byte(k))
		}
		m.Table = table
		return m
	}
	v := uint64(0)
	next := func() uint64 { v++; return v }
	batch := func(m Mutation) ([]Write, []Result, error) {
		return Resolve(mapReader{}, &Batch{Now: 1, Muts: []Mutation{m}}, next)
	}
	if _, _, err := batch(call(false, "t", "named", "declared", "job:1")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an undeclared write without AnyKey: err %v, want ErrInvalid", err)
	}
	writes, res, err := batch(call(true, "t", "named", "job:1", "declared", "job:2", "job:1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 4 {
		t.Fatalf("%d writes, want 4: %+v", len(writes), writes)
	}
	if got := res[0].Wrote; len(got) != 2 || string(got[0]) != "job:1" || string(got[1]) != "job:2" {
		t.Fatalf("Wrote = %q, want [job:1 job:2]", got)
	}

	// AnyKey is about the call's own table: the function's mutation of another table still fails the batch.
	m := call(true, "t")
	RegisterFunc("test.othertable", func(tx *Tx, _ [][]byte) (Result, error) {
		_, err := tx.Apply([]Mutation{set("u", "k", "v")})
		return Result{}, err
	})
	m.Call.Name = "test.othertable"
	if _, _, err := batch(m); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a write of another table with AnyKey: err %v, want ErrInvalid", err)
	}

	// The Apply that would write another table is refused whole, before any of it applies, and the function
	// may go on (a script's pcall): the batch then applies what it wrote.
	RegisterFunc("test.othertableignored", func(tx *Tx, _ [][]byte) (Result, error) {
		if _, err := tx.Apply([]Mutation{set("t", "mine", "v"), set("u", "k", "v")}); !errors.Is(err, ErrOutsideTable) {
			return Result{}, errors.New("the write of another table was not refused with ErrOutsideTable")
		}
		_, err := tx.Apply([]Mutation{set("t", "after", "v")})
		return Result{}, err
	})
	m.Call.Name = "test.othertableignored"
	writes, _, err = batch(m)
	if err != nil || len(writes) != 1 || string(writes[0].Key) != "after" {
		t.Fatalf("after a refused Apply: err %v, writes %+v, want only t/after", err, writes)
	}
}
