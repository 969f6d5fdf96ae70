package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// str dereferences an optional JSON string field, "<nil>" when absent.
func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// allKeys pages through a query with the given page size and returns the keys in order, checking every page's
// size and the cursor's absence at the end.
func allKeys(t *testing.T, f *fixture, base string, limit int) []string {
	t.Helper()
	var keys []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the cursor never ends")
		}
		target := base + fmt.Sprintf("&limit=%d", limit)
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		rec := f.do("GET", target, "")
		wantStatus(t, rec, http.StatusOK)
		p := decodeJSON[pageJSON](t, rec)
		if len(p.Items) > limit {
			t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
		}
		for _, it := range p.Items {
			keys = append(keys, str(it.Key))
		}
		if p.Cursor == "" {
			return keys
		}
		cursor = p.Cursor
	}
}

func TestQueryPagesInKeyOrder(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	var want []string
	for i := 0; i < 25; i++ {
		k := fmt.Sprintf("k%02d", i)
		want = append(want, k)
		f.set("default", k, "v", 0, 0)
	}
	f.set("other", "k99", "v", 0, 0) // another table stays out
	for _, limit := range []int{1, 7, 10, 25, 100} {
		got := allKeys(t, f, "/v1/tables/default/keys?", limit)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("limit %d: keys %v", limit, got)
		}
	}
	// The default page is 100 items; an empty table gives an empty list, not null.
	rec := f.do("GET", "/v1/tables/empty/keys", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"items":[]}` {
		t.Fatalf("empty table: %d %s", rec.Code, rec.Body.String())
	}
}

func TestQueryRangesAndCount(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	for _, k := range []string{"a", "ab", "abc", "b", "ba", "c", "\xff", "\xff\x01"} {
		f.set("default", k, "v", 0, 0)
	}
	cases := []struct {
		q    string
		want string
	}{
		{"", "a,ab,abc,b,ba,c,\xff,\xff\x01"},
		{"prefix=a", "a,ab,abc"},
		{"prefix=ab", "ab,abc"},
		{"start=ab&end=ba", "ab,abc,b"},
		{"start=b", "b,ba,c,\xff,\xff\x01"},
		{"end=b", "a,ab,abc"},
		{"prefix=a&start=ab&end=abc", "ab"},
		{"prefix=%FF", "\xff,\xff\x01"},
		{"start=c&end=a", ""},
		{"prefix=", "a,ab,abc,b,ba,c,\xff,\xff\x01"},
	}
	for _, c := range cases {
		rec := f.do("GET", "/v1/tables/default/keys?encoding=base64&"+c.q, "")
		wantStatus(t, rec, http.StatusOK)
		var got []string
		for _, it := range decodeJSON[pageJSON](t, rec).Items {
			k, err := base64.StdEncoding.DecodeString(str(it.KeyB64))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(k))
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%q: keys %q, want %q", c.q, got, c.want)
		}
		rec = f.do("GET", "/v1/tables/default/count?"+c.q, "")
		wantStatus(t, rec, http.StatusOK)
		if n := decodeJSON[map[string]int64](t, rec)["count"]; n != int64(len(got)) {
			t.Errorf("count %q = %d, want %d", c.q, n, len(got))
		}
	}
}

func TestQueryValuesAndEncoding(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	exp := f.store.Now() + 60000
	f.set("default", "text", "héllo", 5, exp)
	f.set("default", "\x80bin", "\x00\xfe", 0, 0)
	f.set("default", "z", "", 0, 0)
	rec := f.do("GET", "/v1/tables/default/keys?values=true", "")
	items := decodeJSON[pageJSON](t, rec).Items
	if len(items) != 3 {
		t.Fatalf("items %+v", items)
	}
	text, z, bin := items[0], items[1], items[2] // byte order: "text" < "z" < "\x80bin"
	if bin.Key != nil || str(bin.KeyB64) != base64.StdEncoding.EncodeToString([]byte("\x80bin")) ||
		bin.Value != nil || str(bin.ValueB64) != "AP4=" {
		t.Errorf("binary item %+v", bin)
	}
	if str(text.Key) != "text" || text.KeyB64 != nil || str(text.Value) != "héllo" || text.Flags != 5 ||
		text.Expires != exp || text.Version == 0 {
		t.Errorf("text item %+v", text)
	}
	if str(z.Value) != "" || z.Value == nil || z.Expires != 0 {
		t.Errorf("empty value item %+v", z)
	}
	if !strings.Contains(rec.Body.String(), `"value":""`) || strings.Contains(rec.Body.String(), `"expires":0`) {
		t.Errorf("raw JSON: %s", rec.Body.String())
	}
	// Without values=true only keys and metadata travel.
	for _, it := range decodeJSON[pageJSON](t, f.do("GET", "/v1/tables/default/keys?values=false", "")).Items {
		if it.Value != nil || it.ValueB64 != nil || it.Version == 0 {
			t.Errorf("keys-only item %+v", it)
		}
	}
	// encoding=base64 puts everything in the _b64 fields.
	for _, it := range decodeJSON[pageJSON](t, f.do("GET", "/v1/tables/default/keys?values=1&encoding=base64", "")).Items {
		if it.Key != nil || it.Value != nil || it.KeyB64 == nil || it.ValueB64 == nil {
			t.Errorf("base64 item %+v", it)
		}
	}
	// Expired items are invisible.
	f.clock.Advance(61 * time.Second)
	if n := len(decodeJSON[pageJSON](t, f.do("GET", "/v1/tables/default/keys", "")).Items); n != 2 {
		t.Errorf("%d items after expiry, want 2", n)
	}
}

func TestQueryBadParameters(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "values=maybe", "encoding=hex", "cursor=!!",
		"cursor=" + base64.RawURLEncoding.EncodeToString([]byte{9, 'k'}), "limit=1&limit=2",
		// A query string that does not parse is refused, not read as if the bad parameter were absent.
		"cursor=%ZZ", "cursor=AXNlc3Npb24;limit=1", "limit=1&cursor=%"} {
		wantError(t, f.do("GET", "/v1/tables/default/keys?"+q, ""), http.StatusBadRequest, "bad_request")
	}
	wantError(t, f.do("GET", "/v1/tables/default/count?prefix=%ZZ", ""), http.StatusBadRequest, "bad_request")
}

func TestQueryPageBounds(t *testing.T) {
	f := newFixture(t, Options{MaxPage: 5, MaxBody: 10}, kv.Limits{})
	for i := 0; i < 12; i++ {
		f.set("default", fmt.Sprintf("k%02d", i), "abcd", 0, 0)
	}
	f.set("default", "k99", strings.Repeat("x", 50), 0, 0) // larger than the byte budget alone
	// limit is clamped to MaxPage.
	p := decodeJSON[pageJSON](t, f.do("GET", "/v1/tables/default/keys?limit=100", ""))
	if len(p.Items) != 5 || p.Cursor == "" {
		t.Fatalf("clamped page: %d items, cursor %q", len(p.Items), p.Cursor)
	}
	// With values, a page stops once its values pass MaxBody bytes (10): 3 values of 4 bytes.
	var got []string
	cursor := ""
	for {
		target := "/v1/tables/default/keys?values=true"
		if cursor != "" {
			target += "&cursor=" + cursor
		}
		p := decodeJSON[pageJSON](t, f.do("GET", target, ""))
		if len(p.Items) == 0 || len(p.Items) > 3 {
			t.Fatalf("page of %d items", len(p.Items))
		}
		for _, it := range p.Items {
			got = append(got, str(it.Key))
		}
		if p.Cursor == "" {
			break
		}
		cursor = p.Cursor
	}
	if len(got) != 13 || got[12] != "k99" {
		t.Fatalf("paged keys %v", got)
	}
}

func TestTables(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	rec := f.do("GET", "/v1/tables", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"tables":[]}` {
		t.Fatalf("no tables: %d %s", rec.Code, rec.Body.String())
	}
	f.set("db1", "k", "v", 0, 0)
	f.set("default", "k", "v", 0, 0)
	got := decodeJSON[map[string][]string](t, f.do("GET", "/v1/tables", ""))["tables"]
	if strings.Join(got, ",") != "db1,default" {
		t.Fatalf("tables %v", got)
	}
	// A name that is not UTF-8 comes back whole in tables_b64 (the audit: "t\xff" was listed as "t\ufffd").
	f.set("t\xff", "k", "v", 0, 0)
	lists := decodeJSON[map[string][]string](t, f.do("GET", "/v1/tables", ""))
	if b := lists["tables_b64"]; len(b) != 3 || b[2] != base64.StdEncoding.EncodeToString([]byte("t\xff")) {
		t.Fatalf("tables_b64 %v", b)
	}
}

// A cursor is the version byte and the resume key, nothing else to split: every key, the empty one and keys
// that begin with the version byte included, gives its own cursor and comes back exactly, so paging resumes
// where it stopped.
func TestCursorsCannotCollide(t *testing.T) {
	keys := []string{"", "\x00", "\x01", "\x01\x01", "a", "a\x00", "\xff", strings.Repeat("k", 70000)}
	for i := 0; i < 256; i++ {
		keys = append(keys, string([]byte{byte(i)}), string([]byte{cursorVersion, byte(i)}))
	}
	seen := map[string]string{}
	for _, k := range keys {
		c := encodeCursor([]byte(k))
		if other, ok := seen[c]; ok && other != k {
			t.Fatalf("keys %q and %q share the cursor %q", other, k, c)
		}
		seen[c] = k
		got, err := decodeCursor(c)
		if err != nil || got == nil || string(got) != k {
			t.Fatalf("cursor of %.20q decodes as %.20q (nil: %v), %v", k, got, got == nil, err)
		}
	}
	// The empty key ends a page like any other key.
	f := newFixture(t, Options{}, kv.Limits{})
	for _, k := range []string{"", "\x01", "a"} {
		f.set("t", k, "v", 0, 0)
	}
	if got := allKeys(t, f, "/v1/tables/t/keys?encoding=text", 1); fmt.Sprintf("%q", got) != `["" "\x01" "a"]` {
		t.Fatalf("paging one key at a time: %q", got)
	}
}

// TestQueryOverCollections: a Redis collection among the keys is listed with its kind and no value, with or
// without values=true; a values page over it used to fail whole with 409 wrong_type, as did Active Cloud DB's
// /query, which now answers the table's values and leaves the collection out.
func TestQueryOverCollections(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	f.set("default", "a", "1", 0, 0)
	hset := engine.Mutation{Op: engine.OpMemberSet, Table: "default", Key: []byte("h"), Value: []byte("v"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
	if res := f.store.Apply1(ctx, hset); res.Err != nil {
		t.Fatal(res.Err)
	}
	f.set("default", "z", "2", 0, 0)
	for _, q := range []string{"", "?values=true", "?values=true&encoding=base64"} {
		rec := f.do("GET", "/v1/tables/default/keys"+q, "")
		wantStatus(t, rec, 200)
		items := decodeJSON[pageJSON](t, rec).Items
		if len(items) != 3 {
			t.Fatalf("%s: items %+v", q, items)
		}
		if h := items[1]; h.Kind != "hash" || h.Value != nil || h.ValueB64 != nil || h.Version == 0 {
			t.Errorf("%s: the hash's item %+v", q, h)
		}
		if a := items[0]; a.Kind != "" || (q != "" && a.Value == nil && a.ValueB64 == nil) {
			t.Errorf("%s: a string's item %+v", q, a)
		}
	}
	if r := compatReply(t, f.do("GET", "/query", ""), 200); len(r) != 2 || r["a"] != "1" || r["z"] != "2" {
		t.Fatalf("/query: %v", r)
	}
}
