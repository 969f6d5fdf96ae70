package httpapi

import (
	"bytes"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"anykv/internal/kv"
)

func TestKeysAndValuesRoundTripExactly(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	keys := []string{"plain", "a/b", "/", "//", "%2F", "..", ".", " ", "\x00\xff", "ключ", "a?b#c&d=e", "a+b", "/incr",
		"x/incr", "trailing/", string(all)}
	for i, key := range keys {
		value := string(all[i:]) + key
		wantStatus(t, f.do("PUT", itemURL("default", key), value), http.StatusCreated)
		// The store holds exactly these key bytes: RESP and memcached see what HTTP wrote.
		it, ok := f.get("default", key)
		if !ok || string(it.Value) != value {
			t.Fatalf("key %q: store has %q, %v", key, it.Value, ok)
		}
		rec := f.do("GET", itemURL("default", key), "")
		wantStatus(t, rec, http.StatusOK)
		if !bytes.Equal(rec.Body.Bytes(), []byte(value)) {
			t.Fatalf("key %q: GET returned %q", key, rec.Body.Bytes())
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/octet-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
	}
	// Clients that escape with url.PathEscape (which leaves '.' and some others alone) reach the same items.
	rec := f.do("GET", "/v1/tables/default/keys/"+url.PathEscape("a?b#c&d=e"), "")
	wantStatus(t, rec, http.StatusOK)
	// A literal slash is part of the key on the item routes.
	f.set("default", "user/1", "alice", 0, 0)
	if rec := f.do("GET", "/v1/tables/default/keys/user/1", ""); rec.Code != 200 || rec.Body.String() != "alice" {
		t.Fatalf("literal slash: %d %q", rec.Code, rec.Body.String())
	}
	// Tables are path segments too.
	wantStatus(t, f.do("PUT", itemURL("db 3/x", "k"), "v"), http.StatusCreated)
	if _, ok := f.get("db 3/x", "k"); !ok {
		t.Fatal("escaped table name not decoded")
	}
}

func TestRandomBinaryValues(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 50; i++ {
		k, v := make([]byte, 1+rng.Intn(20)), make([]byte, rng.Intn(3000))
		rng.Read(k)
		rng.Read(v)
		wantStatus(t, f.do("PUT", itemURL("t", string(k)), string(v)), http.StatusCreated)
		rec := f.do("GET", itemURL("t", string(k)), "")
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), v) {
			t.Fatalf("key %x: %d, value differs", k, rec.Code)
		}
	}
}

func TestPutStatusesAndHeaders(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	rec := f.do("PUT", "/v1/tables/default/keys/k", "one")
	wantStatus(t, rec, http.StatusCreated)
	v1 := decodeJSON[versionBody](t, rec).Version
	if rec.Header().Get("ETag") != etag(v1) || rec.Header().Get("Location") != "/v1/tables/default/keys/k" {
		t.Fatalf("headers %v", rec.Header())
	}
	rec = f.do("PUT", "/v1/tables/default/keys/k", "two")
	wantStatus(t, rec, http.StatusOK)
	v2 := decodeJSON[versionBody](t, rec).Version
	if v2 <= v1 || rec.Header().Get("ETag") != etag(v2) || rec.Header().Get(hdrVersion) != strconv.FormatUint(v2, 10) {
		t.Fatalf("second put: version %d after %d, headers %v", v2, v1, rec.Header())
	}
	rec = f.do("GET", "/v1/tables/default/keys/k", "")
	h := rec.Header()
	if h.Get("ETag") != etag(v2) || h.Get(hdrVersion) != strconv.FormatUint(v2, 10) || h.Get(hdrFlags) != "0" ||
		h.Get(hdrExpires) != "" || h.Get(hdrTTLMs) != "" || h.Get("Content-Length") != "3" {
		t.Fatalf("GET headers %v", h)
	}
	// An empty body stores an empty value.
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/empty", ""), http.StatusCreated)
	if rec := f.do("GET", "/v1/tables/default/keys/empty", ""); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Fatalf("empty value: %d %q", rec.Code, rec.Body.String())
	}
}

func TestGetAndHeadMissing(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	wantError(t, f.do("GET", "/v1/tables/default/keys/nope", ""), http.StatusNotFound, "not_found")
	rec := f.do("HEAD", "/v1/tables/default/keys/nope", "")
	wantStatus(t, rec, http.StatusNotFound)
}

func TestHead(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	it := f.set("default", "k", "hello", 7, 0)
	rec := f.do("HEAD", "/v1/tables/default/keys/k", "")
	wantStatus(t, rec, http.StatusOK)
	h := rec.Header()
	if rec.Body.Len() != 0 || h.Get("Content-Length") != "5" || h.Get(hdrFlags) != "7" || h.Get("ETag") != etag(it.Version) {
		t.Fatalf("HEAD: body %q headers %v", rec.Body.String(), h)
	}
}

func TestTTL(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	now := f.store.Now()
	cases := []struct {
		target string
		hdr    []string
		ms     int64
	}{
		{"?ttl=10", nil, 10000},
		{"?ttl_ms=1500", nil, 1500},
		{"", []string{"X-Anykv-TTL", "3"}, 3000},
		{"", []string{"X-Anykv-TTL-Ms", "250"}, 250},
	}
	for i, c := range cases {
		key := fmt.Sprint("/v1/tables/default/keys/t", i)
		wantStatus(t, f.do("PUT", key+c.target, "v", c.hdr...), http.StatusCreated)
		h := f.do("GET", key, "").Header()
		if h.Get(hdrExpires) != strconv.FormatInt(now+c.ms, 10) || h.Get(hdrTTLMs) != strconv.FormatInt(c.ms, 10) {
			t.Fatalf("case %d: Expires %q TTL-Ms %q, want %d", i, h.Get(hdrExpires), h.Get(hdrTTLMs), c.ms)
		}
	}
	f.clock.Advance(4 * time.Second)
	if got := f.do("GET", "/v1/tables/default/keys/t0", "").Header().Get(hdrTTLMs); got != "6000" {
		t.Fatalf("TTL after 4s: %q", got)
	}
	wantStatus(t, f.do("GET", "/v1/tables/default/keys/t2", ""), http.StatusNotFound) // 3s: gone
	f.clock.Advance(6 * time.Second)
	wantStatus(t, f.do("GET", "/v1/tables/default/keys/t0", ""), http.StatusNotFound)
	// A PUT without a TTL makes the item permanent, as Redis SET does.
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/p?ttl=5", "v"), http.StatusCreated)
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/p", "v"), http.StatusOK)
	if h := f.do("GET", "/v1/tables/default/keys/p", "").Header(); h.Get(hdrExpires) != "" {
		t.Fatalf("TTL kept by a PUT without one: %v", h)
	}
	for _, bad := range []struct {
		target string
		hdr    []string
	}{
		{"?ttl=0", nil}, {"?ttl=-1", nil}, {"?ttl=abc", nil}, {"?ttl=1.5", nil}, {"?ttl_ms=0", nil},
		{"?ttl=9223372036854775", nil}, {"?ttl_ms=9223372036854775807", nil}, {"?ttl=", nil},
		{"?ttl=1&ttl_ms=1000", nil}, {"?ttl=1", []string{"X-Anykv-TTL", "1"}}, {"", []string{"X-Anykv-TTL", "x"}},
	} {
		wantError(t, f.do("PUT", "/v1/tables/default/keys/bad"+bad.target, "v", bad.hdr...), http.StatusBadRequest, "bad_request")
	}
	if _, ok := f.get("default", "bad"); ok {
		t.Fatal("a rejected PUT stored the item")
	}
}

func TestFlags(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/a?flags=42", "v"), http.StatusCreated)
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/b", "v", "X-Anykv-Flags", "4294967295"), http.StatusCreated)
	if it, _ := f.get("default", "a"); it.Flags != 42 {
		t.Fatalf("flags %d", it.Flags)
	}
	if got := f.do("GET", "/v1/tables/default/keys/b", "").Header().Get(hdrFlags); got != "4294967295" {
		t.Fatalf("flags header %q", got)
	}
	for _, bad := range []string{"?flags=4294967296", "?flags=-1", "?flags=x", "?flags=1&flags=2x"} {
		wantError(t, f.do("PUT", "/v1/tables/default/keys/c"+bad, "v"), http.StatusBadRequest, "bad_request")
	}
	wantError(t, f.do("PUT", "/v1/tables/default/keys/c?flags=1", "v", "X-Anykv-Flags", "1"), http.StatusBadRequest, "bad_request")
}

func TestConditionalGet(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	it := f.set("default", "k", "v", 0, 0)
	tag := etag(it.Version)
	for _, inm := range []string{tag, "W/" + tag, `"999", ` + tag, "*"} {
		rec := f.do("GET", "/v1/tables/default/keys/k", "", "If-None-Match", inm)
		wantStatus(t, rec, http.StatusNotModified)
		if rec.Body.Len() != 0 || rec.Header().Get("ETag") != tag {
			t.Fatalf("304 for %q: body %q, ETag %q", inm, rec.Body.String(), rec.Header().Get("ETag"))
		}
	}
	wantStatus(t, f.do("GET", "/v1/tables/default/keys/k", "", "If-None-Match", `"999"`), http.StatusOK)
	wantStatus(t, f.do("HEAD", "/v1/tables/default/keys/k", "", "If-None-Match", tag), http.StatusNotModified)
	wantStatus(t, f.do("GET", "/v1/tables/default/keys/k", "", "If-Match", tag), http.StatusOK)
	wantError(t, f.do("GET", "/v1/tables/default/keys/k", "", "If-Match", `"999"`), http.StatusPreconditionFailed, "precondition_failed")
	wantError(t, f.do("GET", "/v1/tables/default/keys/k", "", "If-Match", "W/"+tag), http.StatusPreconditionFailed, "precondition_failed")
}

func TestConditionalPut(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	url := "/v1/tables/default/keys/k"
	// Create-only.
	wantStatus(t, f.do("PUT", url, "v1", "If-None-Match", "*"), http.StatusCreated)
	wantError(t, f.do("PUT", url, "x", "If-None-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
	it, _ := f.get("default", "k")
	// Compare-and-set.
	rec := f.do("PUT", url, "v2", "If-Match", etag(it.Version))
	wantStatus(t, rec, http.StatusOK)
	wantError(t, f.do("PUT", url, "x", "If-Match", etag(it.Version)), http.StatusPreconditionFailed, "precondition_failed")
	wantStatus(t, f.do("PUT", url, "v3", "If-Match", "*"), http.StatusOK)
	// Compared strongly, as a read compares them: the version with a leading zero is another tag (it matched).
	cur, _ := f.get("default", "k")
	for _, never := range []string{"W/" + etag(cur.Version), `"abc"`, `"0"`, `"0` + etag(cur.Version)[1:]} {
		wantError(t, f.do("PUT", url, "x", "If-Match", never), http.StatusPreconditionFailed, "precondition_failed")
	}
	if got, _ := f.get("default", "k"); string(got.Value) != "v3" {
		t.Fatalf("value %q after failed preconditions", got.Value)
	}
	// Preconditions on a missing item fail with 412, not 404, and create nothing.
	for _, im := range []string{"*", `"1"`} {
		wantError(t, f.do("PUT", "/v1/tables/default/keys/missing", "x", "If-Match", im), http.StatusPreconditionFailed, "precondition_failed")
	}
	if _, ok := f.get("default", "missing"); ok {
		t.Fatal("a failed If-Match created the item")
	}
	for _, bad := range [][]string{
		{"If-Match", "1"}, {"If-Match", `"1", "2"`}, {"If-None-Match", `"1"`},
		{"If-Match", "*", "If-None-Match", "*"},
	} {
		wantError(t, f.do("PUT", url, "x", bad...), http.StatusBadRequest, "bad_request")
	}
}

func TestReturnOld(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	url := "/v1/tables/default/keys/k"
	rec := f.do("PUT", url+"?return=old", "first")
	wantStatus(t, rec, http.StatusNoContent)
	it, _ := f.get("default", "k")
	if rec.Header().Get("ETag") != etag(it.Version) || rec.Body.Len() != 0 {
		t.Fatalf("204: headers %v body %q", rec.Header(), rec.Body.String())
	}
	f.set("default", "k", "first", 9, 0)
	old, _ := f.get("default", "k")
	rec = f.do("PUT", url+"?return=old", "second")
	wantStatus(t, rec, http.StatusOK)
	now, _ := f.get("default", "k")
	h := rec.Header()
	if rec.Body.String() != "first" || h.Get(hdrOldVersion) != strconv.FormatUint(old.Version, 10) ||
		h.Get(hdrOldFlags) != "9" || h.Get("ETag") != etag(now.Version) || h.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("return=old: body %q headers %v", rec.Body.String(), h)
	}
	rec = f.do("DELETE", url+"?return=old", "")
	if rec.Code != 200 || rec.Body.String() != "second" {
		t.Fatalf("DELETE return=old: %d %q", rec.Code, rec.Body.String())
	}
	wantError(t, f.do("DELETE", url+"?return=old", ""), http.StatusNotFound, "not_found")
	wantError(t, f.do("PUT", url+"?return=new", "x"), http.StatusBadRequest, "bad_request")
}

func TestDelete(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	url := "/v1/tables/default/keys/k"
	it := f.set("default", "k", "v", 0, 0)
	wantError(t, f.do("DELETE", url, "", "If-Match", etag(it.Version+100)), http.StatusPreconditionFailed, "precondition_failed")
	rec := f.do("DELETE", url, "", "If-Match", etag(it.Version))
	wantStatus(t, rec, http.StatusNoContent)
	if _, ok := f.get("default", "k"); ok {
		t.Fatal("not deleted")
	}
	wantError(t, f.do("DELETE", url, ""), http.StatusNotFound, "not_found")
	wantError(t, f.do("DELETE", url, "", "If-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
	f.set("default", "k", "v", 0, 0)
	wantStatus(t, f.do("DELETE", url, ""), http.StatusNoContent)
}

func TestIncr(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	url := "/v1/tables/default/keys/n/incr"
	incr := func(q string, want int64) {
		t.Helper()
		rec := f.do("POST", url+q, "")
		wantStatus(t, rec, http.StatusOK)
		if got := decodeJSON[incrBody](t, rec).Value; got != want {
			t.Fatalf("incr%s = %d, want %d", q, got, want)
		}
		it, _ := f.get("default", "n")
		if rec.Header().Get("ETag") != etag(it.Version) {
			t.Fatalf("ETag %q, version %d", rec.Header().Get("ETag"), it.Version)
		}
	}
	incr("", 1)
	incr("?by=5", 6)
	incr("?by=-10", -4)
	// The expiry and flags stay, as with Redis INCR.
	exp := f.store.Now() + 5000
	f.set("default", "e", "10", 3, exp)
	wantStatus(t, f.do("POST", "/v1/tables/default/keys/e/incr", ""), http.StatusOK)
	if it, _ := f.get("default", "e"); string(it.Value) != "11" || it.Expires != exp || it.Flags != 3 {
		t.Fatalf("after incr: %+v", it)
	}
	f.set("default", "s", "abc", 0, 0)
	wantError(t, f.do("POST", "/v1/tables/default/keys/s/incr", ""), http.StatusConflict, "not_integer")
	f.set("default", "big", "9223372036854775807", 0, 0)
	wantError(t, f.do("POST", "/v1/tables/default/keys/big/incr", ""), http.StatusConflict, "overflow")
	for _, bad := range []string{"?by=x", "?by=1.5", "?by=9223372036854775808", "?by="} {
		wantError(t, f.do("POST", url+bad, ""), http.StatusBadRequest, "bad_request")
	}
	// Conditional increments.
	it, _ := f.get("default", "n")
	wantError(t, f.do("POST", url, "", "If-Match", etag(it.Version+1)), http.StatusPreconditionFailed, "precondition_failed")
	wantStatus(t, f.do("POST", url, "", "If-Match", etag(it.Version)), http.StatusOK)
	wantError(t, f.do("POST", url, "", "If-None-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
	wantError(t, f.do("POST", "/v1/tables/default/keys/fresh/incr", "", "If-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
	// An escaped slash reaches a key that holds one.
	wantStatus(t, f.do("POST", "/v1/tables/default/keys/a%2Fb/incr", ""), http.StatusOK)
	if it, ok := f.get("default", "a/b"); !ok || string(it.Value) != "1" {
		t.Fatalf("a/b = %q, %v", it.Value, ok)
	}
	// The key "/" (a segment net/http's one-segment wildcards cannot match) and literal slashes work too.
	for target, key := range map[string]string{"/v1/tables/default/keys/%2F/incr": "/",
		"/v1/tables/default/keys/user/1/incr": "user/1", "/v1/tables/default/keys/x%2F/incr": "x/"} {
		wantStatus(t, f.do("POST", target, ""), http.StatusOK)
		if it, ok := f.get("default", key); !ok || string(it.Value) != "1" {
			t.Fatalf("%s: key %q = %q, %v", target, key, it.Value, ok)
		}
	}
}

func TestEmptyKey(t *testing.T) {
	// Redis allows the empty key, so the API reaches it too: .../keys/ with nothing after the slash.
	f := newFixture(t, Options{}, kv.Limits{})
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/", "empty"), http.StatusCreated)
	if it, ok := f.get("default", ""); !ok || string(it.Value) != "empty" {
		t.Fatalf("empty key: %q %v", it.Value, ok)
	}
	if rec := f.do("GET", "/v1/tables/default/keys/", ""); rec.Code != 200 || rec.Body.String() != "empty" {
		t.Fatalf("GET empty key: %d %q", rec.Code, rec.Body.String())
	}
	wantStatus(t, f.do("DELETE", "/v1/tables/default/keys/", ""), http.StatusNoContent)
}

func TestLimits(t *testing.T) {
	f := newFixture(t, Options{MaxBody: 10}, kv.Limits{MaxKey: 8, MaxValue: 1000})
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/k", "0123456789"), http.StatusCreated)
	wantError(t, f.do("PUT", "/v1/tables/default/keys/k", "0123456789A"), http.StatusRequestEntityTooLarge, "value_too_large")
	// Without a Content-Length (chunked), the limit holds while reading.
	req := newRequest("PUT", "/v1/tables/default/keys/k", strings.NewReader(strings.Repeat("x", 50)))
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	wantError(t, rec, http.StatusRequestEntityTooLarge, "value_too_large")
	if it, _ := f.get("default", "k"); string(it.Value) != "0123456789" {
		t.Fatalf("value %q after rejected writes", it.Value)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		wantError(t, f.do(m, "/v1/tables/default/keys/123456789", "v"), http.StatusBadRequest, "key_too_large")
	}
	wantError(t, f.do("POST", "/v1/tables/default/keys/123456789/incr", ""), http.StatusBadRequest, "key_too_large")
	// Table names: 255 bytes at most, on every route that names one.
	long, longer := strings.Repeat("t", kv.MaxTable), strings.Repeat("t", kv.MaxTable+1)
	wantStatus(t, f.do("PUT", "/v1/tables/"+long+"/keys/k", "v"), http.StatusCreated)
	wantError(t, f.do("PUT", "/v1/tables/"+longer+"/keys/k", "v"), http.StatusBadRequest, "table_name_too_long")
	wantError(t, f.do("POST", "/v1/tables/"+longer+"/keys/k/incr", ""), http.StatusBadRequest, "table_name_too_long")
	// A table named so before the bound can still be read and emptied.
	wantStatus(t, f.do("GET", "/v1/tables/"+longer+"/keys/k", ""), http.StatusNotFound)
	wantStatus(t, f.do("GET", "/v1/tables/"+longer+"/count", ""), http.StatusOK)
	// The store's own value limit also answers 413 when MaxBody is larger.
	g := newFixture(t, Options{MaxBody: 100}, kv.Limits{MaxValue: 5})
	wantError(t, g.do("PUT", "/v1/tables/default/keys/k", "123456"), http.StatusRequestEntityTooLarge, "value_too_large")
}
