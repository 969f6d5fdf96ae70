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
	req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/t/keys/big", bytes.NewReader(val))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	tag := resp.Header.Get("ETag")
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
	b.SetLimit(64 << 10) // the value no longer fits: a GET of it is refused
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
		if u := settled(b); u != 0 {
			t.Errorf("HEAD %s: the budget still holds %d bytes", path, u)
		}
	}
}
