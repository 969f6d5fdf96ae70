package httpapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// Replies that carry values (a query page, Active Cloud DB's /query) are streamed item by item, and a value as it
// is escaped, a chunk at a time: json.Encoder builds its whole reply before writing a byte, and a page holding
// one 64 MiB value of control bytes (escaped sixfold, \u0001) took 2 GB while the encoder's buffer doubled its
// way up; six such requests at once ended the process (an independent audit). The output is what encoding/json
// writes for the same reply with HTML escaping off.

// streamChunk is how much of a value is escaped at a time.
const streamChunk = 32 << 10

// jsonStream writes one JSON reply through a buffer; the first error sticks and is returned by end.
type jsonStream struct {
	bw  *bufio.Writer
	enc *json.Encoder // escapes strings a chunk at a time into esc
	esc bytes.Buffer
	err error
}

// startJSON sends the headers of a JSON reply with status, as writeJSON does, and returns its stream.
func startJSON(w http.ResponseWriter, status int) *jsonStream {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	w.WriteHeader(status)
	s := &jsonStream{bw: bufio.NewWriterSize(w, streamChunk)}
	s.enc = json.NewEncoder(&s.esc)
	s.enc.SetEscapeHTML(false)
	return s
}

func (s *jsonStream) raw(b string) {
	if s.err == nil {
		_, s.err = s.bw.WriteString(b)
	}
}

// text writes b as a JSON string, escaped as encoding/json escapes a Go string (bytes that are not UTF-8 become
// U+FFFD), a chunk at a time cut at rune starts, so that no rune is split.
func (s *jsonStream) text(b []byte) {
	s.raw(`"`)
	for len(b) > 0 && s.err == nil {
		n := min(len(b), streamChunk)
		for back := n; n < len(b) && back > n-utf8.UTFMax; back-- { // cut before a rune start, if one is near
			if utf8.RuneStart(b[back]) {
				n = back
				break
			}
		}
		s.esc.Reset()
		if s.err = s.enc.Encode(string(b[:n])); s.err == nil {
			q := s.esc.Bytes()
			_, s.err = s.bw.Write(q[1 : len(q)-2]) // without the quotes and the newline Encode adds
		}
		b = b[n:]
	}
	s.raw(`"`)
}

// b64 writes b as a JSON string of its standard base64.
func (s *jsonStream) b64(b []byte) {
	s.raw(`"`)
	if s.err == nil {
		enc := base64.NewEncoder(base64.StdEncoding, s.bw)
		if _, s.err = enc.Write(b); s.err == nil {
			s.err = enc.Close()
		}
	}
	s.raw(`"`)
}

// bytesField writes `"name":` with b as text, or `"name_b64":` with b in base64 when forceB64 is set or b is
// not UTF-8 (encodeBytes's rule).
func (s *jsonStream) bytesField(name string, b []byte, forceB64 bool) {
	if !forceB64 && utf8.Valid(b) {
		s.raw(`"` + name + `":`)
		s.text(b)
		return
	}
	s.raw(`"` + name + `_b64":`)
	s.b64(b)
}

// end flushes the stream and returns its first error.
func (s *jsonStream) end() error {
	s.raw("\n")
	if s.err == nil {
		s.err = s.bw.Flush()
	}
	return s.err
}

// writePage streams a query page: itemJSON's fields for each entry (values if values, base64 if b64) and the
// cursor of next, as pageJSON.
func writePage(w http.ResponseWriter, entries []kv.Entry, values, b64 bool, next []byte) error {
	s := startJSON(w, http.StatusOK)
	s.raw(`{"items":[`)
	for i, e := range entries {
		if i > 0 {
			s.raw(",")
		}
		s.raw("{")
		s.bytesField("key", e.Key, b64)
		if e.Item.Kind != engine.KindString {
			s.raw(`,"kind":`)
			s.text([]byte(e.Item.Kind.String()))
		} else if values {
			s.raw(",")
			s.bytesField("value", e.Item.Value, b64)
		}
		s.raw(`,"version":` + strconv.FormatUint(e.Item.Version, 10) + `,"flags":` +
			strconv.FormatUint(uint64(e.Item.Flags), 10))
		if e.Item.Expires != 0 {
			s.raw(`,"expires":` + strconv.FormatInt(e.Item.Expires, 10))
		}
		s.raw("}")
	}
	s.raw("]")
	if next != nil {
		s.raw(`,"cursor":"` + encodeCursor(next) + `"`) // base64url: nothing to escape
	}
	s.raw("}")
	return s.end()
}

// writeTextMap streams the JSON object {"<key>": "<value>", ...} of entries in their (key) order, which is the
// order encoding/json writes a map's keys in.
func writeTextMap(w http.ResponseWriter, entries []kv.Entry) error {
	s := startJSON(w, http.StatusOK)
	s.raw("{")
	for i, e := range entries {
		if i > 0 {
			s.raw(",")
		}
		s.text(e.Key)
		s.raw(":")
		s.text(e.Item.Value)
	}
	s.raw("}")
	return s.end()
}
