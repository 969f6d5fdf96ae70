package httpapi

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/membudget"
)

// TestEvictedRequestStillAnswers: a PUT evicted while its handler runs (another client's request buffer needed
// the room: Reserve evicts the biggest holder, running or not) is still applied, and its small reply (201 and the
// version) goes out, bounded by the eviction's write deadline, as before small writes went through the budget's
// path: the client learns the outcome of a write that was applied instead of a closed connection.
func TestEvictedRequestStillAnswers(t *testing.T) {
	b := membudget.New(64<<20, nil)
	slow := &heldWrites{Engine: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	addr := budgetServerOver(t, b, slow, 0)
	slow.held.Store(true)
	put := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/t/keys/k", bytes.NewReader(make([]byte, 900<<10)))
		put <- send(&http.Client{Timeout: 10 * time.Second}, req)
	}()
	<-slow.entered // the PUT is in the engine, its body's 900 KiB held
	b.SetLimit(b.Used() + 100<<10)
	other := b.Open("other", nil)
	defer other.Close()
	done := make(chan error, 1)
	go func() { done <- other.Reserve(200 << 10) }() // evicts the PUT, the biggest holder
	for b.Evictions() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(slow.release)
	if r := <-put; r.err != nil || r.status != http.StatusCreated {
		t.Errorf("the evicted PUT, applied: %d %q, %v; want 201", r.status, r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Errorf("the evicting client: %v", err)
	}
	if it, err := slow.Engine.Get(t.Context(), "t", []byte("k"), 0); err != nil || len(it.Value) != 900<<10 {
		t.Errorf("the PUT's item: %d bytes, %v", len(it.Value), err)
	}
}
