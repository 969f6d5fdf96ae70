package pebblestore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestGroupJudgedAgainAfterTheVersionSync: under SyncNever a group whose versions pass the ceiling syncs the new
// ceiling (recordVersion) after it was judged and before it is published. A collection that expires during that
// fsync is found gone by readers meanwhile, among them the reclaimer (kv/reclaim.go), which then deletes its
// members; the group, judged while the collection was alive, must not bring it back (here a PERSIST): a hash
// would be left counting members that are gone.
func TestGroupJudgedAgainAfterTheVersionSync(t *testing.T) {
	g := newGateFS(vfs.NewMem())
	s := openWith(t, Options{Dir: "/db", FS: g, Sync: SyncNever, CacheBytes: 8 << 20, Logger: quiet, versionReserve: 1})
	const expires = now + 100
	hash := func(op engine.Op, f string) engine.Mutation {
		return engine.Mutation{Op: op, Table: "t", Key: []byte("h"), Value: []byte("v"),
			Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
	}
	mustApply(t, s, hash(engine.OpMemberSet, "f1"), hash(engine.OpMemberSet, "f2"), hash(engine.OpMemberSet, "f3"),
		engine.Mutation{Op: engine.OpExpire, Table: "t", Key: []byte("h"), Expires: expires})

	var clock atomic.Int64
	clock.Store(expires - 1)
	g.hold()
	type outcome struct {
		res []engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() { // PERSIST h, and a second write so that the group passes the ceiling
		res, err := s.Apply(ctx, &engine.Batch{Now: expires - 1, Clock: clock.Load, Muts: []engine.Mutation{
			{Op: engine.OpExpire, Table: "t", Key: []byte("h")},
			{Op: engine.OpSet, Table: "t", Key: []byte("x"), Value: []byte("x")}}})
		done <- outcome{res, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); g.blocked() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group never synced its version ceiling")
		}
	}
	// The clock passes the expiry while the ceiling syncs; the reclaimer looks h up, finds it gone, and reads the
	// members it will delete.
	clock.Store(expires + 1)
	if _, err := s.Get(ctx, "t", []byte("h"), expires+1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("h during the sync: %v, want it expired", err)
	}
	var dels []engine.Mutation
	if err := s.Scan(ctx, engine.MemberTable("t"), engine.Range{}, expires+1, func(k []byte, it engine.Item) bool {
		dels = append(dels, engine.Mutation{Op: engine.OpDelete, Table: engine.MemberTable("t"), Key: append([]byte(nil), k...),
			AnyKind: true, Cond: engine.CondVersion, Version: it.Version})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	g.release()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: expires + 1, Muts: dels}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Get(ctx, "t", []byte("h"), expires+2)
	if err != nil {
		return // the PERSIST was judged after the expiry: h is gone for everyone
	}
	res := mustApply(t, s, engine.Mutation{Op: engine.OpMembers, Table: "t", Key: []byte("h"), Coll: engine.CollArgs{Kind: engine.KindHash}})
	meta, _ := engine.DecodeCollMeta(it.Value)
	t.Fatalf("PERSIST = %+v: h outlived the expiry readers saw, counting %d fields over %d left", o.res[0], meta.Count, len(res[0].Members))
}
