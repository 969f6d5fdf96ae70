package httpapi

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"anykv/internal/membudget"
)

// TestHeadWritesReserveNothing: a HEAD request's reply, whose body net/http discards, reserves nothing when the
// handler writes it either: a HEAD of a page with a 512 KiB value (or of Active Cloud DB's /get) does not evict a
// client holding more to make room for a body never sent, nor is it refused and its connection aborted. Since
// 92e1f4d its reads reserved nothing, but its JSON body, written in one piece, was still reserved as a big reply.
func TestHeadWritesReserveNothing(t *testing.T) {
	b := membudget.New(1<<20, nil)
	addr := budgetServer(t, b)
	val := bytes.Repeat([]byte("v"), 512<<10)
	for _, table := range []string{"t", "default"} {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/"+table+"/keys/big", bytes.NewReader(val))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	settled(b)
	other := b.Open("other", func() {}) // another client's 600 KiB request, half-sent
	defer other.Close()
	if err := other.Reserve(600 << 10); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/v1/tables/t/keys/big", "/v1/tables/t/keys?values=true", "/get?key=big"} {
		resp, err := client.Head("http://" + addr + path)
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: %d, want 200", path, resp.StatusCode)
		}
		if b.Evictions() != 0 || b.Refusals() != 0 || other.Evicted() {
			t.Fatalf("HEAD %s: %d evictions (the other client's: %v), %d refusals", path, b.Evictions(), other.Evicted(), b.Refusals())
		}
	}
}
