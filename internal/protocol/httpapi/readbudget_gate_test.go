package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/membudget"
)

// TestBigReadIsNotCopiedBeforeItsRoom: a GET of a big value (an item, Active Cloud DB's /get; a page's values are
// read the same way, but enginetest.Copies cannot scan) that finds no room in maxmemory-clients waits for it before the engine copies the value out, and then copies it
// once. Before, the value was copied, found no room, was let go of and read again: in a burst of such reads every
// value was allocated before most of them found there was no room (the RESP and memcached reads were gated
// first; HTTP's were left out).
func TestBigReadIsNotCopiedBeforeItsRoom(t *testing.T) {
	b := membudget.New(1<<20, nil)
	e := &enginetest.Copies{Engine: memstore.New()}
	addr := budgetServerOver(t, b, e, 0)
	val := bytes.Repeat([]byte("v"), 512<<10)
	putBig(t, addr, val, "t", "default")
	settled(b)
	for _, get := range []struct{ path, want string }{
		{"/v1/tables/t/keys/big", string(val)},
		{"/get?key=big", `"big":"` + string(val[:100])},
	} {
		e.N.Store(0)
		others := b.Open("others", nil)
		if err := others.Reserve(768 << 10); err != nil { // 256 KiB free: less than the value
			t.Fatal(err)
		}
		const hold = 300 * time.Millisecond
		time.AfterFunc(hold, func() { others.Close() })
		start := time.Now()
		getContaining(t, addr, get.path, get.want)
		if took := time.Since(start); took < hold {
			t.Fatalf("GET %s answered in %v, before there was room", get.path, took)
		}
		if n := e.N.Load(); n != 1 {
			t.Errorf("GET %s copied the value %d times, want once (with room)", get.path, n)
		}
		if u := settled(b); u != 0 {
			t.Fatalf("GET %s: after the reply the budget still holds %d bytes", get.path, u)
		}
	}
}

// TestBigReadsGiveTheirRoomBack: what a GET's gate reserved for a big value is given back after an engine error
// that came after the gate admitted the value, and when the value is deleted while the GET waits for room (it
// then answers 404).
func TestBigReadsGiveTheirRoomBack(t *testing.T) {
	b := membudget.New(1<<20, nil)
	addr := budgetServerOver(t, b, enginetest.FailsAfterGet{Engine: memstore.New(), Key: "fail", Err: errors.New("durability wait failed")}, 0)
	val := bytes.Repeat([]byte("v"), 512<<10)
	for _, k := range []string{"big", "fail"} {
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/tables/t/keys/"+k, bytes.NewReader(val))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s: %v %v", k, resp, err)
		}
		resp.Body.Close()
	}
	settled(b)
	status := func(method, path string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status("GET", "/v1/tables/t/keys/fail"); s < 500 {
		t.Fatalf("GET of a value whose read fails after its copy: %d", s)
	}
	if u := settled(b); u != 0 {
		t.Fatalf("after the failed read the budget holds %d bytes", u)
	}
	others := b.Open("others", nil)
	if err := others.Reserve(768 << 10); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, func() {
		status("DELETE", "/v1/tables/t/keys/big")
		others.Close()
	})
	if s := status("GET", "/v1/tables/t/keys/big"); s != http.StatusNotFound {
		t.Fatalf("GET of a value deleted while it waited: %d", s)
	}
	if u := settled(b); u != 0 {
		t.Fatalf("after the read of a deleted value the budget holds %d bytes", u)
	}
}
