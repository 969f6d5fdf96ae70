package httpapi

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"anykv/internal/membudget"
)

// TestConditionalGetReservesNoValue: a GET whose answer carries none of the value (304 for an If-None-Match
// naming its version, 412 for an If-Match that does not) needs no room in maxmemory-clients: it is answered at
// once, as before the reads were counted, not made to wait for room for a value it does not send and answered
// 503 (a review: a revalidation of a 512 KiB item under a 64 KiB budget got 503 where it got 304).
func TestConditionalGetReservesNoValue(t *testing.T) {
	b := membudget.New(1<<20, nil)
	addr := budgetServer(t, b)
	val := bytes.Repeat([]byte("v"), 512<<10)
	tag := putBig(t, addr, val, "t")
	if tag == "" {
		t.Fatal("PUT answered no ETag")
	}
	settled(b)
	b.SetLimit(64 << 10) // the value no longer fits: a GET of it is refused
	client := &http.Client{Timeout: 5 * time.Second}
	for _, c := range []struct {
		header, value string
		want          int
	}{
		{"If-None-Match", tag, http.StatusNotModified},
		{"If-Match", `"123456789"`, http.StatusPreconditionFailed},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/tables/t/keys/big", nil)
		req.Header.Set(c.header, c.value)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET with %s: %v", c.header, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET with %s: %d, want %d", c.header, resp.StatusCode, c.want)
		}
		if u := settled(b); u != 0 {
			t.Errorf("GET with %s: the budget still holds %d bytes", c.header, u)
		}
	}
}

// TestHeadReservesNoValue: a HEAD request, whose reply net/http sends without a body, reserves none of the values
// its GET would carry (an item, a page with values, Active Cloud DB's /get): under a budget that cannot hold the
// value it is answered 200, not 503.
func TestHeadReservesNoValue(t *testing.T) {
	b, addr, _ := bigServer(t)
	b.SetLimit(64 << 10) // the value no longer fits: a GET of it is refused
	headsOfBig(t, addr, func(path string) {
		if u := settled(b); u != 0 {
			t.Errorf("HEAD %s: the budget still holds %d bytes", path, u)
		}
	})
}

// TestHeadWritesReserveNothing: a HEAD request's reply, whose body net/http discards, reserves nothing when the
// handler writes it either: a HEAD of a page with a 512 KiB value (or of Active Cloud DB's /get) does not evict a
// client holding more to make room for a body never sent, nor is it refused and its connection aborted. Since
// 92e1f4d its reads reserved nothing, but its JSON body, written in one piece, was still reserved as a big reply.
func TestHeadWritesReserveNothing(t *testing.T) {
	b, addr, _ := bigServer(t)
	other := b.Open("other", func() {}) // another client's 600 KiB request, half-sent
	defer other.Close()
	if err := other.Reserve(600 << 10); err != nil {
		t.Fatal(err)
	}
	headsOfBig(t, addr, func(path string) {
		if b.Evictions() != 0 || b.Refusals() != 0 || other.Evicted() {
			t.Fatalf("HEAD %s: %d evictions (the other client's: %v), %d refusals", path, b.Evictions(), other.Evicted(), b.Refusals())
		}
	})
}

// headsOfBig sends a HEAD of each reply that would carry the value big (the item, a page with values, /get),
// requires 200 and calls after for each.
func headsOfBig(t *testing.T, addr string, after func(path string)) {
	t.Helper()
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
		after(path)
	}
}
