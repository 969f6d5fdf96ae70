package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// errCorrupt stands for what a corrupt sstable block answers a read.
var errCorrupt = errors.New("pebble: checksum mismatch in block 42")

// serveFaulty serves the API over memstore behind a Faulty decorator failing with err, with items default/good,
// default/bad and broken/x; the test sets the faults.
func serveFaulty(t *testing.T, err error) (*enginetest.Faulty, string) {
	t.Helper()
	f, e := enginetest.NewFaulty(memstore.New(), err)
	store := kv.New(e, kv.Options{SweepInterval: -1})
	srv := httptest.NewServer(New(store, Options{Version: "test"}))
	t.Cleanup(func() {
		srv.Close()
		store.Close()
	})
	for _, it := range [][2]string{{"default", "good"}, {"default", "bad"}, {"broken", "x"}} {
		if r := store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: it[0], Key: []byte(it[1]), Value: []byte("v")}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return f, srv.URL
}

// readFault fails the keys of default that begin with "bad" and the whole table broken.
func readFault(table string, key []byte) bool {
	return table == "broken" || (table == "default" && strings.HasPrefix(string(key), "bad"))
}

// failingRoutes are requests that read a faulty item, scan over one, or list a faulty table.
var failingRoutes = []struct {
	method, path, body string
	compat             bool
}{
	{"GET", "/v1/tables/default/keys/bad", "", false},
	{"HEAD", "/v1/tables/default/keys/bad", "", false},
	{"PUT", "/v1/tables/default/keys/bad", "x", false},
	{"DELETE", "/v1/tables/default/keys/bad", "", false},
	{"POST", "/v1/tables/default/keys/bad/incr", "", false},
	{"GET", "/v1/tables/default/keys", "", false},
	{"GET", "/v1/tables/default/keys?values=true", "", false},
	{"GET", "/v1/tables/default/keys?prefix=b", "", false},
	{"GET", "/v1/tables/default/count", "", false},
	{"GET", "/v1/tables/broken/count", "", false},
	{"GET", "/v1/tables", "", false},
	{"GET", "/get?key=bad", "", true},
	{"POST", "/put?key=bad&val=x", "", true},
	{"POST", "/delete?key=bad", "", true},
	{"GET", "/query", "", true},
	{"GET", "/count", "", true},
}

// Every read route answers the engine's read error as 500 internal, never as 404 or an empty answer; a closed
// engine is 503 (issue 10).
func TestReadErrorsAreServerErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{errCorrupt, http.StatusInternalServerError, "internal"},
		{fmt.Errorf("pebblestore: get: %w", engine.ErrClosed), http.StatusServiceUnavailable, "unavailable"},
	} {
		f, url := serveFaulty(t, tc.err)
		f.Fail(readFault)
		for _, rt := range failingRoutes {
			req, err := http.NewRequest(rt.method, url+rt.path, strings.NewReader(rt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			what := rt.method + " " + rt.path + " (" + tc.err.Error() + ")"
			if resp.StatusCode != tc.status {
				t.Errorf("%s: status %d, want %d; body %s", what, resp.StatusCode, tc.status, body)
				continue
			}
			if rt.method == "HEAD" {
				continue
			}
			msg := ""
			if rt.compat {
				var b map[string]any
				if err := json.Unmarshal(body, &b); err != nil || len(b) != 1 {
					t.Errorf("%s: compat error body %s", what, body)
				}
				msg, _ = b["error"].(string)
			} else {
				var b errorBody
				if err := json.Unmarshal(body, &b); err != nil || b.Error.Code != tc.code {
					t.Errorf("%s: error body %s, want code %s", what, body, tc.code)
				}
				msg = b.Error.Message
			}
			if !strings.Contains(msg, tc.err.Error()) {
				t.Errorf("%s: message %q lacks the engine's error", what, msg)
			}
		}
		// The sound item still reads, and a miss is still a 404.
		for path, want := range map[string]int{"/v1/tables/default/keys/good": 200, "/v1/tables/default/keys/missing": 404} {
			resp, err := http.Get(url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
			}
		}
	}
}
