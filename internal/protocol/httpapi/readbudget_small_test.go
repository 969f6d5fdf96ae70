package httpapi

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
)

// TestSmallReadsOpenNoAccount: under a budget, the read of a small value for a reply (an item's GET, a page's
// values, Active Cloud DB's /get) or of a missing key opens no account in it, as before the reads were gated:
// small replies stay off the budget's lock (Budget.Open and Close) and allocations, as ReplyHold keeps them off
// its counter. Since 7d2b83e every such read opened the request's account before it knew the value's size. A
// big value's read still opens it and reserves the value.
func TestSmallReadsOpenNoAccount(t *testing.T) {
	b := membudget.New(1<<20, nil)
	s := kv.New(memstore.New(), kv.Options{Limits: kv.Limits{MaxValue: 1 << 20}, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	set := func(table, key string, n int) {
		t.Helper()
		if res := s.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key),
			Value: bytes.Repeat([]byte("v"), n)}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	set("small", "a", 100)
	set("small", "b", membudget.ReplyHold-1)
	set("t", "big", 256<<10)
	a := New(s, Options{Budget: b, Metrics: metrics.New(s), Version: "test"}).(*api)
	writer := func() (*respWriter, *int) {
		rw, opened := &respWriter{ResponseWriter: httptest.NewRecorder()}, new(int)
		rw.hold = func() *membudget.Account {
			if rw.acct == nil {
				*opened++
				rw.acct = b.Open("test", nil)
			}
			return rw.acct
		}
		t.Cleanup(func() { rw.acct.Close() })
		return rw, opened
	}
	for _, key := range []string{"a", "b", "missing"} {
		rw, opened := writer()
		if _, err := a.viewForReply(ctx, rw, "small", []byte(key), nil); err != nil && !isNotFound(err) {
			t.Fatalf("read of %s: %v", key, err)
		}
		if *opened != 0 {
			t.Errorf("the read of %s opened the request's account", key)
		}
	}
	rw, opened := writer()
	if entries, _, err := a.page(ctx, rw, "small", kv.Query{}, 10, true, 1<<20); err != nil || len(entries) != 2 {
		t.Fatalf("page: %d entries, %v", len(entries), err)
	}
	if *opened != 0 {
		t.Errorf("a page of small values opened the request's account")
	}
	rw, opened = writer()
	if it, err := a.viewForReply(ctx, rw, "t", []byte("big"), nil); err != nil || len(it.Value) != 256<<10 {
		t.Fatalf("read of big: %d bytes, %v", len(it.Value), err)
	}
	if *opened != 1 || rw.prepaid != 256<<10 || b.Used() != 256<<10 {
		t.Fatalf("read of big: account opened %d times, prepaid %d, the budget holds %d", *opened, rw.prepaid, b.Used())
	}
}
