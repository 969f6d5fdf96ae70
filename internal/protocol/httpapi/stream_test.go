package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// encodeBytes sets the text or the base64 field of a key or value: the rule writePage streams.
func encodeBytes(b []byte, forceB64 bool, text, b64 **string) {
	if !forceB64 && utf8.Valid(b) {
		s := string(b)
		*text = &s
		return
	}
	s := base64.StdEncoding.EncodeToString(b)
	*b64 = &s
}

// encoded is what encoding/json writes for v, HTML escaping off, as writeJSON does.
func encoded(t *testing.T, v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// streamTestBytes returns bytes that exercise the escaper: quotes, backslashes, control bytes, HTML characters,
// U+2028/U+2029, multibyte runes across the chunk boundaries, invalid UTF-8.
func streamTestBytes(rng *rand.Rand, n int) []byte {
	pieces := []string{"a", "\"", "\\", "\n", "\x01", "\x1f", "<", ">", "&", "\u2028", "\u2029", "é", "€", "😀",
		"\xff", "\xe2\x82", "\x80", "\t", "\x7f"}
	var b []byte
	for len(b) < n {
		b = append(b, pieces[rng.IntN(len(pieces))]...)
	}
	return b
}

// TestStreamedRepliesAreEncodingJSONs: writePage and writeTextMap write byte for byte what encoding/json wrote
// for the same page and map, values big enough to cross chunk boundaries included.
func TestStreamedRepliesAreEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		var entries []kv.Entry
		for range 1 + rng.IntN(6) {
			size := rng.IntN(64)
			if rng.IntN(3) == 0 {
				size = streamChunk*2 + rng.IntN(streamChunk)
			}
			key := streamTestBytes(rng, 1+rng.IntN(20))
			if round%2 == 0 { // valid UTF-8 keys and values too, so that the text form is exercised at size
				key = []byte(strings.ToValidUTF8(string(key), "?"))
			}
			value := streamTestBytes(rng, size)
			if round%2 == 0 {
				value = []byte(strings.ToValidUTF8(string(value), "?"))
			}
			it := engine.Item{Value: value, Version: rng.Uint64(), Flags: rng.Uint32()}
			if rng.IntN(2) == 0 {
				it.Expires = rng.Int64()
			}
			if rng.IntN(5) == 0 {
				it.Kind = engine.KindHash
			}
			entries = append(entries, kv.Entry{Key: key, Item: it})
		}
		values, b64 := rng.IntN(2) == 0, rng.IntN(4) == 0
		var next []byte
		if rng.IntN(2) == 0 {
			next = entries[len(entries)-1].Key
		}
		want := pageJSON{Items: make([]itemJSON, len(entries))}
		for i, e := range entries {
			it := &want.Items[i]
			encodeBytes(e.Key, b64, &it.Key, &it.KeyB64)
			if e.Item.Kind != engine.KindString {
				it.Kind = e.Item.Kind.String()
			} else if values {
				encodeBytes(e.Item.Value, b64, &it.Value, &it.ValueB64)
			}
			it.Version, it.Flags, it.Expires = e.Item.Version, e.Item.Flags, e.Item.Expires
		}
		if next != nil {
			want.Cursor = encodeCursor(next)
		}
		rec := httptest.NewRecorder()
		if err := writePage(rec, entries, values, b64, next); err != nil {
			t.Fatal(err)
		}
		if got, w := rec.Body.String(), encoded(t, want); got != w {
			t.Fatalf("round %d: page streamed\n%.300q\nencoding/json\n%.300q", round, got, w)
		}

		m := map[string]string{}
		for _, e := range entries {
			m[string(e.Key)] = string(e.Item.Value)
		}
		sorted := append([]kv.Entry(nil), entries...)
		sortEntries(sorted)
		sorted = uniqueKeys(sorted)
		rec = httptest.NewRecorder()
		if err := writeTextMap(rec, sorted); err != nil {
			t.Fatal(err)
		}
		if got, w := rec.Body.String(), encoded(t, m); got != w {
			t.Fatalf("round %d: map streamed\n%.300q\nencoding/json\n%.300q", round, got, w)
		}
	}
}

// sortEntries orders entries by key, as a scan returns them.
func sortEntries(es []kv.Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && bytes.Compare(es[j].Key, es[j-1].Key) < 0; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// uniqueKeys keeps the last entry of each key (as a map would), in order.
func uniqueKeys(es []kv.Entry) []kv.Entry {
	var out []kv.Entry
	for _, e := range es {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].Key, e.Key) {
			out[n-1] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// TestCompatGetIsEncodingJSONs: /get's streamed reply is what encoding/json wrote for the map {key: value,
// "error": ""}, for keys before and after "error".
func TestCompatGetIsEncodingJSONs(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	for _, k := range []string{"a", "zeta", "errors", "err", "ü<&>"} {
		v := "v\x01\"" + k
		if res := f.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: compatTable, Key: []byte(k), Value: []byte(v)}); res.Err != nil {
			t.Fatal(res.Err)
		}
		rec := f.do("GET", "/get?key="+url.QueryEscape(k), "")
		if got, want := rec.Body.String(), encoded(t, map[string]string{k: v, "error": ""}); got != want {
			t.Errorf("/get?key=%q: %q, want %q", k, got, want)
		}
	}
}
