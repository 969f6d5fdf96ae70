package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The API serves programs, not web pages, and sets no CORS headers; a web browser is the one client that would act
// for someone else. Two attacks reach a server on 127.0.0.1 through any page its user opens:
//
//   - cross-site requests: a page may send a "simple" request (a POST with a form or text/plain body, a GET) to
//     another origin without a CORS preflight, so a form POST to /put or /delete, or a POST to .../incr, would
//     write. The browser marks such requests with Origin and Sec-Fetch-Site, which a page cannot forge, so
//     checkBrowser refuses a request whose Origin names another host, or whose Sec-Fetch-Site is anything but
//     same-origin or none (typed into the address bar).
//   - DNS rebinding: the attacker's name is made to resolve to 127.0.0.1, and its page then talks to the API as
//     its own origin, with Host naming the attacker's domain. Without a password nothing else stops it, so then only
//     a Host naming localhost, a loopback address or the connection's own address is served.
//
// Requests without these headers (curl, client libraries, other servers) are not affected, except that without a
// password they must address the server by one of those names. Refusals are 403, code "forbidden".

// checkBrowser refuses cross-site browser requests always, and, while no password is set, requests addressed to a
// host name that could be an attacker's (DNS rebinding).
func (a *api) checkBrowser(r *http.Request) error {
	if why := BrowserRefusal(r, a.opts.Auth.Required()); why != "" {
		return newError(http.StatusForbidden, "forbidden", why)
	}
	return nil
}

// BrowserRefusal is the rule of checkBrowser for any HTTP handler (the --pprof listener uses it too): the reason a
// request is refused, or "" if it is served. passwordRequired tells whether a password protects the handler.
func BrowserRefusal(r *http.Request, passwordRequired bool) string {
	switch site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))); site {
	case "", "same-origin", "none":
	default:
		return "cross-site request refused (Sec-Fetch-Site: " + site + "): the API does not serve web pages of " +
			"other origins; a page may call it only from its own origin"
	}
	if origin, ok := r.Header["Origin"]; ok && (len(origin) != 1 || !sameOrigin(origin[0], r)) {
		return "cross-origin request refused: Origin " + strings.Join(origin, ", ") + " does not match Host " +
			r.Host + "; the API does not serve web pages of other origins (clients that are not browsers send no Origin)"
	}
	if !passwordRequired && !localHost(r) {
		return "Host " + r.Host + " refused: without a password (--requirepass) the API answers only requests " +
			"addressed to localhost, a loopback address or the listener's own address, so that no web page can reach " +
			"it by DNS rebinding; use http://127.0.0.1:PORT or http://localhost:PORT, or set a password"
	}
	return ""
}

// GuardBrowsers serves next only to requests BrowserRefusal lets through; others get a plain-text 403.
// passwordRequired is asked per request (CONFIG SET requirepass acts at once).
func GuardBrowsers(next http.Handler, passwordRequired func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := BrowserRefusal(r, passwordRequired()); why != "" {
			http.Error(w, why, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin (an Origin header: scheme://host[:port], or "null") names the host and port
// the request was sent to. The scheme only decides the default port: behind a proxy that ends TLS the request
// arrives over plain HTTP from an https origin.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return hostPort(u.Host, u.Scheme) == hostPort(r.Host, u.Scheme)
}

// hostPort lowercases a host[:port] and drops the scheme's default port, so that "localhost" and "localhost:80"
// are one host for http.
func hostPort(hp, scheme string) string {
	hp = strings.ToLower(hp)
	def := map[string]string{"http": "80", "https": "443"}[strings.ToLower(scheme)]
	if h, p, err := net.SplitHostPort(hp); err == nil && p == def {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return hp
}

// localHost reports whether the request's Host (its port aside) is localhost, a loopback address or the address
// the connection was accepted on: names no DNS answer can point elsewhere. An empty Host (HTTP/1.0) is no
// browser's, and passes.
func localHost(r *http.Request) bool {
	if r.Host == "" {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip.WithZone("") {
			return true
		}
	}
	return false
}
