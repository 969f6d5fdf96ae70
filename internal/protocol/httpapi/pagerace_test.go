package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// scanThen is a memory engine whose Scan runs after() once it returned: a write that lands between a values
// page's keys-only scan and its reads of the values.
type scanThen struct {
	*memstore.Store
	after atomic.Pointer[func()]
}

func (s *scanThen) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	err := s.Store.Scan(ctx, table, r, now, fn)
	if f := s.after.Swap(nil); f != nil {
		(*f)()
	}
	return err
}

// TestValuesPageOverAKeyTurnedCollection: a key that held a string when a values page scanned its keys and a
// Redis collection when the page read its value is listed as the collection it now is; the whole page used to
// fail with 409 wrong_type, so a client paging through a table a RESP client writes could not get past it.
func TestValuesPageOverAKeyTurnedCollection(t *testing.T) {
	eng := &scanThen{Store: memstore.New()}
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	h := New(s, Options{})
	for _, k := range []string{"a", "h", "z"} {
		if res := s.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	turn := func() { // DEL h, HSET h f v: one batch
		_, err := s.Apply(ctx, []engine.Mutation{
			{Op: engine.OpDelete, Table: "t", Key: []byte("h"), AnyKind: true},
			{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte("v"),
				Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}},
		})
		if err != nil {
			t.Error(err)
		}
	}
	eng.after.Store(&turn)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/v1/tables/t/keys?values=true", nil))
	wantStatus(t, rec, http.StatusOK)
	items := decodeJSON[pageJSON](t, rec).Items
	if len(items) != 3 {
		t.Fatalf("items %+v", items)
	}
	if it := items[1]; it.Kind != "hash" || it.Value != nil || it.ValueB64 != nil || it.Version == 0 {
		t.Fatalf("the key turned hash: %+v", it)
	}
	if it := items[2]; it.Value == nil || *it.Value != "v" {
		t.Fatalf("the key after it: %+v", it)
	}
}
