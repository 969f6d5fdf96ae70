package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"anykv/internal/kv"
)

// TestNoRedirectToAnotherKey: a request that names one item never acts on another. net/http's ServeMux answers a
// path with an empty segment ("x//y") with a redirect to the path without it, and a method the query route does
// not take (PUT, DELETE, POST on .../keys) with a redirect to .../keys/, the empty key; HTTP clients follow a 307
// with the same method and body, so a GET of the key "x//y" (a literal '/' after /keys/ is part of the key) read
// "x/y", and a DELETE of .../keys deleted the empty key.
func TestNoRedirectToAnotherKey(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req) // follows redirects, as http.DefaultClient does
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	f.set("t", "x/y", "single", 0, 0)
	f.set("t", "", "empty", 0, 0)
	f.set("t", "/", "slash", 0, 0)

	// Literal slashes are part of the key, empty segments included.
	if code, body := call("PUT", "/v1/tables/t/keys/x//y", "double"); code != http.StatusCreated {
		t.Fatalf("PUT x//y: %d %s", code, body)
	}
	if it, ok := f.get("t", "x//y"); !ok || string(it.Value) != "double" {
		t.Fatalf("x//y: %q %v, want double", it.Value, ok)
	}
	if it, _ := f.get("t", "x/y"); string(it.Value) != "single" {
		t.Fatalf("x/y became %q", it.Value)
	}
	if code, body := call("GET", "/v1/tables/t/keys/x//y", ""); code != http.StatusOK || body != "double" {
		t.Fatalf("GET x//y: %d %q, want 200 double", code, body)
	}
	if code, body := call("GET", "/v1/tables/t/keys//", ""); code != http.StatusOK || body != "slash" {
		t.Fatalf("GET of key \"/\" spelled //: %d %q, want 200 slash", code, body)
	}
	if code, body := call("POST", "/v1/tables/t/keys/n///incr", ""); code != http.StatusOK || !strings.Contains(body, `"value":1`) {
		t.Fatalf("incr of n//: %d %s", code, body)
	}
	if _, ok := f.get("t", "n//"); !ok {
		t.Fatal("incr of n// wrote another key")
	}
	if code, _ := call("DELETE", "/v1/tables/t/keys//x", ""); code != http.StatusNotFound {
		t.Fatalf("DELETE of the missing key \"/x\": %d, want 404", code)
	}

	// The query route takes GET and HEAD only: anything else is 405, not a redirect to the empty key.
	for _, m := range []string{"PUT", "DELETE", "POST", "PATCH"} {
		rec := f.do(m, "/v1/tables/t/keys", "gone")
		wantError(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s .../keys: Allow %q, want GET, HEAD", m, got)
		}
		if code, _ := call(m, "/v1/tables/t/keys", "gone"); code != http.StatusMethodNotAllowed {
			t.Errorf("%s .../keys over the wire: %d, want 405", m, code)
		}
	}
	if it, ok := f.get("t", ""); !ok || string(it.Value) != "empty" {
		t.Fatalf("the empty key: %q %v, want empty", it.Value, ok)
	}
	if it, _ := f.get("t", "/"); string(it.Value) != "slash" {
		t.Fatalf("the key \"/\" became %q", it.Value)
	}
}
