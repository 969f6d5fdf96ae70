package httpapi

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"anykv/internal/auth"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// refused fails unless rec is a 403 refusal naming why, in the shape of its route (compat: {"error": message}).
func refused(t *testing.T, rec interface {
	Result() *http.Response
}, compat bool, why string) {
	t.Helper()
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(string(body), why) {
		t.Fatalf("status %d %q, want 403 mentioning %q", resp.StatusCode, body, why)
	}
	if compat != strings.HasPrefix(string(body), `{"error":"`) || !compat && !strings.Contains(string(body), `"code":"forbidden"`) {
		t.Fatalf("reply %q is not in its route's error shape", body)
	}
}

// TestCrossOriginRefused: the CSRF of the audit. A page on another origin may send a form or text/plain POST
// without a preflight; such a request carries an Origin naming that page, and is refused before anything is read
// or written, on the compat writes, the /v1 incr (also a simple request), and the reads.
func TestCrossOriginRefused(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.set("default", "keep", "v", 0, 0)
	f.set("default", "n", "1", 0, 0)
	form := "application/x-www-form-urlencoded"
	for _, origin := range []string{"http://evil.example", "http://localhost:9999", "http://127.0.0.1:8080", "null",
		"http://localhost:8080/", "http://localhost:8080@evil.example"} {
		for _, c := range []struct {
			method, target, ctype, body string
			compat                      bool
		}{
			{"POST", "/put", form, "key=csrf&value=pwned", true},
			{"POST", "/put", "text/plain", "key=csrf&value=pwned", true},
			{"POST", "/put?key=csrf&val=pwned", "", "", true},
			{"POST", "/delete", form, "key=keep", true},
			{"POST", "/get", form, "key=keep", true},
			{"GET", "/get?key=keep", "", "", true},
			{"GET", "/query", "", "", true},
			{"POST", "/v1/tables/default/keys/n/incr", "text/plain", "x", false},
			{"GET", "/v1/tables/default/keys/keep", "", "", false},
			{"GET", "/metrics", "", "", false},
		} {
			hdr := []string{"Origin", origin}
			if c.ctype != "" {
				hdr = append(hdr, "Content-Type", c.ctype)
			}
			refused(t, f.do(c.method, c.target, c.body, hdr...), c.compat, "cross-origin request refused")
		}
	}
	if _, ok := f.get("default", "csrf"); ok {
		t.Fatal("a cross-origin POST /put wrote")
	}
	if it, ok := f.get("default", "keep"); !ok || string(it.Value) != "v" {
		t.Fatal("a cross-origin POST /delete deleted")
	}
	if it, _ := f.get("default", "n"); string(it.Value) != "1" {
		t.Fatalf("a cross-origin incr counted: %q", it.Value)
	}
	// Two Origin headers are no browser's: refused too.
	refused(t, f.do("GET", "/get?key=keep", "", "Origin", "http://localhost:8080", "Origin", "http://evil.example"),
		true, "cross-origin")
}

// TestSameOriginAndNoOriginServed: the API's own origin (as a browser spells it, default port omitted or not) and
// clients that send no Origin at all (curl, libraries) are served as before.
func TestSameOriginAndNoOriginServed(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	for _, hdr := range [][]string{
		nil,
		{"Origin", "http://localhost:8080"},
		{"Origin", "http://LocalHost:8080", "Sec-Fetch-Site", "same-origin"},
		{"Origin", "https://localhost", "Host", "localhost"},
		{"Origin", "http://localhost", "Host", "localhost:80"},
		{"Origin", "http://[::1]:8080", "Host", "[::1]:8080"},
		{"Sec-Fetch-Site", "none"}, // typed into the address bar
	} {
		compatReply(t, f.do("POST", "/put", "key=k&val=v", append(hdr, form...)...), 200)
		if r := compatReply(t, f.do("GET", "/get?key=k", "", hdr...), 200); r["k"] != "v" {
			t.Fatalf("%v: get %v", hdr, r)
		}
		compatReply(t, f.do("POST", "/delete", "key=k", append(hdr, form...)...), 200)
		if _, ok := f.get("default", "k"); ok {
			t.Fatalf("%v: not deleted", hdr)
		}
		wantStatus(t, f.do("POST", "/v1/tables/default/keys/n/incr", "", hdr...), http.StatusOK)
	}
}

// TestSecFetchSiteRefused: a browser marks a request from another site (or another port of this one) even when it
// sends no Origin (a GET for an image, a link followed); only same-origin and none are served.
func TestSecFetchSiteRefused(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.set("default", "keep", "v", 0, 0)
	for _, site := range []string{"cross-site", "same-site", "Cross-Site", "bogus"} {
		refused(t, f.do("POST", "/delete", "key=keep", "Sec-Fetch-Site", site,
			"Content-Type", "application/x-www-form-urlencoded"), true, "cross-site request refused")
		refused(t, f.do("GET", "/get?key=keep", "", "Sec-Fetch-Site", site), true, "cross-site request refused")
		refused(t, f.do("PUT", "/v1/tables/default/keys/keep", "x", "Sec-Fetch-Site", site), false, "cross-site")
	}
	if it, ok := f.get("default", "keep"); !ok || string(it.Value) != "v" {
		t.Fatal("a cross-site request wrote")
	}
}

// TestRebindingHostRefused: the DNS rebinding of the audit. Without a password, a request addressed to a name
// other than localhost or a loopback address is refused, on every route, even when its Origin matches that name
// (as a rebound page's does); with a password, the token protects the API and any Host is served.
func TestRebindingHostRefused(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.set("default", "csrf", "secret", 0, 0)
	for _, hdr := range [][]string{
		{"Host", "evil.example"},
		{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"},
		{"Host", "localhost.evil.example:8080"},
		{"Host", "10.1.2.3:8080"},
	} {
		refused(t, f.do("GET", "/get?key=csrf", "", hdr...), true, "refused: without a password")
		refused(t, f.do("POST", "/put?key=csrf&val=pwned", "", hdr...), true, "DNS rebinding")
		refused(t, f.do("GET", "/v1/tables/default/keys/csrf", "", hdr...), false, "DNS rebinding")
		refused(t, f.do("GET", "/healthz", "", hdr...), false, "DNS rebinding")
	}
	if it, _ := f.get("default", "csrf"); string(it.Value) != "secret" {
		t.Fatal("a rebound request wrote")
	}
	for _, host := range []string{"localhost:8080", "LOCALHOST", "localhost.:1", "127.0.0.1:8080", "127.1.2.3",
		"[::1]:8080", "[::ffff:127.0.0.1]:80", ""} {
		if r := compatReply(t, f.do("GET", "/get?key=csrf", "", "Host", host), 200); r["csrf"] != "secret" {
			t.Fatalf("Host %q: %v", host, r)
		}
	}

	// With a password any Host is served (behind a proxy, by a DNS name), but the Origin check still holds, and
	// answers before the password is asked for.
	g := newFixture(t, Options{Auth: auth.New("pw")}, kv.Limits{})
	g.set("default", "k", "v", 0, 0)
	tok := []string{"Authorization", "Bearer pw"}
	if r := compatReply(t, g.do("GET", "/get?key=k", "", append(tok, "Host", "kv.example.com")...), 200); r["k"] != "v" {
		t.Fatalf("password, Host kv.example.com: %v", r)
	}
	wantStatus(t, g.do("GET", "/get?key=k", "", append(tok, "Host", "kv.example.com", "Origin", "https://kv.example.com")...), 200)
	refused(t, g.do("POST", "/delete?key=k", "", append(tok, "Host", "kv.example.com", "Origin", "http://evil.example")...),
		true, "cross-origin")
	refused(t, g.do("POST", "/delete?key=k", "", "Origin", "http://evil.example"), true, "cross-origin")
	if _, ok := g.get("default", "k"); !ok {
		t.Fatal("a cross-origin request with the password deleted")
	}
}

// TestBrowserChecksOnTheWire replays the audit's requests against a real listener: the form POSTs with a foreign
// Origin and the GET with Host evil.example are refused; the same requests addressed to 127.0.0.1:PORT or
// localhost:PORT without Origin are served.
func TestBrowserChecksOnTheWire(t *testing.T) {
	ls := startLive(t, server.HTTPOptions{MaxConns: 8})
	_, port, _ := strings.Cut(strings.TrimPrefix(ls.base, "http://"), ":")
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(method, path, body, host string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, ls.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	form := url.Values{"key": {"csrf"}, "value": {"pwned"}}.Encode()
	evil := []string{"Origin", "http://evil.example"}
	if st, body := send("POST", "/put", form, "", evil...); st != http.StatusForbidden {
		t.Fatalf("cross-origin /put: %d %s", st, body)
	}
	if st, body := send("GET", "/get?key=csrf", "", ""); st != http.StatusOK || !strings.Contains(body, `"error":"not found"`) {
		t.Fatalf("cross-origin /put wrote: %d %s", st, body)
	}
	if st, body := send("POST", "/put", form, ""); st != http.StatusOK {
		t.Fatalf("/put without Origin: %d %s", st, body)
	}
	if st, body := send("POST", "/delete", "key=csrf", "", evil...); st != http.StatusForbidden {
		t.Fatalf("cross-origin /delete: %d %s", st, body)
	}
	if st, body := send("GET", "/get?key=csrf", "", "evil.example"); st != http.StatusForbidden || strings.Contains(body, "pwned") {
		t.Fatalf("Host evil.example: %d %s", st, body)
	}
	if st, body := send("GET", "/get?key=csrf", "", "evil.example:"+port, "Origin", "http://evil.example:"+port); st != http.StatusForbidden {
		t.Fatalf("rebound same-origin page: %d %s", st, body)
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		if st, body := send("GET", "/get?key=csrf", "", host); st != http.StatusOK || !strings.Contains(body, `"csrf":"pwned"`) {
			t.Fatalf("Host %s: %d %s", host, st, body)
		}
		if st, body := send("GET", "/get?key=csrf", "", host, "Origin", "http://"+host); st != http.StatusOK {
			t.Fatalf("same origin http://%s: %d %s", host, st, body)
		}
	}
	if st, body := send("POST", "/delete", "key=csrf", ""); st != http.StatusOK {
		t.Fatalf("/delete without Origin: %d %s", st, body)
	}
}
