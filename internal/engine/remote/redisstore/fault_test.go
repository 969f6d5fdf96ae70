package redisstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

// TestCommitFaults: a commit whose answer was lost is reported, never retried (a retry would increment twice);
// a conflict is retried until it commits.
func TestCommitFaults(t *testing.T) {
	url := "redis://" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://") + "/0?prefix=fault:"
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	incr := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("n"), Incr: engine.IncrArgs{Delta: 1, Create: true}}}}
	value := func() string {
		it, err := s.Get(ctx, "t", []byte("n"), 1)
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Value)
	}

	lost := &remotetest.Faulty{Backend: s.b, After: func(err error) error {
		if err != nil {
			return err
		}
		return errors.Join(remote.ErrUnknownOutcome, errors.New("connection reset after the script was sent"))
	}}
	_, err = remote.New(lost).Apply(ctx, incr)
	if !errors.Is(err, remote.ErrUnknownOutcome) || lost.Commits != 1 {
		t.Fatalf("lost answer: err %v after %d commits, want ErrUnknownOutcome after 1", err, lost.Commits)
	}
	if v := value(); v != "1" {
		t.Fatalf("after a lost answer n = %s, want 1 (applied once)", v)
	}

	// The first two commits meet a concurrent write (made between the read and the commit), are refused by the
	// real commit script and retried; the increment is applied once, on the third.
	racing := &remotetest.Faulty{Backend: s.b, Before: func(n int) {
		if n <= 2 {
			set := engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("n"), Value: []byte("10")}
			if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set}}); err != nil {
				t.Error(err)
			}
		}
	}}
	res, err := remote.New(racing).Apply(ctx, incr)
	if err != nil || racing.Commits != 3 || string(res[0].New.Value) != "11" {
		t.Fatalf("conflicts: %v after %d commits, result %+v", err, racing.Commits, res)
	}
	if v := value(); v != "11" {
		t.Fatalf("after conflicts n = %s, want 11", v)
	}
}

// TestLostCommitAnswerIsNotResent: the connection drops after the commit script reached Redis and ran, before
// its answer came back. The client must report the outcome as unknown; go-redis's own retry (on by default)
// would send the script again on a new connection, meet the versions the first run wrote, and turn a lost
// answer into a conflict that remote retries: an INCR applied twice.
func TestLostCommitAnswerIsNotResent(t *testing.T) {
	target := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	var armed atomic.Bool
	ran := make(chan struct{}, 1)
	addr := remotetest.Proxy(t, target, remotetest.CutAnswer(func(req []byte) bool {
		return bytes.Contains(req, []byte(commitScript.Hash())) && armed.CompareAndSwap(true, false)
	}, ran))
	s, err := Open(context.Background(), "redis://"+addr+"/0?prefix=lost:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	incr := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("n"), Incr: engine.IncrArgs{Delta: 1, Create: true}}}}
	if _, err := s.Apply(ctx, incr); err != nil { // loads the scripts, so the cut commit is an EVALSHA that runs
		t.Fatal(err)
	}
	armed.Store(true)
	_, err = s.Apply(ctx, incr)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("the commit never reached the proxy armed to cut it (Apply: %v)", err)
	}
	if !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Errorf("a commit whose answer was lost answered %v, want ErrUnknownOutcome", err)
	}
	it, err := s.Get(ctx, "t", []byte("n"), 1)
	if err != nil || string(it.Value) != "2" {
		t.Fatalf("n = %q (%v) after one increment and one whose answer was lost, want 2: applied once", it.Value, err)
	}
}
