// Package httpapi serves the anykv keyspace over HTTP/JSON: items under /v1/tables/{table}/keys/{key} with raw
// values, ETags and conditional writes; key-ordered queries with cursors and counts; the Active Cloud DB form API
// (/get, /put, /delete, /query, /count); an OpenAPI document, a health check and Prometheus metrics.
//
// Tables are the same keyspace the other protocols see: RESP database 0 and memcached use table "default", RESP
// database N>0 uses "dbN". Like the other protocol packages it holds no storage logic: every request becomes a
// kv.Store call, and every failure becomes an error value that one table (errors.go) maps to a status and a code.
// docs/http.md describes the API for users.
package httpapi

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"anykv/internal/auth"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
)

// Options configure the API. Zero fields take the defaults.
type Options struct {
	// Auth is the password policy (nil: no password). With a password, "Authorization: Bearer <password>"
	// must be sent on every route; /healthz answers without it, but only its status. Which clients may connect
	// at all is the server's part of the policy (Deny words its refusal).
	Auth *auth.Policy
	// MaxBody bounds a request body in bytes (default: the store's MaxValue).
	MaxBody int64
	// Budget, if set, is what request bodies are read into, with RESP's and memcached's request buffers
	// (--maxmemory-clients): a body that does not fit is refused (503), or the biggest reader is evicted.
	Budget *membudget.Budget
	// MaxPage bounds the items of one query page (default 1000); larger limits are clamped to it.
	MaxPage int
	// Logger receives server-side failures (default: discarded).
	Logger *slog.Logger
	// Metrics collects per-route figures and serves /metrics; nil makes a private one so /metrics still works.
	Metrics *metrics.Metrics
	// Version is reported by /healthz.
	Version string
}

// Defaults of Options.
const (
	DefaultMaxPage = 1000
	// defaultLimit is the page size of a query that names none.
	defaultLimit = 100
	// maxPageBytes bounds the values of one query page (a page always holds at least one item).
	maxPageBytes = 4 << 20
)

// api is the state every handler shares. It is immutable after New.
type api struct {
	store   *kv.Store
	opts    Options
	log     *slog.Logger
	metrics *metrics.Metrics
	mux     *http.ServeMux
	unknown *metrics.Observer // requests that matched no route
}

// handlerFunc serves one route; a returned error is written by the route's error writer.
type handlerFunc func(a *api, w http.ResponseWriter, r *http.Request) error

// route is one method and path of the API: the single list that New registers and that the OpenAPI test checks.
type route struct {
	method string
	// pattern is the net/http pattern's path. A trailing "..." wildcard matches the rest of the path, so that a
	// key may hold '/' (sent as %2F, or literally); OpenAPI spells it {key}.
	pattern string
	// spec is the route's OpenAPI path when it is not the pattern with {key...} spelled {key}.
	spec string
	// command names the route in metrics.
	command string
	// open routes are served without the password (and may answer less without it).
	open bool
	// compat routes answer errors in Active Cloud DB's shape, {"error": "message"}.
	compat bool
	h      handlerFunc
}

const keyPath = "/v1/tables/{table}/keys/{key...}"

// routes lists every route. A GET route also answers HEAD (net/http does that); the item route lists HEAD itself
// because it documents its own HEAD behaviour.
func routes() []route {
	return []route{
		{method: "GET", pattern: "/{$}", spec: "/", command: "index", h: (*api).index},
		{method: "GET", pattern: "/healthz", command: "healthz", open: true, h: (*api).healthz},
		{method: "GET", pattern: "/metrics", command: "metrics", h: (*api).serveMetrics},
		{method: "GET", pattern: "/v1/openapi.json", command: "openapi", h: (*api).openapi},
		{method: "GET", pattern: "/v1/tables", command: "tables", h: (*api).tables},
		{method: "GET", pattern: "/v1/tables/{table}/keys", command: "scan", h: (*api).scan},
		{method: "GET", pattern: "/v1/tables/{table}/count", command: "count", h: (*api).count},
		{method: "GET", pattern: keyPath, command: "get", h: (*api).getItem},
		{method: "HEAD", pattern: keyPath, command: "head", h: (*api).getItem},
		{method: "PUT", pattern: keyPath, command: "put", h: (*api).putItem},
		{method: "DELETE", pattern: keyPath, command: "delete", h: (*api).deleteItem},
		// incr is served on the key pattern: net/http cannot match a segment that is exactly %2F (key "/") with a
		// one-segment wildcard, so the handler splits off the literal "/incr" itself.
		{method: "POST", pattern: keyPath, spec: "/v1/tables/{table}/keys/{key}/incr", command: "incr", h: (*api).incr},
		{method: "GET", pattern: "/get", command: "acdb_get", compat: true, h: (*api).acdbGet},
		{method: "POST", pattern: "/get", command: "acdb_get", compat: true, h: (*api).acdbGet},
		{method: "POST", pattern: "/put", command: "acdb_put", compat: true, h: (*api).acdbPut},
		{method: "POST", pattern: "/delete", command: "acdb_delete", compat: true, h: (*api).acdbDelete},
		{method: "GET", pattern: "/query", command: "acdb_query", compat: true, h: (*api).acdbQuery},
		{method: "POST", pattern: "/query", command: "acdb_query", compat: true, h: (*api).acdbQuery},
		{method: "GET", pattern: "/count", command: "acdb_count", compat: true, h: (*api).acdbCount},
		{method: "POST", pattern: "/count", command: "acdb_count", compat: true, h: (*api).acdbCount},
	}
}

// compatPaths are the paths of the Active Cloud DB routes, whose errors keep that API's shape, also for a method
// the path does not serve.
var compatPaths = func() map[string]bool {
	m := map[string]bool{}
	for _, rt := range routes() {
		if rt.compat {
			m[rt.pattern] = true
		}
	}
	return m
}()

// openapiPath is the route's path as openapi.json spells it.
func (rt route) openapiPath() string {
	if rt.spec != "" {
		return rt.spec
	}
	return strings.ReplaceAll(rt.pattern, "...}", "}")
}

// New returns the API's handler over store.
func New(store *kv.Store, opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = int64(store.Limits().MaxValue)
	}
	if opts.MaxPage <= 0 {
		opts.MaxPage = DefaultMaxPage
	}
	a := &api{store: store, opts: opts, log: opts.Logger, metrics: opts.Metrics, mux: http.NewServeMux()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.metrics == nil {
		a.metrics = metrics.New(store)
	}
	a.unknown = a.metrics.Command("http", "unknown")
	for _, rt := range routes() {
		a.mux.Handle(rt.method+" "+rt.pattern, a.wrap(rt))
	}
	// The query route's other methods: without this net/http redirects them to ".../keys/", the empty key, and
	// clients follow a 307 with the method and body (a DELETE of the table's URL deleted the empty key). ServeHTTP
	// answers the 405 in JSON.
	a.mux.HandleFunc("/v1/tables/{table}/keys", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	return a
}

// keepEmptySegments escapes, in the key of an item path (after /v1/tables/{table}/keys/), each '/' that begins an
// empty segment, as %2F: a literal '/' there is part of the key (docs/http.md), and net/http's ServeMux would
// otherwise redirect "x//y" to "x/y", another key, which clients follow with the method and body. The unescaped
// path is unchanged; dot segments are left to net/http.
func keepEmptySegments(r *http.Request) {
	p := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(p, "/v1/tables/")
	if !ok || !strings.Contains(rest, "//") {
		return
	}
	table, rest, ok := strings.Cut(rest, "/")
	if !ok || table == "" {
		return
	}
	key, ok := strings.CutPrefix(rest, "keys/")
	if !ok || !strings.Contains("/"+key, "//") {
		return
	}
	var b strings.Builder
	b.WriteString(p[:len(p)-len(key)])
	for i := 0; i < len(key); i++ {
		// The first '/' of a run, and one that leads the key, begin an empty segment; the run's last '/' is kept,
		// so that a literal "/incr" still ends the path.
		if key[i] == '/' && (i == 0 || i+1 < len(key) && key[i+1] == '/') {
			b.WriteString("%2F")
			continue
		}
		b.WriteByte(key[i])
	}
	r.URL.RawPath = b.String()
}

// ServeHTTP routes the request. Requests that match no route, or no method of a path, get net/http's 404 and 405
// decisions (with its Allow header) rewritten as JSON errors.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &respWriter{ResponseWriter: w}
	start := time.Now()
	keepEmptySegments(r)
	a.mux.ServeHTTP(rw, r)
	if rw.routed {
		return
	}
	if rw.swallowed != 0 {
		rw.swallowed, rw.routed = 0, true // write through from here on
		err := errNoRoute
		if rw.status == http.StatusMethodNotAllowed {
			err = newError(http.StatusMethodNotAllowed, "method_not_allowed",
				r.Method+" is not allowed here; allowed: "+rw.Header().Get("Allow"))
		}
		rw.status = 0
		if compatPaths[r.URL.Path] { // an Active Cloud DB path answers in that API's shape
			writeCompatError(rw, err)
		} else {
			writeError(rw, err)
		}
	}
	a.unknown.Observe(time.Since(start), rw.status >= 400 && rw.status != http.StatusNotFound)
}

// wrap adds what every route shares: the refusal of cross-site and DNS-rebinding requests (browser.go), the
// password check, the error reply and the metrics.
func (a *api) wrap(rt route) http.Handler {
	obs := a.metrics.Command("http", rt.command)
	write := writeError
	if rt.compat {
		write = writeCompatError
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw, ok := w.(*respWriter)
		if !ok { // served through a.mux directly (tests): account the same way
			rw = &respWriter{ResponseWriter: w}
		}
		rw.routed = true
		rw.head = r.Method == http.MethodHead
		if a.opts.Budget != nil {
			rw.hold = func() *membudget.Account { acct, _ := a.account(rw, r, true); return acct }
			// After the reply: the body and values it was built from stay counted until then. Deferred here, not
			// once the handler returned, so that a handler's panic (which net/http recovers) gives them back too.
			defer func() {
				if rw.acct != nil {
					rw.acct.Close()
				}
			}()
		}
		// The browser checks come first: a cross-site page is refused whether or not it could give the password.
		err := a.checkBrowser(r)
		switch {
		case err != nil:
		case !rt.open && !a.authorized(r):
			rw.Header().Set("WWW-Authenticate", `Bearer realm="anykv"`)
			err = errUnauthorized
		default:
			if err = checkParams(r, rt); err == nil {
				err = rt.h(a, rw, r)
			}
		}
		if err != nil {
			// A client that went away is its own business: logged for debugging only.
			gone := r.Context().Err() != nil
			if rw.status != 0 { // the reply had begun: nothing more can be said
				a.log.Log(r.Context(), level(gone, slog.LevelWarn), "http: error after the reply began", "path", r.URL.Path, "err", err)
			} else {
				// A refusal for a full disk is the store's state, logged by the store once, not per request.
				if status, _, _ := classify(err); status >= 500 && status != http.StatusInsufficientStorage {
					a.log.Log(r.Context(), level(gone, slog.LevelError), "http: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
				}
				write(rw, err)
			}
		}
		obs.Observe(time.Since(start), failed(rw.status))
		if rw.aborted {
			// Part of the reply was dropped: net/http must not end it as if it were whole (a streamed page would
			// read as a complete 200), so the response is aborted and the connection closed, as RESP's is.
			panic(http.ErrAbortHandler)
		}
	})
}

// level is the log level of a failure: debug when the client has gone away.
func level(gone bool, l slog.Level) slog.Level {
	if gone {
		return slog.LevelDebug
	}
	return l
}

// failed tells whether a status counts as an error in metrics: client and server errors, but not a plain miss
// (404) nor a failed precondition (412), which are ordinary answers as Redis's nil replies are.
func failed(status int) bool {
	return status >= 400 && status != http.StatusNotFound && status != http.StatusPreconditionFailed
}

// authorized reports whether r carries the password (the policy compares in constant time).
func (a *api) authorized(r *http.Request) bool {
	return a.opts.Auth.CheckBearer(r.Header.Get("Authorization"))
}

// Deny implements server.Denier: a client from another host while no password is set gets 403 and the reason.
func (a *api) Deny(c net.Conn) { c.Write(rawReply(errProtectedMode)) }

// Reject implements server.Rejecter: a connection over the limit gets 503 at once, not a wait.
func (a *api) Reject(c net.Conn) { c.Write(rawReply(errTooManyClients)) }

// respWriter records the status for metrics and holds back net/http's plain-text 404 and 405 replies for requests
// that matched no route, so ServeHTTP can answer them in JSON.
type respWriter struct {
	http.ResponseWriter
	status    int
	routed    bool
	swallowed int
	// acct is the request's account of body bytes in Options.Budget (body.go), closed by wrap once the handler
	// returned; reading says a body is being read, which eviction may then cut short.
	acct    *membudget.Account
	reading atomic.Bool
	writing atomic.Bool // a big reply is being written, which eviction may then cut short
	aborted bool        // the budget refused a reply: wrap aborts the response, closing the connection
	// evictBound: the request was evicted and its small writes since go out within a second (Write)
	evictBound bool
	// prepaid is what the reads of the reply's values reserved already (viewForReply): a write of no more is
	// not counted again.
	prepaid int
	head    bool // a HEAD request: net/http sends none of the body, so its values reserve nothing
	// gate admits the big values viewForReply reads before the engine copies them out.
	gate membudget.ReplyGate
	// hold opens acct when there is a budget (body.go's account); nil without one.
	hold func() *membudget.Account
}

func (w *respWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if !w.routed && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.swallowed = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallowed != 0 {
		return len(b), nil
	}
	if w.hold == nil || w.head || (len(b) < membudget.ReplyHold && w.acct == nil) { // (net/http discards a HEAD reply's body)
		return w.ResponseWriter.Write(b)
	}
	// A big reply counts against the budget while a client that does not read holds it up. A small write of a
	// request that holds room (a page's values, prepaid, streamed 32 KiB at a time) is not counted again, but is
	// judged and cut short as a big one is: before, such a write to a client that stopped reading blocked for as
	// long as the client lived, its request busy (not idle) and not writing, so no eviction could free its room.
	acct := w.hold()
	held := 0
	if len(b) > w.prepaid {
		var err error
		if held, err = acct.HoldReply(len(b)); err != nil {
			w.aborted = true
			return 0, err
		}
	}
	w.writing.Store(true)
	if acct.Evicted() {
		if len(b) >= membudget.ReplyHold {
			// Evicted before this write began (between a prepaid reply's reads and its write): the eviction found
			// no write to cut short, and this one would hold the room for as long as its client does not read.
			w.writing.Store(false)
			acct.Release(held)
			w.aborted = true
			return 0, membudget.ErrEvicted
		}
		// A small piece (a reply's status and JSON, a page's 32 KiB): written, within the second an eviction
		// gives a write under way (account), so that a client that stopped reading lets go of the room at once,
		// and one that reads learns how its request ended. Refused, a PUT evicted while in the engine was applied
		// and answered with a closed connection, and a body cut short by eviction lost its 503.
		if !w.evictBound {
			w.evictBound = true
			http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(time.Second))
		}
	}
	n, err := acct.WriteReply(w.ResponseWriter, b) // its progress keeps the request from looking idle
	w.writing.Store(false)
	acct.Release(held)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (a *api) healthz(w http.ResponseWriter, r *http.Request) error {
	// A closed or failing engine is unhealthy.
	if err := a.store.Health(r.Context()); err != nil {
		if !a.authorized(r) { // an open route: a probe without the password learns only that it is unhealthy
			return newError(http.StatusServiceUnavailable, "unavailable", "the engine is unavailable")
		}
		return unavailable(err)
	}
	status := "ok"
	if a.store.Stats().Engine["disk_full"] == 1 { // reads are served, writes refused until space is freed
		status = "read_only"
	}
	if !a.authorized(r) { // a probe without the password learns only that the server is up
		return writeJSON(w, http.StatusOK, map[string]string{"status": status})
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": status, "version": a.opts.Version})
}

// index answers the root (a new user's first request, a browser's address bar) with where the API's parts are,
// rather than a 404.
func (a *api) index(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{
		"name": "anykv", "version": a.opts.Version, "openapi": "/v1/openapi.json", "tables": "/v1/tables",
		"keys": "/v1/tables/{table}/keys/{key}", "health": "/healthz", "metrics": "/metrics",
	})
}

func (a *api) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	a.metrics.Handler().ServeHTTP(w, r)
	return nil
}
