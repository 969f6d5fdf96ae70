package lincheck

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func check(ops ...porcupine.Operation) bool { return porcupine.CheckOperations(Model, ops) }

func TestModelAcceptsLinearizableHistories(t *testing.T) {
	put := Input{Kind: Put, Key: "k", Value: "1"}
	get := Input{Kind: Get, Key: "k"}
	cases := map[string][]porcupine.Operation{
		"read after write": {op(0, 0, 10, put, Output{}), op(1, 20, 30, get, Output{Value: "1"})},
		"read concurrent with write may see either": {op(0, 0, 10, put, Output{}),
			op(1, 5, 15, get, Output{Value: ""}), op(2, 5, 15, get, Output{Value: "1"})},
		"cas from absent": {op(0, 0, 10, Input{Kind: CAS, Key: "k", Value: "a"}, Output{OK: true}),
			op(1, 20, 30, Input{Kind: CAS, Key: "k", Expect: "b", Value: "c"}, Output{OK: false}),
			op(1, 40, 50, get, Output{Value: "a"})},
		"unknown write may have happened": {op(0, 0, math.MaxInt64, put, Output{Unknown: true}),
			op(1, 20, 30, get, Output{Value: "1"})},
		"unknown write may not have happened": {op(0, 0, math.MaxInt64, put, Output{Unknown: true}),
			op(1, 20, 30, get, Output{Value: ""})},
		"keys are independent": {op(0, 0, 10, put, Output{}),
			op(1, 20, 30, Input{Kind: Get, Key: "other"}, Output{Value: ""})},
	}
	for name, h := range cases {
		if !check(h...) {
			t.Errorf("%s: judged not linearizable", name)
		}
	}
}

func TestModelRejectsStaleAndLostWrites(t *testing.T) {
	put1 := Input{Kind: Put, Key: "k", Value: "1"}
	put2 := Input{Kind: Put, Key: "k", Value: "2"}
	get := Input{Kind: Get, Key: "k"}
	cases := map[string][]porcupine.Operation{
		"stale read": {op(0, 0, 10, put1, Output{}), op(0, 20, 30, put2, Output{}),
			op(1, 40, 50, get, Output{Value: "1"})},
		"read of a value never written": {op(1, 0, 10, get, Output{Value: "x"})},
		"read going back": {op(0, 0, 100, put1, Output{}), op(1, 10, 20, get, Output{Value: "1"}),
			op(2, 30, 40, get, Output{Value: ""})},
		"two cas from absent both won": {op(0, 0, 10, Input{Kind: CAS, Key: "k", Value: "a"}, Output{OK: true}),
			op(1, 20, 30, Input{Kind: CAS, Key: "k", Value: "b"}, Output{OK: true})},
		"acknowledged write lost": {op(0, 0, 10, put1, Output{}), op(1, 20, 30, get, Output{Value: ""})},
	}
	for name, h := range cases {
		if check(h...) {
			t.Errorf("%s: judged linearizable", name)
		}
	}
}

func TestHistoryRecordsWhatClientsLearnt(t *testing.T) {
	h := NewHistory()
	c := h.Call()
	h.Done(0, Input{Kind: Put, Key: "k", Value: "1"}, c, Output{}, nil)
	c = h.Call()
	h.Done(1, Input{Kind: Get, Key: "k"}, c, Output{}, errors.New("timeout")) // dropped
	c = h.Call()
	h.Done(1, Input{Kind: Put, Key: "k", Value: "2"}, c, Output{}, errors.New("timeout")) // unknown
	c = h.Call()
	h.Done(2, Input{Kind: Get, Key: "k"}, c, Output{Value: "1"}, nil)
	if h.Len() != 3 {
		t.Fatalf("%d operations recorded, want 3 (a failed read is dropped)", h.Len())
	}
	if err := h.Check(10*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	c = h.Call()
	h.Done(2, Input{Kind: Get, Key: "k"}, c, Output{Value: "3"}, nil)
	if err := h.Check(10*time.Second, t.TempDir()+"/viz.html"); err == nil {
		t.Fatal("a read of a value never written passed the check")
	}
}
