package httpapi

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// The Active Cloud DB routes speak the API of Active Cloud DB (AppScale's REST front to the App Engine datastore;
// its Go edition registers /get, /put, /delete and /query): form fields key and val (value is accepted too) sent
// in the query string or a form body, and JSON replies that carry an "error" string, empty on success. They work
// on table "default" and on text: values that are not valid UTF-8 come back with U+FFFD in place of bad bytes, so
// binary clients use /v1. Reads answer GET and POST; writes only POST, so that no crawler or prefetch writes.

// compatTable is the table of the Active Cloud DB routes, the one RESP database 0 and memcached use.
const compatTable = kv.DefaultTable

// form parses the request's form fields from the query string and a urlencoded or multipart body. The body
// may be formLimit: a value of MaxBody bytes, percent-encoded, with the other fields and multipart's headers;
// the store then bounds the value itself, as on /v1.
func (a *api) form(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	limit := formLimit(a.opts.MaxBody)
	if err := a.formBody(w, r, limit); err != nil {
		return nil, err
	}
	err := r.ParseForm() // ParseMultipartForm would hide its errors behind ErrNotMultipart
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
		err = r.ParseMultipartForm(limit)
	}
	if err != nil {
		return nil, badRequest("malformed form: %v", err)
	}
	return r.Form, nil
}

// formLimit is the largest form body for values of maxValue bytes: each byte percent-encoded, and room for the
// rest of the form.
func formLimit(maxValue int64) int64 { return 3*maxValue + 64<<10 }

// formKey returns the form's key field, required by every route that names an item.
func (a *api) formKey(w http.ResponseWriter, r *http.Request) (url.Values, []byte, error) {
	f, err := a.form(w, r)
	if err != nil {
		return nil, nil, err
	}
	if !f.Has("key") {
		return nil, nil, badRequest("missing form field key")
	}
	key := []byte(f.Get("key"))
	if err := a.store.CheckKey(key); err != nil {
		return nil, nil, err
	}
	return f, key, nil
}

// acdbGet answers {"<key>": "<value>", "error": ""}, or {"<key>": "", "error": "not found"} (status 200, as
// Active Cloud DB did) when the key holds nothing.
func (a *api) acdbGet(w http.ResponseWriter, r *http.Request) error {
	_, key, err := a.formKey(w, r)
	if err != nil {
		return err
	}
	if string(key) == "error" {
		return badRequest(`the key "error" collides with the reply's error field: read it through /v1`)
	}
	it, err := a.viewForReply(r.Context(), w, compatTable, key, nil)
	switch {
	case isNotFound(err):
		return writeJSON(w, http.StatusOK, map[string]string{string(key): "", "error": engine.ErrNotFound.Error()})
	case err != nil:
		return err
	}
	reply := []kv.Entry{{Key: key, Item: it}, {Key: []byte("error")}} // a map's keys, in encoding/json's order
	if string(key) > "error" {
		reply[0], reply[1] = reply[1], reply[0]
	}
	return writeTextMap(w, reply) // streamed: a 64 MiB value escapes to up to 384 MiB of JSON
}

// acdbPut stores val (or value) at key and answers {"error": ""}.
func (a *api) acdbPut(w http.ResponseWriter, r *http.Request) error {
	f, key, err := a.formKey(w, r)
	if err != nil {
		return err
	}
	name := "value"
	if !f.Has(name) {
		name = "val"
	}
	if !f.Has(name) {
		return badRequest("missing form field val (or value)")
	}
	val := f.Get(name)
	if int64(len(val)) > a.opts.MaxBody { // the bound of a value on /v1, where the body is the value
		return &http.MaxBytesError{Limit: a.opts.MaxBody}
	}
	res := a.store.Apply1(r.Context(), engine.Mutation{Op: engine.OpSet, Table: compatTable, Key: key,
		Value: []byte(val)})
	if res.Err != nil {
		return res.Err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"error": ""})
}

// acdbDelete removes key and answers {"error": ""}; deleting a missing key succeeds, as a datastore delete does.
func (a *api) acdbDelete(w http.ResponseWriter, r *http.Request) error {
	_, key, err := a.formKey(w, r)
	if err != nil {
		return err
	}
	res := a.store.Apply1(r.Context(), engine.Mutation{Op: engine.OpDelete, Table: compatTable, Key: key})
	if res.Err != nil && !isNotFound(res.Err) {
		return res.Err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"error": ""})
}

// acdbQuery answers every item of the table as one JSON object {"<key>": "<value>", ...}. Active Cloud DB has no
// paging, so rather than cut the answer silently it fails with 413 when the table holds more than MaxPage items or
// more than MaxBody bytes of values; /v1 pages through any table.
func (a *api) acdbQuery(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.form(w, r); err != nil {
		return err
	}
	entries, next, err := a.page(r.Context(), w, compatTable, kv.Query{}, a.opts.MaxPage, true, a.opts.MaxBody)
	if err != nil {
		return err
	}
	var size int64
	for _, e := range entries {
		size += int64(len(e.Item.Value))
	}
	if next != nil || size > a.opts.MaxBody {
		return newError(http.StatusRequestEntityTooLarge, "too_large", "the table holds more than "+
			strconv.Itoa(len(entries))+" items or too many bytes for one answer: page through GET /v1/tables/default/keys")
	}
	strs := entries[:0]
	for _, e := range entries {
		if e.Item.Kind == engine.KindString { // a Redis collection has no value to show here
			strs = append(strs, e)
		}
	}
	return writeTextMap(w, strs)
}

// acdbCount answers {"count": N, "error": ""}: the items of the table.
func (a *api) acdbCount(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.form(w, r); err != nil {
		return err
	}
	n, err := a.store.Count(r.Context(), compatTable, kv.Query{})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"count": n, "error": ""})
}
