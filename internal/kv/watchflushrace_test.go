package kv

import (
	"context"
	"errors"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// orderedEngine holds a SET batch and a FLUSH batch inside the engine until the test lets each through.
type orderedEngine struct {
	engine.Engine
	setIn, setGo, flushIn, flushGo chan struct{}
}

func (o *orderedEngine) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	for _, m := range b.Muts {
		switch {
		case m.Op == engine.OpSet && string(m.Key) == "k":
			close(o.setIn)
			<-o.setGo
		case m.Op == engine.OpFlush:
			close(o.flushIn)
			<-o.flushGo
		}
	}
	return o.Engine.Apply(ctx, b)
}

// A write that began while nobody watched (Apply's fast path: no gate, no mark) creates the watched key after
// WATCH read it absent; a FLUSHDB whose liveWatched read ran before that write deletes it again. Serially:
// WATCH k (absent) < SET k < FLUSHDB < EXEC, which Redis aborts (k existed at the flush). Before 7c1cf6e the
// flush marked every watch of the table.
func TestFlushAfterUnmarkedCreateAbortsWatch(t *testing.T) {
	ctx := context.Background()
	o := &orderedEngine{Engine: memstore.New(), setIn: make(chan struct{}), setGo: make(chan struct{}),
		flushIn: make(chan struct{}), flushGo: make(chan struct{})}
	s := New(o, Options{SweepInterval: -1})
	defer s.Close()
	setDone := make(chan error, 1)
	go func() { _, err := s.Apply(ctx, []engine.Mutation{wset("t", "k")}); setDone <- err }() // active == 0: fast path
	<-o.setIn
	w := s.NewWatch()
	w.Add("t", []byte("k"))
	if _, err := s.GetAnyAt(ctx, "t", []byte("k"), s.Now()); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("WATCH read: %v, want not found", err)
	}
	flushDone := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, []engine.Mutation{{Op: engine.OpFlush, Table: "t"}})
		flushDone <- err
	}()
	<-o.flushIn // liveWatched ran: k absent
	close(o.setGo)
	if err := <-setDone; err != nil {
		t.Fatal(err)
	}
	close(o.flushGo)
	if err := <-flushDone; err != nil {
		t.Fatal(err)
	}
	// EXEC: the WATCH guard (version 0, k absent) passes, so only the dirty flag can abort.
	_, err := s.ApplyWatched(ctx, w, []engine.Mutation{
		{Op: engine.OpCheck, Table: "t", Key: []byte("k"), Cond: engine.CondVersion, Version: 0, Guard: true},
		wset("t", "x")})
	if !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("EXEC after WATCH k (absent), SET k, FLUSHDB: %v, want ErrAborted (Redis aborts)", err)
	}
	w.Release()
}
