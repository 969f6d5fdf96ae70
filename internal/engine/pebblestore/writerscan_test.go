package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// scanFunc answers the keys of table "s" in [args[0], args[1]), in descending order if args[2] is "r", joined by
// commas: what a function reading a range inside a batch sees.
const scanFunc = "pebblestoretest.scan"

func init() {
	engine.RegisterFunc(scanFunc, func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		var keys []string
		fn := func(k []byte, _ engine.Item) bool { keys = append(keys, string(k)); return true }
		r := engine.Range{Start: args[0], End: args[1]}
		var err error
		if string(args[2]) == "r" {
			err = tx.ScanReverse("s", r, fn)
		} else {
			err = tx.Scan("s", r, fn)
		}
		return engine.Result{New: engine.Item{Value: []byte(strings.Join(keys, ","))}, NewFound: true}, err
	})
}

// TestGroupScansSeeTheOverlay: ranges read inside a group see what the group's earlier batches wrote and deleted,
// merged with what Pebble holds, in order, forward and backward, whatever the overlay's size: past 64 keys they
// are read from a sorted index of the overlay built at the group's first scan and kept by later writes
// (overlayRange), where each scan went through the whole overlay; a flush of the table mid-group starts it over.
// One group of 200 batches (the writer is held in a sync while they queue, in order), against a model.
func TestGroupScansSeeTheOverlay(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := openSerial(t, gfs)
	r := rand.New(rand.NewPCG(7, 7))
	model := map[string]bool{}
	key := func() string { return fmt.Sprintf("k%03d", r.IntN(400)) }
	for range 100 { // committed before the group: the scans merge them with the overlay
		k := key()
		mustApply(t, s, set("s", k, "v"))
		model[k] = true
	}
	gfs.hold()
	defer gfs.release()
	first := applyAsync(s, set("s", "first", "1"))
	waitFor(t, func() bool { return gfs.blocked() > 0 })
	model["first"] = true
	type scan struct {
		batch, mut int
		want       string
	}
	var scans []scan
	var outs []chan applyOut
	for b := range 200 {
		var muts []engine.Mutation
		for range 1 + r.IntN(4) {
			switch k := key(); r.IntN(12) {
			case 0, 1:
				muts = append(muts, engine.Mutation{Op: engine.OpDelete, Table: "s", Key: []byte(k)})
				delete(model, k)
			case 2, 3:
				m, want := randomScan(r, key, model)
				scans = append(scans, scan{b, len(muts), want})
				muts = append(muts, m)
			default:
				muts = append(muts, set("s", k, "v"))
				model[k] = true
			}
		}
		if b == 150 {
			muts = append(muts, engine.Mutation{Op: engine.OpFlush, Table: "s"})
			clear(model)
		}
		outs = append(outs, applyAsync(s, muts...))
		queued(t, s, b+1)
	}
	gfs.release()
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	res := make([][]engine.Result, len(outs))
	for i, ch := range outs {
		o := <-ch
		if o.err != nil {
			t.Fatalf("batch %d: %v", i, o.err)
		}
		res[i] = o.res
	}
	for i, sc := range scans {
		if got := string(res[sc.batch][sc.mut].New.Value); got != sc.want {
			t.Fatalf("scan %d (batch %d):\n got %s\nwant %s", i, sc.batch, got, sc.want)
		}
	}
}

// TestBatchScansSeeTheBatch: ranges read inside one batch see the batch's own earlier puts and deletes, merged
// with what Pebble holds, forward and backward: past 64 written keys the resolver reads them from a sorted index
// built at the batch's first scan and kept by later writes (engine's ownRange). Random batches against a model.
func TestBatchScansSeeTheBatch(t *testing.T) {
	s := open(t, nil, SyncNever)
	r := rand.New(rand.NewPCG(9, 9))
	model := map[string]bool{}
	key := func() string { return fmt.Sprintf("k%03d", r.IntN(400)) }
	for round := range 30 {
		var muts []engine.Mutation
		var want []string
		for range 50 + r.IntN(300) {
			switch k := key(); r.IntN(10) {
			case 0, 1:
				muts = append(muts, engine.Mutation{Op: engine.OpDelete, Table: "s", Key: []byte(k)})
				delete(model, k)
			case 2:
				m, w := randomScan(r, key, model)
				want = append(want, w)
				muts = append(muts, m)
			default:
				muts = append(muts, set("s", k, "v"))
				model[k] = true
			}
		}
		res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: muts}) // deletes of absent keys fail alone
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for j, m := range muts {
			if m.Op == engine.OpCall {
				if got := string(res[j].New.Value); got != want[i] {
					t.Fatalf("round %d, scan %d:\n got %s\nwant %s", round, i, got, want[i])
				}
				i++
			}
		}
	}
}

// randomScan is a scanFunc call over a random range of keys from key, forward or backward, and what it must
// answer over the keys model holds.
func randomScan(r *rand.Rand, key func() string, model map[string]bool) (engine.Mutation, string) {
	lo, hi := key(), key()
	if lo > hi {
		lo, hi = hi, lo
	}
	dir := ""
	if r.IntN(2) == 0 {
		dir = "r"
	}
	var in []string
	for k := range model {
		if k >= lo && k < hi {
			in = append(in, k)
		}
	}
	slices.Sort(in)
	if dir == "r" {
		slices.Reverse(in)
	}
	return engine.Mutation{Op: engine.OpCall, Table: "s", Key: []byte("scan"),
		Call: engine.CallArgs{Name: scanFunc, Args: [][]byte{[]byte(lo), []byte(hi), []byte(dir)}}}, strings.Join(in, ",")
}
