package httpapi

import (
	"bufio"
	"encoding/base64"
	"net/http"
	"strconv"
	"unicode/utf8"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// Replies that carry values (a query page, Active Cloud DB's /get and /query) are streamed item by item, a value
// escaped straight into the buffered response: json.Encoder builds its whole reply before writing a byte, and a page holding
// one 64 MiB value of control bytes (escaped sixfold, \u0001) took 2 GB while the encoder's buffer doubled its
// way up; six such requests at once ended the process (an independent audit). The output is what encoding/json
// writes for the same reply with HTML escaping off.

// streamChunk is the response buffer's size.
const streamChunk = 32 << 10

// jsonStream writes one JSON reply through a buffer; the first error sticks and is returned by end.
type jsonStream struct {
	bw  *bufio.Writer
	err error
}

// startJSON sends the headers of a JSON reply with status, as writeJSON does, and returns its stream.
func startJSON(w http.ResponseWriter, status int) *jsonStream {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	w.WriteHeader(status)
	return &jsonStream{bw: bufio.NewWriterSize(w, streamChunk)}
}

func (s *jsonStream) raw(b string) {
	if s.err == nil {
		_, s.err = s.bw.WriteString(b)
	}
}

// text writes b as a JSON string escaped as encoding/json escapes a Go string with HTML escaping off: quote,
// backslash and control bytes escaped (\n, \r, \t, \b, \f, else \u00xx), U+2028 and U+2029 as \u2028 and
// \u2029, each byte that is not UTF-8 as \ufffd; the rest as it is, a run at a time.
func (s *jsonStream) text(b []byte) {
	s.raw(`"`)
	start := 0
	esc := func(i, n int, e string) { // b[start:i] as it is, then e for b[i:i+n]
		if s.err == nil {
			_, s.err = s.bw.Write(b[start:i])
		}
		s.raw(e)
		start = i + n
	}
	for i := 0; i < len(b) && s.err == nil; {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
			case c == '"':
				esc(i, 1, `\"`)
			case c == '\\':
				esc(i, 1, `\\`)
			case c == '\n':
				esc(i, 1, `\n`)
			case c == '\r':
				esc(i, 1, `\r`)
			case c == '\t':
				esc(i, 1, `\t`)
			case c == '\b':
				esc(i, 1, `\b`)
			case c == '\f':
				esc(i, 1, `\f`)
			default:
				esc(i, 1, `\u00`)
				if s.err == nil {
					s.bw.WriteByte(hexDigits[c>>4])
					s.err = s.bw.WriteByte(hexDigits[c&0xf])
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			esc(i, n, `\ufffd`)
		case r == '\u2028':
			esc(i, n, `\u2028`)
		case r == '\u2029':
			esc(i, n, `\u2029`)
		}
		i += n
	}
	if s.err == nil {
		_, s.err = s.bw.Write(b[start:])
	}
	s.raw(`"`)
}

const hexDigits = "0123456789abcdef"

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
