package mysqlstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

// testRefusalIsTheBatchsOwn: a batch whose statement the server refuses (a key over the key column) fails by
// itself, not the other batches group commit put in the same commit: until 2026-12-02 the whole group got the
// server's "Data too long" and nothing of it was applied, so one client's long key failed other clients' writes.
func testRefusalIsTheBatchsOwn(t *testing.T, server string) {
	s := open(t, freshDB(t, server))
	defer s.Close()
	ctx := context.Background()
	set := func(k string) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}}}
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	f := &remotetest.Faulty{Backend: s.b, Before: func(n int) {
		if n == 1 { // hold the first group's commit while the next group queues behind it
			close(entered)
			<-release
		}
	}}
	e := remote.New(f)
	e.GroupMuts = s.Engine.GroupMuts
	first := make(chan error, 1)
	go func() { _, err := e.Apply(ctx, set("first")); first <- err }()
	<-entered
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, k := range []string{strings.Repeat("k", 3000), "innocent"} {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = e.Apply(ctx, set(k)) }()
	}
	time.Sleep(time.Second) // both queue for the next group
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if errs[0] == nil || errors.Is(errs[0], remote.ErrUnknownOutcome) {
		t.Fatalf("too long a key: %v, want the server's refusal", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("a batch grouped with a refused one: %v, want it applied", errs[1])
	}
	if it, err := s.Get(ctx, "t", []byte("innocent"), 1); err != nil || string(it.Value) != "v" {
		t.Fatalf("innocent = %q, %v; want v", it.Value, err)
	}
	if f.Commits != 4 { // the first; the group, refused; each of its batches alone
		t.Fatalf("%d commits, want 4: the two batches were not grouped, the test proves nothing", f.Commits)
	}
}
