package etcdstore_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/etcdstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func TestEtcd(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s?prefix=t%d/", server, prefixes.Add(1)) }
	remotetest.Suite(t, fresh, etcdstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}

// TestBatchesPastTheTxnBound: etcd refuses a Txn of more than 128 operations (--max-txn-ops). A batch that reads
// 300 keys (MGET) is read in parts at one revision and needs no commit; concurrent batches of 70 writes each,
// which etcd takes one by one but not grouped, all succeed (the audit: 5 of 6 refused for the others' sake).
func TestBatchesPastTheTxnBound(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	s := remotetest.Open(t, etcdstore.Open, fmt.Sprintf("%s?prefix=t%d/", server, prefixes.Add(1)))
	defer s.Close()
	ctx := context.Background()
	const now = int64(1_700_000_000_000)
	apply := func(muts []engine.Mutation) ([]engine.Result, error) {
		return s.Apply(ctx, &engine.Batch{Now: now, Muts: muts})
	}
	var sets, gets []engine.Mutation
	for i := range 300 {
		k := []byte(fmt.Sprint("k", i))
		gets = append(gets, engine.Mutation{Op: engine.OpGet, Table: "t", Key: k})
		if i%3 == 0 {
			sets = append(sets, engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: k})
		}
	}
	if _, err := apply(sets[:60]); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(sets[60:]); err != nil {
		t.Fatal(err)
	}
	res, err := apply(gets)
	if err != nil {
		t.Fatalf("a batch reading 300 keys: %v", err)
	}
	for i, r := range res {
		if found := r.Err == nil; found != (i%3 == 0) || found && string(r.New.Value) != fmt.Sprint("k", i) {
			t.Fatalf("k%d read %q, %v", i, r.New.Value, r.Err)
		}
	}
	// A call (a Lua script's EVAL) is one mutation, so concurrent ones are grouped, whatever they write.
	errs := make(chan error, 6)
	for w := range 6 {
		go func() {
			_, err := apply([]engine.Mutation{{Op: engine.OpCall, Table: "t", Key: []byte(fmt.Sprint("w", w)),
				Call: engine.CallArgs{Name: writeMany, AnyKey: true}}})
			errs <- err
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatalf("one of 6 concurrent calls writing 70 keys: %v", err)
		}
	}
}

// writeMany writes 70 keys after the call's own key.
const writeMany = "etcdstore_test.writeMany"

func init() {
	engine.RegisterFunc(writeMany, func(tx *engine.Tx, _ [][]byte) (engine.Result, error) {
		for i := range 70 {
			tx.Put(tx.Table(), fmt.Appendf(nil, "%s-%d", tx.Key(), i), engine.Item{Value: []byte("v")})
		}
		return engine.Result{}, nil
	})
}

// TestReadPartsAreOneSnapshot: a batch reading 300 keys is read in Txns of 128; the later ones read at the first
// one's revision, so a writer setting k0 and k299 together is never seen half done (the review: without the
// pinned revision, 859 of 980 such reads were torn).
func TestReadPartsAreOneSnapshot(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	s := remotetest.Open(t, etcdstore.Open, fmt.Sprintf("%s?prefix=t%d/", server, prefixes.Add(1)))
	defer s.Close()
	ctx := context.Background()
	const now = int64(1_700_000_000_000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := []byte(fmt.Sprint(i))
			s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{
				{Op: engine.OpSet, Table: "t", Key: []byte("k0"), Value: v, Set: engine.SetArgs{Blind: true}},
				{Op: engine.OpSet, Table: "t", Key: []byte("k299"), Value: v, Set: engine.SetArgs{Blind: true}}}})
		}
	}()
	defer func() { close(stop); <-done }()
	var gets []engine.Mutation
	for i := range 300 {
		gets = append(gets, engine.Mutation{Op: engine.OpGet, Table: "t", Key: []byte(fmt.Sprint("k", i))})
	}
	for range 200 {
		res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: gets})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := string(res[0].New.Value), string(res[299].New.Value); a != b {
			t.Fatalf("one read of 300 keys saw k0 = %q and k299 = %q, written together", a, b)
		}
	}
}

// TestStalledServerFailsScansInTime: a scan (KEYS, SCAN, range queries), the table list and the expiry sweep of a
// stalled etcd fail once the engine's Timeout passes, per round trip, as Get and Apply do (they ran unbounded,
// for as long as the stall lasted).
func TestStalledServerFailsScansInTime(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	u, err := neturl.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	p := remotetest.StartStall(t, u.Host)
	u.Host = p.Addr
	u.RawQuery = fmt.Sprintf("prefix=t%d/", prefixes.Add(1))
	s := remotetest.Open(t, etcdstore.Open, u.String())
	defer s.Close()
	s.Timeout = 300 * time.Millisecond
	remotetest.StalledScans(t, s, s.Timeout, p)
}
