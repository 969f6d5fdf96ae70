package pebblestore

import (
	"fmt"
	"testing"

	"anykv/internal/engine"
)

// TestWritesBufferKeepsNoAnsweredWrites: a batch whose writes outgrow the writer's kept buffer (append moves them
// to a bigger array, past maxKeptWrites) must not leave its first writes in the buffer kept for the next batch
// (the review found 3,662 keys and values of an answered batch kept so).
func TestWritesBufferKeepsNoAnsweredWrites(t *testing.T) {
	engine.RegisterFunc("pebblestoretest.many", func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		for i := 0; i < 5000; i++ {
			tx.Put(tx.Table(), []byte(fmt.Sprint("k", i)), engine.Item{Value: []byte("secret-value-of-batch-B")})
		}
		return engine.Result{}, nil
	})
	s := open(t, nil, SyncNever)
	w := newWriter(s, 1<<40) // a second writer, driven by hand (resolve only)
	mk := func(b *engine.Batch) *request {
		r := &request{batch: b, done: make(chan struct{})}
		r.bytes = r.size()
		r.state.Store(reqTaken)
		return r
	}
	var muts []engine.Mutation
	for i := 0; i < 2440; i++ {
		muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(fmt.Sprint("a", i)), Value: []byte("x")})
	}
	w.reqs = []*request{mk(&engine.Batch{Now: now, Muts: muts})}
	w.resolveGroup()
	if w.reqs[0].err != nil {
		t.Fatal(w.reqs[0].err)
	}
	w.pb.Reset()
	w.closeIters()
	c1 := cap(w.wbuf)
	t.Logf("after batch A: cap(wbuf)=%d", c1)
	w.reqs = []*request{mk(&engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpCall, Table: "t", Key: []byte("k0"),
		Call: engine.CallArgs{Name: "pebblestoretest.many", AnyKey: true}}}})}
	w.resolveGroup()
	if w.reqs[0].err != nil {
		t.Fatal(w.reqs[0].err)
	}
	w.pb.Reset()
	w.closeIters()
	stale := 0
	for _, wr := range w.wbuf[:cap(w.wbuf)] {
		if wr.Key != nil || wr.Item.Value != nil {
			stale++
		}
	}
	t.Logf("after batch B: cap(wbuf)=%d, stale entries=%d", cap(w.wbuf), stale)
	if stale > 0 {
		t.Fatalf("the kept writes buffer holds %d writes of an answered batch (e.g. %q=%q)", stale, w.wbuf[:1][0].Key, w.wbuf[:1][0].Item.Value)
	}
}
