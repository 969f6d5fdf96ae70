package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
)

// levelFixture is a fixture whose store runs over a recorder of read levels (serving serves, nil: memstore's),
// with def as the server's --consistency.
func levelFixture(t *testing.T, def engine.Consistency, serves ...engine.Consistency) (*fixture, *enginetest.Levels) {
	t.Helper()
	rec, e := enginetest.NewLevels(memstore.New(), serves...)
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	s := kv.New(e, kv.Options{Clock: clock.Now, SweepInterval: -1, Consistency: def, EngineName: "recorder"})
	t.Cleanup(func() { s.Close() })
	m := metrics.New(s)
	return &fixture{t: t, store: s, clock: clock, metrics: m, h: New(s, Options{Metrics: m, Version: "test"})}, rec
}

// TestReadRoutesCarryTheAskedLevel: GET and HEAD of an item, a page of keys (with values) and a count ask the
// engine for the level of ?consistency= or the X-Anykv-Consistency header, and for the server default without.
func TestReadRoutesCarryTheAskedLevel(t *testing.T) {
	f, rec := levelFixture(t, engine.Linearizable)
	f.set("t", "k", "v", 0, 0)
	rec.Asked()
	for _, c := range []struct {
		method, target string
		hdr            []string
		want           []string
	}{
		{"GET", "/v1/tables/t/keys/k", nil, []string{"get none"}},
		{"GET", "/v1/tables/t/keys/k?consistency=serializable", nil, []string{"get serializable"}},
		{"HEAD", "/v1/tables/t/keys/k?consistency=serializable", nil, []string{"get serializable"}},
		{"GET", "/v1/tables/t/keys/k?consistency=linearizable", nil, []string{"get linearizable"}},
		{"GET", "/v1/tables/t/keys/k", []string{hdrConsistency, "Serializable"}, []string{"get serializable"}},
		{"GET", "/v1/tables/t/keys?values=true&consistency=serializable", nil, []string{"scan serializable", "get serializable"}},
		{"GET", "/v1/tables/t/count?consistency=serializable", nil, []string{"scan serializable"}},
		{"GET", "/v1/tables/t/count", []string{hdrConsistency, "serializable"}, []string{"scan serializable"}},
	} {
		if r := f.do(c.method, c.target, "", c.hdr...); r.Code != http.StatusOK {
			t.Fatalf("%s %s %v: %d %s", c.method, c.target, c.hdr, r.Code, r.Body.String())
		}
		if got := rec.Asked(); !slices.Equal(got, c.want) {
			t.Errorf("%s %s %v: engine saw %v, want %v", c.method, c.target, c.hdr, got, c.want)
		}
	}
}

// TestBadOrUnservableLevels: an unknown level and a header that contradicts the parameter are 400s, before the
// engine is asked; a level the engine cannot serve is a 501 not_supported naming the engine and the level.
func TestBadOrUnservableLevels(t *testing.T) {
	f, rec := levelFixture(t, engine.Serializable, engine.Serializable)
	f.set("t", "k", "v", 0, 0)
	rec.Asked()
	for target, hdr := range map[string][]string{
		"/v1/tables/t/keys/k?consistency=quorum":       nil,
		"/v1/tables/t/count?consistency=linearizable":  {hdrConsistency, "serializable"},
		"/v1/tables/t/keys?consistency=eventually":     nil,
		"/v1/tables/t/keys/k":                          {hdrConsistency, "one"},
		"/v1/tables/t/keys/k?consistency=serializable": {hdrConsistency, "linearizable"},
	} {
		wantError(t, f.do("GET", target, "", hdr...), http.StatusBadRequest, "bad_request")
	}
	for _, target := range []string{"/v1/tables/t/keys/k?consistency=linearizable", "/v1/tables/t/keys?consistency=linearizable",
		"/v1/tables/t/count?consistency=linearizable"} {
		r := f.do("GET", target, "")
		wantError(t, r, http.StatusNotImplemented, "not_supported")
		if !strings.Contains(r.Body.String(), "linearizable reads on engine recorder") {
			t.Errorf("%s: %s", target, r.Body.String())
		}
	}
	if got := rec.Asked(); len(got) != 0 {
		t.Errorf("the engine was asked %v", got)
	}
	if r := f.do("GET", "/v1/tables/t/keys/k", ""); r.Code != http.StatusOK || !slices.Equal(rec.Asked(), []string{"get serializable"}) {
		t.Errorf("default read: %d %s", r.Code, r.Body.String())
	}
}
