package driver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/bench/driver"
)

// fakeHTTP implements the anykv HTTP API as documented, in memory, with
// small pages so the driver's cursor handling is exercised.
type fakeHTTP struct {
	mu     sync.Mutex
	tables map[string]map[string][]byte
	items  bool // answer scans in anykv's {"items":[...]} format
}

func (f *fakeHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/healthz" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/tables/"), "/")
	if len(parts) < 2 {
		http.NotFound(w, r)
		return
	}
	table, _ := url.PathUnescape(parts[0])
	t := f.tables[table]
	if t == nil {
		t = map[string][]byte{}
		f.tables[table] = t
	}
	prefix := r.URL.Query().Get("prefix")
	switch {
	case len(parts) == 3 && parts[1] == "keys":
		key, _ := url.PathUnescape(parts[2])
		switch r.Method {
		case http.MethodGet:
			v, ok := t[key]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(v)
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			t[key] = b
			w.WriteHeader(http.StatusNoContent)
		case http.MethodDelete:
			if _, ok := t[key]; !ok {
				http.NotFound(w, r)
				return
			}
			delete(t, key)
			w.WriteHeader(http.StatusNoContent)
		}
	case len(parts) == 2 && parts[1] == "keys":
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit <= 0 || limit > 5 {
			limit = 5
		}
		cursor := r.URL.Query().Get("cursor")
		var keys []string
		for k := range t {
			if strings.HasPrefix(k, prefix) && k > cursor {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		next := ""
		if len(keys) > limit {
			keys = keys[:limit]
			next = keys[limit-1]
		}
		if f.items {
			// anykv's page format
			items := []map[string]any{}
			for _, k := range keys {
				items = append(items, map[string]any{"key": k, "version": 1, "flags": 0})
			}
			json.NewEncoder(w).Encode(map[string]any{"items": items, "cursor": next})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys, "cursor": next})
	case len(parts) == 2 && parts[1] == "count":
		n := 0
		for k := range t {
			if strings.HasPrefix(k, prefix) {
				n++
			}
		}
		json.NewEncoder(w).Encode(map[string]int{"count": n})
	default:
		http.NotFound(w, r)
	}
}

func TestHTTPAgainstFakeAPI(t *testing.T) {
	for _, items := range []bool{false, true} {
		srv := httptest.NewServer(&fakeHTTP{tables: map[string]map[string][]byte{}, items: items})
		d, err := driver.Open(context.Background(), srv.URL, driver.Options{Conns: 8, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		conformance(t, d, driver.CapScan|driver.CapCount)
		d.Close()
		srv.Close()
	}
}

func TestHTTPReportsServerErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if strings.HasSuffix(r.URL.Path, "/count") {
			w.Write([]byte(`{"n":3}`))
			return
		}
		http.Error(w, "disk on fire", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ctx := context.Background()
	d, err := driver.Open(ctx, srv.URL, driver.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.Get(ctx, "t", "k"); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("get: %v", err)
	}
	if err := d.Put(ctx, "t", "k", []byte("v")); err == nil {
		t.Error("put on a 500 succeeded")
	}
	if _, err := d.Count(ctx, "t", ""); err == nil {
		t.Error("count with a malformed body succeeded")
	}
}
