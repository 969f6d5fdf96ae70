package httpapi

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
)

// TestPanickingHandlerGivesBackItsRoom: a handler that panics (net/http recovers it and closes the connection)
// after its value's read was counted gives the room back: wrap closed the request's account only once the
// handler had returned, so those bytes stayed taken for good.
func TestPanickingHandlerGivesBackItsRoom(t *testing.T) {
	b := membudget.New(1<<20, nil)
	s := kv.New(memstore.New(), kv.Options{Limits: kv.Limits{MaxValue: 1 << 20}, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	if res := s.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("big"),
		Value: bytes.Repeat([]byte("v"), 256<<10)}); res.Err != nil {
		t.Fatal(res.Err)
	}
	a := New(s, Options{Budget: b, Metrics: metrics.New(s), Version: "test"}).(*api)
	h := a.wrap(route{method: "GET", pattern: "/boom", command: "boom", open: true,
		h: func(a *api, w http.ResponseWriter, r *http.Request) error {
			if _, err := a.viewForReply(r.Context(), w, "t", []byte("big"), nil); err != nil {
				t.Errorf("read: %v", err)
			}
			panic("a defect")
		}})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "/boom"); err == nil {
		resp.Body.Close()
	}
	if u := settled(b); u != 0 {
		t.Fatalf("after the handler panicked the budget still holds %d bytes", u)
	}
}
