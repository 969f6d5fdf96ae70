package engine

import (
	"bytes"
	"errors"
	"testing"
)

// Batch.Reserve is told what the batch's reads hold at each ReserveStep, and its refusal fails the batch whole
// (ErrReadBudget wrapping the refusal, an ErrBatchTooBig), nothing written, also when the read that crossed it
// is the batch's last or a later mutation of it carries on (a script's pcall).
func TestReserveCountsReadsAndRefuses(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 600<<10)
	r := mapReader{"t": {"k": {Value: big, Version: 1}}}
	get := Mutation{Op: OpGet, Table: "t", Key: []byte("k")}
	set := Mutation{Op: OpSet, Table: "t", Key: []byte("w"), Value: []byte("x")}
	v := uint64(0)
	next := func() uint64 { v++; return v }

	var told []int
	ok := func(held int) error { told = append(told, held); return nil }
	writes, _, err := Resolve(r, &Batch{Now: 1, Reserve: ok, Muts: []Mutation{get, get, get, get, set}}, next)
	if err != nil || len(writes) != 1 {
		t.Fatalf("4 GETs of 600 KiB and a SET, all reserved: %d writes, %v", len(writes), err)
	}
	if len(told) != 2 || told[0] != 2*len(big) || told[1] != 4*len(big) {
		t.Fatalf("Reserve told %v, want [%d %d] (past 1 MiB, then past 1 MiB more)", told, 2*len(big), 4*len(big))
	}
	small := []Mutation{{Op: OpGet, Table: "t", Key: []byte("w")}, set}
	told = nil
	if _, _, err := Resolve(r, &Batch{Now: 1, Reserve: ok, Muts: small}, next); err != nil || len(told) != 0 {
		t.Fatalf("a batch of small reads: %v, Reserve told %v; want no call", err, told)
	}

	full := errors.New("full")
	no := func(int) error { return full }
	for _, muts := range [][]Mutation{{set, get, get}, {set, get, get, set}} {
		writes, _, err := Resolve(r, &Batch{Now: 1, Reserve: no, Muts: muts}, next)
		if !errors.Is(err, ErrReadBudget) || !errors.Is(err, full) || !errors.Is(err, ErrBatchTooBig) || writes != nil {
			t.Fatalf("%d mutations refused by Reserve: %d writes, %v; want none and ErrReadBudget wrapping the refusal",
				len(muts), len(writes), err)
		}
	}
}

func init() {
	RegisterFunc("test.readsIgnoringErrors", func(tx *Tx, _ [][]byte) (Result, error) {
		get := Mutation{Op: OpGet, Table: "t", Key: []byte("k")}
		_, _ = tx.Apply([]Mutation{get, get, get}) // a script's pcall of its reads: the refusal is dropped
		return Result{}, nil
	})
}

// A function that reads past its batch's Reserve and drops the error (a script's pcall) still fails the batch.
func TestReserveRefusalOutlivesACaughtError(t *testing.T) {
	r := mapReader{"t": {"k": {Value: bytes.Repeat([]byte("v"), 600<<10), Version: 1}}}
	full := errors.New("full")
	call := Mutation{Op: OpCall, Table: "t", Key: []byte("k"), Call: CallArgs{Name: "test.readsIgnoringErrors"}}
	v := uint64(0)
	_, _, err := Resolve(r, &Batch{Now: 1, Reserve: func(int) error { return full }, Muts: []Mutation{call}},
		func() uint64 { v++; return v })
	if !errors.Is(err, ErrReadBudget) || !errors.Is(err, full) {
		t.Fatalf("a call that dropped its reads' refusal: %v, want ErrReadBudget", err)
	}
}
