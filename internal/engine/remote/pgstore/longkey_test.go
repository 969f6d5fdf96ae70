package pgstore_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/pgstore"
	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/kv"
	"anykv/internal/protocol/errmap"
)

// TestLongKeyIsBadInput: a key PostgreSQL's primary key index cannot hold (an incompressible key of 3000 bytes:
// a btree row holds 2704 at most; anykv's key limit is 64 KiB) is the client's bad input, answered as one (HTTP
// 400, nothing written), and fails only its own batch: it was an internal error (500), and, group-committed with
// other clients' writes, every one of theirs failed with it (37 of 40 concurrent good PUTs).
func TestLongKeyIsBadInput(t *testing.T) {
	s := kv.New(remotetest.Open(t, pgstore.Open, freshDB(t, remotetest.Start(t, "postgres"))), kv.Options{SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	long := make([]byte, 3000)
	for i := range long {
		long[i] = byte(rand.N(256))
	}
	set := func(k []byte) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: []byte("v")}
	}
	if res := s.Apply1(ctx, set(long)); errmap.Of(res.Err).Status != http.StatusBadRequest {
		t.Fatalf("a 3000-byte key: %v answered %d, want 400", res.Err, errmap.Of(res.Err).Status)
	}
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(2)
		go func() { defer wg.Done(); s.Apply1(ctx, set(long)) }()
		go func() { defer wg.Done(); errs[i] = s.Apply1(ctx, set([]byte{'g', byte(i)})).Err }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("good write %d beside the long key's: %v", i, err)
		}
	}
	if n, err := s.Count(ctx, "t", kv.Query{}); err != nil || n != 40 {
		t.Fatalf("%d items, %v; want the 40 good ones", n, err)
	}
}
