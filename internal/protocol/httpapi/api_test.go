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
		"/v1/tables/default/count", "/metrics"} {
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
		"GET /v1/tables/t/keys/k/incr":    "",                       // a GET of the key "k/incr": not a 405
		"DELETE /v1/tables/t/keys/k/incr": "",                       // deletes the key "k/incr"
		"DELETE /v1/tables":               "GET, HEAD",
		"PUT /healthz":                    "GET, HEAD",
		"GET /put":                        "POST",
		// net/http lists every method of the key pattern, POST included (for .../incr).
		"PATCH /v1/tables/t/keys/k": "DELETE, GET, HEAD, POST, PUT",
		// net/http also offers the methods of ".../keys/" (the empty key), to which it would redirect.
		"PATCH /v1/tables/t/keys": "DELETE, GET, HEAD, POST, PUT",
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
