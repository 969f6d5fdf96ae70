package httpapi

import (
	"net/http"
	"testing"

	"anykv/internal/kv"
)

// TestRepeatedOptionHeadersRefused: an option given twice as a header (two X-Anykv-TTL lines, say 5 and 3600)
// is refused with 400 and writes nothing, as a repeated query parameter is; the first line used to win silently,
// so which expiry or flags an item got depended on the order a client or proxy sent them in. A repeated
// X-Anykv-Consistency is refused too.
func TestRepeatedOptionHeadersRefused(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	for _, hdr := range [][]string{
		{"X-Anykv-TTL", "5", "X-Anykv-TTL", "3600"},
		{"X-Anykv-TTL-Ms", "5", "X-Anykv-TTL-Ms", "5"},
		{"X-Anykv-Flags", "1", "X-Anykv-Flags", "2"},
	} {
		wantError(t, f.do("PUT", "/v1/tables/t/keys/k", "v", hdr...), http.StatusBadRequest, "bad_request")
		if _, ok := f.get("t", "k"); ok {
			t.Fatalf("%v: the refused PUT wrote the item", hdr)
		}
	}
	f.set("t", "k", "v", 0, 0)
	for _, target := range []string{"/v1/tables/t/keys/k", "/v1/tables/t/keys", "/v1/tables/t/count"} {
		wantError(t, f.do("GET", target, "", "X-Anykv-Consistency", "linearizable", "X-Anykv-Consistency", "serializable"),
			http.StatusBadRequest, "bad_request")
	}
}
