package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"anykv/internal/auth"
	"anykv/internal/kv"
)

func TestPassword(t *testing.T) {
	f := newFixture(t, Options{Auth: auth.New("s3cret")}, kv.Limits{})
	f.set("default", "k", "v", 0, 0)
	for _, target := range []string{"/v1/tables/default/keys/k", "/v1/tables", "/v1/tables/default/keys",
		"/v1/tables/default/count", "/metrics", "/"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer"} {
			var hdr []string
			if auth != "" {
				hdr = []string{"Authorization", auth}
			}
			rec := f.do("GET", target, "", hdr...)
			wantError(t, rec, http.StatusUnauthorized, "unauthorized")
			if rec.Header().Get("WWW-Authenticate") != `Bearer realm="anykv"` {
				t.Fatalf("WWW-Authenticate %q", rec.Header().Get("WWW-Authenticate"))
			}
		}
		for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER  s3cret "} {
			wantStatus(t, f.do("GET", target, "", "Authorization", auth), http.StatusOK)
		}
	}
	// Writes are refused before they touch the store.
	wantStatus(t, f.do("PUT", "/v1/tables/default/keys/k", "new"), http.StatusUnauthorized)
	if it, _ := f.get("default", "k"); string(it.Value) != "v" {
		t.Fatal("an unauthorized PUT wrote")
	}
	// The compat routes answer 401 in their own shape.
	rec := f.do("GET", "/get?key=k", "")
	wantStatus(t, rec, http.StatusUnauthorized)
	if r := decodeJSON[map[string]any](t, rec); r["error"] == "" || len(r) != 1 {
		t.Fatalf("compat 401: %v", r)
	}
	wantStatus(t, f.do("GET", "/get?key=k", "", "Authorization", "Bearer s3cret"), http.StatusOK)
	// The health check stays open but tells a stranger only that the server is up; the API description and the
	// metrics need the password.
	for _, tc := range []struct {
		hdr  []string
		want string
	}{{nil, `{"status":"ok"}`}, {[]string{"Authorization", "Bearer wrong"}, `{"status":"ok"}`},
		{[]string{"Authorization", "Bearer s3cret"}, `{"status":"ok","version":"test"}`}} {
		rec := f.do("GET", "/healthz", "", tc.hdr...)
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != tc.want {
			t.Errorf("healthz with %v: %s, want %s", tc.hdr, got, tc.want)
		}
	}
	wantError(t, f.do("GET", "/v1/openapi.json", ""), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.do("GET", "/metrics", ""), http.StatusUnauthorized, "unauthorized")
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	wantError(t, f.do("GET", "/nope", ""), http.StatusNotFound, "not_found")
	wantError(t, f.do("DELETE", "/v2/x", ""), http.StatusNotFound, "not_found")
	// Unescaped dot segments are cleaned by net/http with a redirect; escaped ones (%2E) are part of the key.
	rec := f.do("GET", "/v1/tables/t/keys/a/../b", "")
	if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "/v1/tables/t/keys/b" {
		t.Fatalf("dot segments: %d %v", rec.Code, rec.Header())
	}
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	cases := map[string]string{
		"POST /v1/tables/t/keys/k":        "DELETE, GET, HEAD, PUT",
		"POST /v1/tables/t/keys/k%2Fincr": "DELETE, GET, HEAD, PUT", // an escaped slash belongs to the key
		"POST /v1/tables/t/keys/incr":     "DELETE, GET, HEAD, PUT", // the item "incr": it incremented "incr"
		"GET /v1/tables/t/keys/k/incr":    "",                       // a GET of the key "k/incr": not a 405
		"DELETE /v1/tables/t/keys/k/incr": "",                       // deletes the key "k/incr"
		"DELETE /v1/tables":               "GET, HEAD",
		"PUT /healthz":                    "GET, HEAD",
		// net/http lists every method of the key pattern, POST included (for .../incr).
		"PATCH /v1/tables/t/keys/k": "DELETE, GET, HEAD, POST, PUT",
		// The query route takes GET and HEAD only (net/http offered the methods of ".../keys/", the empty key,
		// and redirected PUT, DELETE and POST there: TestNoRedirectToAnotherKey).
		"PATCH /v1/tables/t/keys":  "GET, HEAD",
		"DELETE /v1/tables/t/keys": "GET, HEAD",
	}
	for req, allow := range cases {
		method, target, _ := strings.Cut(req, " ")
		rec := f.do(method, target, "")
		if allow == "" {
			if rec.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s: 405", req)
			}
			continue
		}
		wantError(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := rec.Header().Get("Allow"); got != allow {
			t.Errorf("%s: Allow %q, want %q", req, got, allow)
		}
	}
}

// TestCompatPathsAnswerTheirOwnShape: a method an Active Cloud DB path does not serve gets 405 in that API's
// error shape, {"error": "..."}, with its Allow header.
func TestCompatPathsAnswerTheirOwnShape(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	rec := f.do("GET", "/put", "")
	body := decodeJSON[map[string]any](t, rec)
	if msg, ok := body["error"].(string); rec.Code != http.StatusMethodNotAllowed || !ok || !strings.Contains(msg, "not allowed") ||
		rec.Header().Get("Allow") != "POST" {
		t.Fatalf("GET /put: %d %v, Allow %q", rec.Code, body, rec.Header().Get("Allow"))
	}
}

// TestUnknownQueryParameters: a /v1 route refuses a parameter openapi.json does not list for it, naming the
// ones it takes; the parameters it lists pass.
func TestUnknownQueryParameters(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.set("t", "k", "v", 0, 0)
	for target, want := range map[string]string{
		"/v1/tables/t/keys?bogus=1":   "consistency, cursor, encoding, end, limit, prefix, start, values",
		"/v1/tables/t/keys/k?limit=5": "this route takes consistency\"",
		"/v1/tables/t/count?cursor=x": "consistency, end, prefix, start",
		"/healthz?verbose=1":          "takes none",
		"/v1/tables/t/keys?limt=5":    "limt",
	} {
		rec := f.do("GET", target, "")
		wantError(t, rec, http.StatusBadRequest, "bad_request")
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %s, want it to mention %q", target, rec.Body.String(), want)
		}
	}
	for _, target := range []string{"/v1/tables/t/keys?prefix=k&limit=5", "/v1/tables/t/count?prefix=k", "/v1/tables/t/keys/k"} {
		if rec := f.do("GET", target, ""); rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", target, rec.Code, rec.Body.String())
		}
	}
	if rec := f.do("PUT", "/v1/tables/t/keys/k?ttl=10&flags=3", "v"); rec.Code >= 300 {
		t.Errorf("PUT with ttl and flags: %d %s", rec.Code, rec.Body.String())
	}
}

func TestHealthz(t *testing.T) {
	f := newFixture(t, Options{Version: "1.2.3"}, kv.Limits{})
	rec := f.do("GET", "/healthz", "")
	wantStatus(t, rec, http.StatusOK)
	if r := decodeJSON[map[string]string](t, rec); r["status"] != "ok" || r["version"] != "1.2.3" {
		t.Fatalf("healthz %v", r)
	}
	if st := f.store.Stats(); st.Gets != 0 {
		t.Fatalf("the health check counted as a read: %+v", st)
	}
	f.store.Close()
	wantError(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, "unavailable")
	wantError(t, f.do("GET", "/v1/tables/default/keys/k", ""), http.StatusServiceUnavailable, "unavailable")
}

// TestIndex: the root answers where the API's parts are (a new user's `curl localhost:8080`, a browser's address
// bar), not a 404; only the root: other unknown paths stay 404, and other methods 405.
func TestIndex(t *testing.T) {
	f := newFixture(t, Options{Version: "1.2.3"}, kv.Limits{})
	rec := f.do("GET", "/", "")
	wantStatus(t, rec, http.StatusOK)
	r := decodeJSON[map[string]string](t, rec)
	if r["name"] != "anykv" || r["version"] != "1.2.3" || r["openapi"] != "/v1/openapi.json" || r["keys"] != "/v1/tables/{table}/keys/{key}" {
		t.Fatalf("index %v", r)
	}
	for _, path := range []string{"openapi", "tables", "health", "metrics"} {
		wantStatus(t, f.do("GET", r[path], ""), http.StatusOK)
	}
	wantError(t, f.do("GET", "/nowhere", ""), http.StatusNotFound, "not_found")
	wantError(t, f.do("GET", "/v1", ""), http.StatusNotFound, "not_found")
	wantError(t, f.do("POST", "/", "x"), http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestMetricsCountRoutes(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.do("PUT", "/v1/tables/default/keys/k", "v")
	f.do("GET", "/v1/tables/default/keys/k", "")
	f.do("GET", "/v1/tables/default/keys/missing", "")  // a miss: not an error
	f.do("PUT", "/v1/tables/default/keys/k?ttl=x", "v") // 400: an error
	f.do("GET", "/nowhere", "")
	get, put := f.metrics.Command("http", "get"), f.metrics.Command("http", "put")
	if get.Requests() != 2 || get.Errors() != 0 || put.Requests() != 2 || put.Errors() != 1 {
		t.Fatalf("get %d/%d put %d/%d", get.Requests(), get.Errors(), put.Requests(), put.Errors())
	}
	if u := f.metrics.Command("http", "unknown"); u.Requests() != 1 {
		t.Fatalf("unknown routes: %d", u.Requests())
	}
	rec := f.do("GET", "/metrics", "")
	wantStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	for _, want := range []string{
		`anykv_requests_total{command="get",protocol="http"} 2`,
		`anykv_request_errors_total{command="put",protocol="http"} 1`,
		`anykv_request_duration_seconds_count{command="get",protocol="http"} 2`,
		"anykv_items 1", "anykv_store_gets_total 2",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Without Options.Metrics the API makes its own, so /metrics still answers.
	g := &fixture{t: t, store: f.store, h: New(f.store, Options{})}
	g.do("GET", "/v1/tables", "")
	if body := g.do("GET", "/metrics", "").Body.String(); !strings.Contains(body, `anykv_requests_total{command="tables",protocol="http"} 1`) {
		t.Fatalf("private metrics:\n%s", body)
	}
}
