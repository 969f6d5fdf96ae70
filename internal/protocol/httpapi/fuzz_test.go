package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
)

var fuzzMethods = []string{"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"}

// FuzzAPI sends one arbitrary request (method, path and query, headers, body) to the API over a store holding a
// few items, then checks what the project promises of bad input: no panic, no 5xx (the memory store has no
// failures to report), an error answered as JSON, nothing changed by a request that was refused, and the API
// still serving a good write and read afterwards.
func FuzzAPI(f *testing.F) {
	type seed struct {
		m              uint8
		target, header string
		body           string
	}
	for _, s := range []seed{
		{0, "/v1/tables/default/keys/a", "", ""},
		{2, "/v1/tables/default/keys/k?ttl=10&flags=3", "", "v"},
		{2, "/v1/tables/default/keys/k?ttl=x", "", "v"},
		{2, "/v1/tables/t/keys/x", "X-Anykv-TTL-Ms: 5\nX-Anykv-Flags: 7\nIf-Match: \"1\"", "body"},
		{3, "/v1/tables/default/keys/n/incr", "Content-Type: application/json", `{"by":5}`},
		{3, "/v1/tables/default/keys/n/incr?by=-9223372036854775808", "", ""},
		{4, "/v1/tables/default/keys/a", "If-Match: *", ""},
		{0, "/v1/tables/default/keys?values=true&encoding=base64&limit=2&cursor=YQ", "", ""},
		{0, "/v1/tables/default/keys?prefix=%FF&start=c&end=a&limit=0", "", ""},
		{0, "/v1/tables/default/count?prefix=a&consistency=strong", "", ""},
		{0, "/v1/tables", "", ""},
		{3, "/put", "Content-Type: application/x-www-form-urlencoded", "key=k&val=v"},
		{0, "/get?key=a", "", ""},
		{3, "/query", "Content-Type: application/x-www-form-urlencoded", "return=key&key=a"},
		{3, "/delete?key=b", "", ""},
		{0, "/count", "", ""},
		{5, "/v1/tables/default/keys/a", "", ""},
		{0, "/v1/tables/a%2Fb/keys/%2F", "", ""},
		{2, "/v1/tables/default/keys/big", "Content-Length: 99999999", "x"},
	} {
		f.Add(s.m, s.target, s.header, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, m uint8, target, header string, body []byte) {
		if !strings.HasPrefix(target, "/") {
			return
		}
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		req, err := http.NewRequest(method, "http://localhost:8080"+target, bytes.NewReader(body))
		if err != nil {
			return // net/http would not have parsed it into a request either
		}
		req.Host = "localhost:8080"
		for _, line := range strings.Split(header, "\n") {
			name, value, ok := strings.Cut(line, ":")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if !ok || name == "" || http.CanonicalHeaderKey(name) == "Host" || strings.ContainsAny(name, " \r\t") ||
				strings.ContainsAny(value, "\r\n") {
				continue
			}
			req.Header.Add(name, value)
		}
		clock := func() time.Time { return time.UnixMilli(1_700_000_000_000) }
		store := kv.New(memstore.New(), kv.Options{Clock: clock, SweepInterval: -1,
			Limits: kv.Limits{MaxKey: 512, MaxValue: 4096, MaxBatch: 64}})
		defer store.Close()
		for _, it := range []struct{ table, key, value string }{
			{"default", "a", "1"}, {"default", "b", "two"}, {"default", "n", "5"}, {"t", "\xff", "x"},
		} {
			if res := store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: it.table, Key: []byte(it.key),
				Value: []byte(it.value)}); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
		h := New(store, Options{Version: "test", MaxPage: 50, Metrics: metrics.New(store)})
		serve := func(req *http.Request) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		before := snapshot(t, serve)
		rec := serve(req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d, body %q", method, target, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 && method != "HEAD" {
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %q: error %d answered as %q: %q", method, target, rec.Code, ct, rec.Body.String())
			}
			if after := snapshot(t, serve); after != before {
				t.Fatalf("%s %q: refused with %d, yet the data changed:\nbefore %s\nafter  %s", method, target,
					rec.Code, before, after)
			}
		}
		put := httptest.NewRequest("PUT", "/v1/tables/default/keys/probe", strings.NewReader("ok"))
		put.Host = "localhost:8080"
		if r := serve(put); r.Code != http.StatusCreated && r.Code != http.StatusOK {
			t.Fatalf("after %s %q: a good PUT got %d %q", method, target, r.Code, r.Body.String())
		}
		get := httptest.NewRequest("GET", "/v1/tables/default/keys/probe", nil)
		get.Host = "localhost:8080"
		if r := serve(get); r.Code != http.StatusOK || r.Body.String() != "ok" {
			t.Fatalf("after %s %q: a good GET got %d %q", method, target, r.Code, r.Body.String())
		}
	})
}

// snapshot lists every table and its items through the API, for comparison.
func snapshot(t *testing.T, serve func(*http.Request) *httptest.ResponseRecorder) string {
	t.Helper()
	get := func(target string) string {
		req := httptest.NewRequest("GET", target, nil)
		req.Host = "localhost:8080"
		rec := serve(req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %q", target, rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}
	tables := get("/v1/tables")
	var names struct {
		Tables []string `json:"tables"`
	}
	if err := json.Unmarshal([]byte(tables), &names); err != nil {
		t.Fatalf("tables %q: %v", tables, err)
	}
	var b strings.Builder
	b.WriteString(tables)
	for _, name := range names.Tables {
		b.WriteString(get("/v1/tables/" + escapeKey(name) + "/keys?values=true&encoding=base64&limit=1000"))
	}
	return b.String()
}
