package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
)

var ctx = context.Background()

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is an API over a memory store with a fake clock.
type fixture struct {
	t       *testing.T
	store   *kv.Store
	clock   *fakeClock
	metrics *metrics.Metrics
	h       http.Handler
}

func newFixture(t *testing.T, opts Options, limits kv.Limits) *fixture {
	t.Helper()
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	s := kv.New(memstore.New(), kv.Options{Limits: limits, Clock: clock.Now, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	if opts.Metrics == nil {
		opts.Metrics = metrics.New(s)
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	return &fixture{t: t, store: s, clock: clock, metrics: opts.Metrics, h: New(s, opts)}
}

// newRequest is httptest.NewRequest addressed to localhost, as a local client addresses the server (without a
// password, a Host such as httptest's example.com is refused: see browser.go).
func newRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "localhost:8080"
	return req
}

// do sends one request; hdr holds header name/value pairs ("Host" sets the request's Host).
func (f *fixture) do(method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := newRequest(method, target, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		if http.CanonicalHeaderKey(hdr[i]) == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// set writes an item directly into the store, as RESP or memcached would.
func (f *fixture) set(table, key, value string, flags uint32, expires int64) engine.Item {
	f.t.Helper()
	res := f.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key), Value: []byte(value),
		Flags: flags, Expires: expires})
	if res.Err != nil {
		f.t.Fatal(res.Err)
	}
	return res.New
}

// get reads an item directly from the store.
func (f *fixture) get(table, key string) (engine.Item, bool) {
	f.t.Helper()
	it, err := f.store.Get(ctx, table, []byte(key))
	if isNotFound(err) {
		return it, false
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return it, true
}

func decodeJSON[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %q", ct, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decoding %q: %v", rec.Body.String(), err)
	}
	return v
}

// wantStatus fails unless rec has status.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %q", rec.Code, status, rec.Body.String())
	}
}

// wantError fails unless rec is a /v1 JSON error with status and code.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	wantStatus(t, rec, status)
	e := decodeJSON[errorBody](t, rec)
	if e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("error %+v, want code %q with a message", e.Error, code)
	}
}

// escapeKey percent-encodes every byte outside [A-Za-z0-9-_~], '.' included, so that no client or server path
// cleaning can touch the key.
func escapeKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func itemURL(table, key string) string {
	return "/v1/tables/" + escapeKey(table) + "/keys/" + escapeKey(key)
}
