package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// cursorVersion leads every cursor, so that a later anykv can change the encoding and still reject (400) cursors
// it cannot read instead of misreading them.
const cursorVersion = 1

// encodeCursor makes the opaque cursor that resumes a query after key.
func encodeCursor(key []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion}, key...))
}

func decodeCursor(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 || b[0] != cursorVersion {
		return nil, badRequest("cursor=%q is not a cursor this server made", s)
	}
	return b[1:], nil
}

// rangeQuery reads the key selection shared by the query and count routes: prefix, start (inclusive) and end
// (exclusive), each raw bytes percent-encoded in the query string. An empty parameter is no bound.
func rangeQuery(r *http.Request) kv.Query {
	qs := r.URL.Query()
	var q kv.Query
	for name, dst := range map[string]*[]byte{"prefix": &q.Prefix, "start": &q.Start, "end": &q.End} {
		if v := qs.Get(name); v != "" {
			*dst = []byte(v)
		}
	}
	return q
}

// itemJSON is one item of a query page (writePage streams it; clients and tests decode it). Keys and values that are valid UTF-8 travel as JSON strings in key and
// value; any other bytes, or all of them with encoding=base64, travel in key_b64 and value_b64 (standard base64
// with padding), so that no byte is ever lost or replaced. A key holding a Redis collection has Kind ("hash",
// "list", "set", "zset", "stream") and never a value.
type itemJSON struct {
	Key      *string `json:"key,omitempty"`
	KeyB64   *string `json:"key_b64,omitempty"`
	Kind     string  `json:"kind,omitempty"`
	Value    *string `json:"value,omitempty"`
	ValueB64 *string `json:"value_b64,omitempty"`
	Version  uint64  `json:"version"`
	Flags    uint32  `json:"flags"`
	Expires  int64   `json:"expires,omitempty"`
}

// pageJSON is the reply of a query; Cursor is absent on the last page.
type pageJSON struct {
	Items  []itemJSON `json:"items"`
	Cursor string     `json:"cursor,omitempty"`
}

// scanParams are the paging options of the query route.
type scanParams struct {
	limit  int
	values bool
	b64    bool
}

func (a *api) scanParams(r *http.Request) (scanParams, error) {
	qs := r.URL.Query()
	p := scanParams{limit: min(defaultLimit, a.opts.MaxPage)}
	if qs.Has("limit") {
		n, err := strconv.Atoi(qs.Get("limit"))
		if err != nil || n < 1 {
			return p, badRequest("limit=%q: a page size is a positive integer", qs.Get("limit"))
		}
		p.limit = min(n, a.opts.MaxPage)
	}
	if qs.Has("values") {
		v, err := strconv.ParseBool(qs.Get("values"))
		if err != nil {
			return p, badRequest("values=%q: expected true or false", qs.Get("values"))
		}
		p.values = v
	}
	switch e := qs.Get("encoding"); e {
	case "", "text":
	case "base64":
		p.b64 = true
	default:
		return p, badRequest("encoding=%q: expected text or base64", e)
	}
	return p, nil
}

// page reads one page of a query: up to limit items after q.After, and with values at most maxBytes of them
// (always at least one item). next is where the following page starts, nil at the end.
//
// Values are read one item at a time after a keys-only scan, because kv.Query cannot stop a scan by size: a page
// of a thousand large values would otherwise be copied whole into memory before it could be cut. An item deleted
// or expired between the scan and its read is left out, as if the scan had run a moment later.
func (a *api) page(ctx context.Context, w http.ResponseWriter, table string, q kv.Query, limit int, values bool, maxBytes int64) ([]kv.Entry, []byte, error) {
	q.Limit, q.KeysOnly = limit, true
	p, err := a.store.Scan(ctx, table, q)
	if err != nil || !values {
		return p.Entries, p.Next, err
	}
	out := p.Entries[:0]
	var size int64
	for i, e := range p.Entries {
		if i > 0 && size >= maxBytes {
			return out, out[len(out)-1].Key, nil
		}
		if e.Item.Kind != engine.KindString {
			out = append(out, e) // a collection: listed with its kind, without a value (Get would refuse it)
			continue
		}
		it, err := a.pageValue(ctx, w, table, e.Key)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		size += int64(len(it.Value))
		out = append(out, kv.Entry{Key: e.Key, Item: it})
	}
	return out, p.Next, nil // all items may have vanished meanwhile: an empty page with a cursor, ask again
}

// pageValue reads the item of a values page at key: a string with its value or, if the key holds a collection now
// (written over RESP since the page's scan), the collection's kind and metadata without a value, as if the scan had
// run later. Before, such a key failed the whole page with 409 wrong_type.
func (a *api) pageValue(ctx context.Context, w http.ResponseWriter, table string, key []byte) (engine.Item, error) {
	for try := 0; ; try++ {
		it, err := a.viewForReply(ctx, w, table, key, nil)
		if !errors.Is(err, engine.ErrWrongType) || try == 3 {
			return it, err
		}
		if it, err = a.store.PeekAnyAt(ctx, table, key, a.store.Now()); err != nil || it.Kind != engine.KindString {
			return engine.Item{Kind: it.Kind, Version: it.Version, Flags: it.Flags, Expires: it.Expires}, err
		}
		// a string again: read its value as a string, within the budget
	}
}

// scan serves GET /v1/tables/{table}/keys: one page of items in key order.
func (a *api) scan(w http.ResponseWriter, r *http.Request) error {
	table := r.PathValue("table")
	p, err := a.scanParams(r)
	if err != nil {
		return err
	}
	q := rangeQuery(r)
	if c := r.URL.Query().Get("cursor"); c != "" {
		if q.After, err = decodeCursor(c); err != nil {
			return err
		}
	}
	ctx, err := readCtx(r)
	if err != nil {
		return err
	}
	entries, next, err := a.page(ctx, w, table, q, p.limit, p.values, min(a.opts.MaxBody, maxPageBytes))
	if err != nil {
		return err
	}
	return writePage(w, entries, p.values, p.b64, next)
}

// count serves GET /v1/tables/{table}/count: how many live items the selection holds.
func (a *api) count(w http.ResponseWriter, r *http.Request) error {
	ctx, err := readCtx(r)
	if err != nil {
		return err
	}
	n, err := a.store.Count(ctx, r.PathValue("table"), rangeQuery(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// tables serves GET /v1/tables: the tables that hold items, sorted.
func (a *api) tables(w http.ResponseWriter, r *http.Request) error {
	names, err := a.store.Tables(r.Context())
	if err != nil {
		return err
	}
	if names == nil {
		names = []string{}
	}
	body := map[string][]string{"tables": names}
	// JSON strings are UTF-8: a name of other bytes would reach the client with U+FFFD in place of them, and could
	// not be addressed from the list. Then every name travels in tables_b64 too (standard base64, same order).
	for _, n := range names {
		if !utf8.ValidString(n) {
			b64 := make([]string, len(names))
			for i, n := range names {
				b64[i] = base64.StdEncoding.EncodeToString([]byte(n))
			}
			body["tables_b64"] = b64
			break
		}
	}
	return writeJSON(w, http.StatusOK, body)
}
