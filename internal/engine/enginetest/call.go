package enginetest

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"anykv/internal/engine"
)

// fnWide is the suite's own function, shaped like a job queue's script: it increments the counter at its key and
// writes its argument at "job:<n>", a key its mutation does not name (with the key's {hash tag} in front, if it
// has one, as a script over a slotted namespace would keep its keys in one slot).
const fnWide = "enginetest.wide"

func init() {
	engine.RegisterFunc(fnWide, func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		it, found, err := tx.Get(tx.Table(), tx.Key())
		if err != nil {
			return engine.Result{}, err
		}
		n := 0
		if found {
			n, _ = strconv.Atoi(string(it.Value))
		}
		n++
		tx.Put(tx.Table(), tx.Key(), engine.Item{Value: []byte(strconv.Itoa(n))})
		job := []byte("job:" + strconv.Itoa(n))
		if k := tx.Key(); len(k) > 0 && k[0] == '{' {
			if j := bytes.IndexByte(k, '}'); j > 0 {
				job = append(append([]byte(nil), k[:j+1]...), job...)
			}
		}
		tx.Put(tx.Table(), job, engine.Item{Value: args[0]})
		return engine.Result{}, nil
	})
}

// testCallAnyKey: a function call may write keys its mutation does not name only with Call.AnyKey (a Lua script
// that builds key names as it runs); without it the batch is refused with ErrUndeclaredWrite and nothing of it is
// applied, with it every write lands and Result.Wrote names the undeclared keys.
func testCallAnyKey(t *testing.T, e engine.Engine) {
	call := func(anyKey bool) engine.Mutation {
		return engine.Mutation{Op: engine.OpCall, Table: "t", Key: []byte("id"),
			Call: engine.CallArgs{Name: fnWide, Args: [][]byte{[]byte("payload")}, AnyKey: anyKey}}
	}
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{call(false)}}); !errors.Is(err, engine.ErrUndeclaredWrite) {
		t.Fatalf("a call writing an undeclared key without AnyKey: %v, want ErrUndeclaredWrite", err)
	}
	wantMissing(t, e, "t", "id")
	wantMissing(t, e, "t", "job:1")
	r := apply(t, e, call(true), call(true))
	if len(r[0].Wrote) != 1 || string(r[0].Wrote[0]) != "job:1" || len(r[1].Wrote) != 1 || string(r[1].Wrote[0]) != "job:2" {
		t.Fatalf("Wrote = %q and %q, want [job:1] and [job:2]", r[0].Wrote, r[1].Wrote)
	}
	wantValue(t, e, "t", "id", "2")
	wantValue(t, e, "t", "job:1", "payload")
	wantValue(t, e, "t", "job:2", "payload")
}
