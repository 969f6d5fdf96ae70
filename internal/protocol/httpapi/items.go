package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// Headers of the item routes.
const (
	hdrFlags      = "X-Anykv-Flags"
	hdrVersion    = "X-Anykv-Version"
	hdrExpires    = "X-Anykv-Expires"
	hdrTTLMs      = "X-Anykv-Ttl-Ms" // canonical form of X-Anykv-TTL-Ms
	hdrTTL        = "X-Anykv-Ttl"    // canonical form of X-Anykv-TTL
	hdrOldVersion = "X-Anykv-Old-Version"
	hdrOldFlags   = "X-Anykv-Old-Flags"
)

// target returns the table and key an item route names. The key is the path segment after /keys/, unescaped by
// net/http, so any bytes can be sent percent-encoded; it must fit the store's key limit (400 key_too_large).
func (a *api) target(r *http.Request) (string, []byte, error) {
	table, key := r.PathValue("table"), []byte(r.PathValue("key"))
	if table == "" {
		return "", nil, badRequest("empty table name")
	}
	if err := a.store.CheckKey(key); err != nil {
		return "", nil, err
	}
	return table, key, nil
}

// etag renders a version as a strong entity tag.
func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }

// setItemHeaders describes an item in headers: its ETag, version, flags and, if it expires, when and in how long.
func setItemHeaders(h http.Header, it engine.Item, now int64) {
	h.Set("ETag", etag(it.Version))
	h.Set(hdrVersion, strconv.FormatUint(it.Version, 10))
	h.Set(hdrFlags, strconv.FormatUint(uint64(it.Flags), 10))
	if it.Expires != 0 {
		h.Set(hdrExpires, strconv.FormatInt(it.Expires, 10))
		h.Set(hdrTTLMs, strconv.FormatInt(max(it.Expires-now, 1), 10))
	}
}

// getItem serves GET and HEAD: the raw value with its metadata in headers, 304 when If-None-Match names the
// current version, 412 when If-Match does not.
func (a *api) getItem(w http.ResponseWriter, r *http.Request) error {
	table, key, err := a.target(r)
	if err != nil {
		return err
	}
	ctx, err := readCtx(r)
	if err != nil {
		return err
	}
	// The value is counted (viewForReply) only when the reply carries it: not for HEAD, 412 or 304.
	var sends func(engine.Item) bool
	if len(r.Header.Values("If-Match")) > 0 || len(r.Header.Values("If-None-Match")) > 0 {
		sends = func(it engine.Item) bool { return readCondition(r, it.Version) == 0 }
	}
	it, err := a.viewForReply(ctx, w, table, key, sends)
	if err != nil {
		return err
	}
	h := w.Header()
	setItemHeaders(h, it, a.store.Now())
	h.Set("Cache-Control", "no-cache")
	switch readCondition(r, it.Version) {
	case http.StatusPreconditionFailed:
		return errPrecondition
	case http.StatusNotModified:
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(it.Value)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, err = w.Write(it.Value)
	}
	return err
}

// readCondition is what r's If-Match and If-None-Match answer for an item of version: 412, 304, or 0 for the item.
func readCondition(r *http.Request, version uint64) int {
	if im := r.Header.Values("If-Match"); len(im) > 0 && !matchAny(im, version, false) {
		return http.StatusPreconditionFailed
	}
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && matchAny(inm, version, true) {
		return http.StatusNotModified
	}
	return 0
}

// matchAny reports whether a list of entity tags (from one or more header lines) matches version: "*" matches any
// item; weak tags (W/"n") match only under weak comparison (If-None-Match). Malformed tags match nothing.
func matchAny(lines []string, version uint64, weak bool) bool {
	want := etag(version)
	for _, line := range lines {
		for _, tag := range strings.Split(line, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" {
				return true
			}
			if t, ok := strings.CutPrefix(tag, "W/"); ok {
				if !weak {
					continue
				}
				tag = t
			}
			if tag == want {
				return true
			}
		}
	}
	return false
}

// precondition is what If-Match or If-None-Match asks of a write, as an engine condition applied atomically with
// the write.
type precondition struct {
	cond    engine.Cond
	version uint64
	// never: the condition cannot hold (a weak or non-numeric tag, or version 0, which no item has).
	never bool
}

// set reports whether the request carried a precondition.
func (p precondition) set() bool { return p.cond != engine.CondNone || p.never }

// fail turns the store's answer to a conditional write into the reply: any miss under a precondition is a failed
// precondition (412), not a 404, as RFC 9110 wants for If-Match on a missing resource.
func (p precondition) fail(err error) error {
	if p.set() && isNotFound(err) {
		return errPrecondition
	}
	return err
}

// writePrecondition reads the conditional headers of a write. If-Match takes "*" (the item must exist) or one
// strong tag (the item must have that version); If-None-Match takes only "*" (the item must not exist).
func writePrecondition(r *http.Request) (precondition, error) {
	im := strings.TrimSpace(strings.Join(r.Header.Values("If-Match"), ","))
	inm := strings.TrimSpace(strings.Join(r.Header.Values("If-None-Match"), ","))
	var p precondition
	switch {
	case im != "" && inm != "":
		return p, badRequest("send If-Match or If-None-Match, not both")
	case inm == "*":
		p.cond = engine.CondAbsent
	case inm != "":
		return p, badRequest("If-None-Match on a write supports only *")
	case im == "*":
		p.cond = engine.CondPresent
	case im != "":
		if strings.Contains(im, ",") {
			return p, badRequest("If-Match on a write takes one entity tag")
		}
		if strings.HasPrefix(im, "W/") {
			p.never = true // strong comparison never matches a weak tag
			return p, nil
		}
		if len(im) < 2 || im[0] != '"' || im[len(im)-1] != '"' {
			return p, badRequest("If-Match: malformed entity tag %q (expected \"<version>\")", im)
		}
		v, err := strconv.ParseUint(im[1:len(im)-1], 10, 64)
		if err != nil || v == 0 || etag(v) != im { // compared strongly, character for character, as on reads: "0145" is not "145"
			p.never = true
			return p, nil
		}
		p.cond, p.version = engine.CondVersion, v
	}
	return p, nil
}

// returnOld reads ?return=old.
func returnOld(r *http.Request) (bool, error) {
	q := r.URL.Query()
	if !q.Has("return") {
		return false, nil
	}
	if v := q.Get("return"); v != "old" {
		return false, badRequest("return=%q: the only choice is return=old", v)
	}
	return true, nil
}

// oneOf returns the single value given among query parameters and headers, and its name; two given (a header
// repeated included) is an error.
func oneOf(r *http.Request, params, headers []string) (name, value string, err error) {
	q := r.URL.Query()
	found := func(n, v string) error {
		if name != "" {
			return badRequest("give one of %s and %s, not both", name, n)
		}
		name, value = n, v
		return nil
	}
	for _, p := range params {
		if q.Has(p) {
			if err = found(p, q.Get(p)); err != nil {
				return
			}
		}
	}
	for _, h := range headers {
		if vs := r.Header.Values(h); len(vs) > 1 { // as a repeated query parameter (checkParams)
			return "", "", badRequest("header %s given %d times", h, len(vs))
		}
		if v := r.Header.Get(h); v != "" {
			if err = found(h, v); err != nil {
				return
			}
		}
	}
	return
}

// flagsOf reads the client flags of a write (?flags= or X-Anykv-Flags), a 32-bit unsigned integer; default 0.
func flagsOf(r *http.Request) (uint32, error) {
	name, v, err := oneOf(r, []string{"flags"}, []string{hdrFlags})
	if err != nil || name == "" {
		return 0, err
	}
	f, perr := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if perr != nil {
		return 0, badRequest("%s=%q: flags are an unsigned 32-bit integer", name, v)
	}
	return uint32(f), nil
}

// expiresOf reads the time to live of a write (?ttl= or X-Anykv-TTL in seconds, ?ttl_ms= or X-Anykv-TTL-Ms in
// milliseconds; at most one, positive) and returns the absolute expiry in unix ms, 0 for none.
func (a *api) expiresOf(r *http.Request) (int64, error) {
	name, v, err := oneOf(r, []string{"ttl", "ttl_ms"}, []string{hdrTTL, hdrTTLMs})
	if err != nil || name == "" {
		return 0, err
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if perr != nil || n <= 0 {
		return 0, badRequest("%s=%q: a time to live is a positive integer", name, v)
	}
	unit := time.Millisecond
	if name == "ttl" || name == hdrTTL {
		unit = time.Second
	}
	at, ok := kv.ExpiresIn(a.store.Now(), n, unit)
	if !ok {
		return 0, badRequest("%s=%q: time to live too large", name, v)
	}
	return at, nil
}

// writeTarget reads what PUT and DELETE share: the item, the precondition and ?return=old.
func (a *api) writeTarget(r *http.Request) (table string, key []byte, pre precondition, ret bool, err error) {
	if table, key, err = a.target(r); err != nil {
		return
	}
	if pre, err = writePrecondition(r); err != nil {
		return
	}
	ret, err = returnOld(r)
	return
}

// versionBody is the JSON reply of a write: the item's new version, also sent as the ETag.
type versionBody struct {
	Version uint64 `json:"version"`
}

// putItem stores the body as the item's value: 201 when it created the item, 200 when it replaced one, each with
// {"version": N}; with ?return=old the previous value instead (200), or 204 when there was none.
func (a *api) putItem(w http.ResponseWriter, r *http.Request) error {
	table, key, pre, ret, err := a.writeTarget(r)
	if err != nil {
		return err
	}
	flags, err := flagsOf(r)
	if err != nil {
		return err
	}
	expires, err := a.expiresOf(r)
	if err != nil {
		return err
	}
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	if pre.never {
		return errPrecondition
	}
	res := a.store.Apply1(r.Context(), engine.Mutation{Op: engine.OpSet, Table: table, Key: key, Value: body,
		Flags: flags, Expires: expires, Cond: pre.cond, Version: pre.version})
	if res.Err != nil {
		return pre.fail(res.Err)
	}
	h := w.Header()
	h.Set("ETag", etag(res.New.Version))
	h.Set(hdrVersion, strconv.FormatUint(res.New.Version, 10))
	if ret {
		return writeOld(w, res)
	}
	status := http.StatusOK
	if !res.OldFound {
		status = http.StatusCreated
		h.Set("Location", r.URL.EscapedPath())
	}
	return writeJSON(w, status, versionBody{res.New.Version})
}

// writeOld answers ?return=old: the previous value as the body with its version and flags in headers, or 204 No
// Content when there was no previous item.
func writeOld(w http.ResponseWriter, res engine.Result) error {
	if !res.OldFound {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	h := w.Header()
	h.Set(hdrOldVersion, strconv.FormatUint(res.Old.Version, 10))
	h.Set(hdrOldFlags, strconv.FormatUint(uint64(res.Old.Flags), 10))
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(res.Old.Value)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(res.Old.Value)
	return err
}

// deleteItem removes the item: 204, or 404 when there is none; with ?return=old the removed value (200).
func (a *api) deleteItem(w http.ResponseWriter, r *http.Request) error {
	table, key, pre, ret, err := a.writeTarget(r)
	if err != nil {
		return err
	}
	if pre.never {
		return errPrecondition
	}
	res := a.store.Apply1(r.Context(), engine.Mutation{Op: engine.OpDelete, Table: table, Key: key,
		Cond: pre.cond, Version: pre.version})
	if res.Err != nil {
		return pre.fail(res.Err)
	}
	if ret {
		return writeOld(w, res)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// incrBody is the reply of incr.
type incrBody struct {
	Value int64 `json:"value"`
}

// incr adds ?by= (default 1, may be negative) to the item's integer value with Redis's INCRBY semantics: a
// missing item starts at 0, a value that is not a 64-bit integer is 409 not_integer, overflow is 409 overflow, and
// the item keeps its expiry and flags.
func (a *api) incr(w http.ResponseWriter, r *http.Request) error {
	// Only a path that ends in a literal (unescaped) "/incr" after the key names the increment; the key is what
	// precedes it. .../keys/incr names the item "incr", which takes no POST (it incremented "incr").
	if !strings.HasSuffix(r.URL.EscapedPath(), "/incr") || !strings.HasSuffix(r.PathValue("key"), "/incr") {
		w.Header().Set("Allow", "DELETE, GET, HEAD, PUT")
		return newError(http.StatusMethodNotAllowed, "method_not_allowed",
			"POST is allowed only on .../keys/{key}/incr; an item takes DELETE, GET, HEAD, PUT")
	}
	r.SetPathValue("key", strings.TrimSuffix(r.PathValue("key"), "/incr"))
	table, key, err := a.target(r)
	if err != nil {
		return err
	}
	by := int64(1)
	if q := r.URL.Query(); q.Has("by") {
		if by, err = strconv.ParseInt(q.Get("by"), 10, 64); err != nil {
			return badRequest("by=%q: an increment is a signed 64-bit integer", q.Get("by"))
		}
	}
	pre, err := writePrecondition(r)
	if err != nil {
		return err
	}
	if pre.never {
		return errPrecondition
	}
	res := a.store.Apply1(r.Context(), engine.Mutation{Op: engine.OpIncr, Table: table, Key: key, Incr: engine.IncrArgs{Delta: by, Create: true}, Cond: pre.cond, Version: pre.version})
	if res.Err != nil {
		return pre.fail(res.Err)
	}
	n, err := strconv.ParseInt(string(res.New.Value), 10, 64)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(res.New.Version))
	w.Header().Set(hdrVersion, strconv.FormatUint(res.New.Version, 10))
	return writeJSON(w, http.StatusOK, incrBody{n})
}
