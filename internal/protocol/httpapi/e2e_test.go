package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"anykv/internal/auth"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
	"anykv/internal/server"
)

// TestEndToEnd serves the API on a real listener through package server and talks to it with net/http, the way
// curl and every HTTP library do: escaping, chunked bodies, keep-alive and conditional requests on the wire.
func TestEndToEnd(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{})
	defer store.Close()
	srv := server.New(slog.New(slog.DiscardHandler))
	p := auth.New("pw")
	srv.SetAuth(p)
	addr, _, err := srv.ListenHTTP("http", "127.0.0.1:0", New(store, Options{Auth: p, MaxBody: 4096, Metrics: metrics.New(store)}),
		server.HTTPOptions{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	base := "http://" + addr.String()
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(method, target string, body io.Reader, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+target, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer pw")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	expect := func(resp *http.Response, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Fatalf("%s %s: status %d, want %d", resp.Request.Method, resp.Request.URL, resp.StatusCode, status)
		}
	}

	// A binary value under a key with a slash, sent chunked (no Content-Length).
	value := []byte{0, 1, 2, 0xff, '\r', '\n', 0xfe}
	key := "/v1/tables/default/keys/" + url.PathEscape("dir/file \x00\xff")
	resp, _ := call("PUT", key+"?ttl=100&flags=3", io.MultiReader(bytes.NewReader(value)))
	expect(resp, http.StatusCreated)
	tag := resp.Header.Get("ETag")
	resp, body := call("GET", key, nil)
	expect(resp, http.StatusOK)
	if !bytes.Equal(body, value) || resp.Header.Get("X-Anykv-Flags") != "3" || resp.Header.Get("X-Anykv-TTL-Ms") == "" {
		t.Fatalf("GET: %q %v", body, resp.Header)
	}
	it, err := store.Get(context.Background(), "default", []byte("dir/file \x00\xff"))
	if err != nil || !bytes.Equal(it.Value, value) {
		t.Fatalf("store sees %q, %v", it.Value, err)
	}
	resp, _ = call("GET", key, nil, "If-None-Match", tag)
	expect(resp, http.StatusNotModified)
	resp, _ = call("PUT", key, strings.NewReader("x"), "If-Match", `"1234567"`)
	expect(resp, http.StatusPreconditionFailed)
	resp, _ = call("POST", "/v1/tables/default/keys/hits/incr?by=41", nil)
	expect(resp, http.StatusOK)
	resp, body = call("POST", "/v1/tables/default/keys/hits/incr", nil)
	expect(resp, http.StatusOK)
	if strings.TrimSpace(string(body)) != `{"value":42}` {
		t.Fatalf("incr: %s", body)
	}

	// A query, and the Active Cloud DB form API on the same table.
	resp, _ = call("POST", "/put", strings.NewReader(url.Values{"key": {"acdb"}, "val": {"yes"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded")
	expect(resp, http.StatusOK)
	resp, body = call("GET", "/v1/tables/default/keys?values=true&limit=2", nil)
	expect(resp, http.StatusOK)
	var page pageJSON
	if err := json.Unmarshal(body, &page); err != nil || len(page.Items) != 2 || page.Cursor == "" {
		t.Fatalf("page %s: %v", body, err)
	}
	if str(page.Items[0].Key) != "acdb" || str(page.Items[0].Value) != "yes" {
		t.Fatalf("first item %+v", page.Items[0])
	}
	resp, body = call("GET", "/v1/tables/default/keys?cursor="+page.Cursor, nil)
	expect(resp, http.StatusOK)
	page = pageJSON{}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Items) != 1 || page.Cursor != "" {
		t.Fatalf("last page %s", body)
	}
	resp, body = call("GET", "/v1/tables/default/count", nil)
	expect(resp, http.StatusOK)
	if strings.TrimSpace(string(body)) != `{"count":3}` {
		t.Fatalf("count %s", body)
	}

	// Errors, auth and metrics over the wire.
	req, _ := http.NewRequest("GET", base+"/v1/tables", nil)
	noauth, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	noauth.Body.Close()
	if noauth.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the password: %d", noauth.StatusCode)
	}
	health, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health.Body.Close()
	expect(health, http.StatusOK)
	resp, _ = call("PUT", key, bytes.NewReader(make([]byte, 4097)))
	expect(resp, http.StatusRequestEntityTooLarge)
	resp, body = call("GET", "/metrics", nil)
	expect(resp, http.StatusOK)
	if !strings.Contains(string(body), `anykv_requests_total{command="incr",protocol="http"} 2`) {
		t.Fatalf("metrics:\n%s", body)
	}
}
