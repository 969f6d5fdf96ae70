package httpapi

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strconv"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// propOp is one random write, applicable through HTTP or straight to a kv.Store.
type propOp struct {
	kind  int // opSet...opIncr
	key   string
	value string
	ttlMs int64
	flags uint32
	by    int64
	stale bool // compare-and-set with a wrong version
}

const (
	opSet = iota
	opCAS
	opCreate
	opDelete
	opIncr
	opAdvance // advance both clocks
	numOps
)

var propKeys = []string{"a", "b", "a/b", "/", "\x00", "\xff\xfe", "é", "%2F", ".", "..", "sp ace", "n"}

func randomOp(rng *rand.Rand) propOp {
	o := propOp{kind: rng.Intn(numOps), key: propKeys[rng.Intn(len(propKeys))], by: int64(rng.Intn(21) - 10),
		stale: rng.Intn(3) == 0}
	switch rng.Intn(3) {
	case 0:
		o.value = strconv.Itoa(rng.Intn(100) - 50) // integers make incr interesting
	case 1:
		b := make([]byte, rng.Intn(12))
		rng.Read(b)
		o.value = string(b)
	}
	if rng.Intn(3) == 0 {
		o.ttlMs = int64(1 + rng.Intn(3000))
	}
	if rng.Intn(4) == 0 {
		o.flags = rng.Uint32()
	}
	return o
}

// version returns the current version of key in s, 0 if absent.
func currentVersion(f *fixture, key string) uint64 {
	it, _ := f.get("t", key)
	return it.Version
}

// viaHTTP applies o through the API and returns its outcome in a protocol-neutral word.
func viaHTTP(f *fixture, o propOp, version uint64) string {
	target := itemURL("t", o.key)
	var hdr []string
	switch o.kind {
	case opCAS:
		hdr = []string{"If-Match", etag(version)}
	case opCreate:
		hdr = []string{"If-None-Match", "*"}
	}
	switch o.kind {
	case opSet, opCAS, opCreate:
		q := "?flags=" + strconv.FormatUint(uint64(o.flags), 10)
		if o.ttlMs > 0 {
			q += "&ttl_ms=" + strconv.FormatInt(o.ttlMs, 10)
		}
		req := f.do("PUT", target+q, o.value, hdr...)
		switch req.Code {
		case http.StatusCreated:
			return "created"
		case http.StatusOK:
			return "replaced"
		case http.StatusPreconditionFailed:
			return "precondition"
		}
		return fmt.Sprintf("status %d %s", req.Code, req.Body.String())
	case opDelete:
		switch rec := f.do("DELETE", target, ""); rec.Code {
		case http.StatusNoContent:
			return "deleted"
		case http.StatusNotFound:
			return "notfound"
		default:
			return fmt.Sprintf("status %d", rec.Code)
		}
	case opIncr:
		rec := f.do("POST", target+"/incr?by="+strconv.FormatInt(o.by, 10), "")
		if rec.Code == http.StatusOK {
			return fmt.Sprint("incr:", decodeJSON[incrBody](f.t, rec).Value)
		}
		if rec.Code == http.StatusConflict {
			return decodeJSON[errorBody](f.t, rec).Error.Code
		}
		return fmt.Sprintf("status %d", rec.Code)
	}
	return "?"
}

// viaStore applies o as RESP or memcached would, straight to the store.
func viaStore(f *fixture, o propOp, version uint64) string {
	m := engine.Mutation{Table: "t", Key: []byte(o.key)}
	switch o.kind {
	case opSet, opCAS, opCreate:
		m.Op, m.Value, m.Flags = engine.OpSet, []byte(o.value), o.flags
		if o.ttlMs > 0 {
			m.Expires = f.store.Now() + o.ttlMs
		}
		if o.kind == opCAS {
			m.Cond, m.Version = engine.CondVersion, version
		}
		if o.kind == opCreate {
			m.Cond = engine.CondAbsent
		}
	case opDelete:
		m.Op = engine.OpDelete
	case opIncr:
		m.Op, m.Incr.Delta, m.Incr.Create = engine.OpIncr, o.by, true
	}
	res := f.store.Apply1(ctx, m)
	switch {
	case res.Err == nil && m.Op == engine.OpSet && res.OldFound:
		return "replaced"
	case res.Err == nil && m.Op == engine.OpSet:
		return "created"
	case res.Err == nil && m.Op == engine.OpDelete:
		return "deleted"
	case res.Err == nil:
		return "incr:" + string(res.New.Value)
	case errors.Is(res.Err, engine.ErrExists), errors.Is(res.Err, engine.ErrVersionMismatch),
		m.Cond != engine.CondNone && errors.Is(res.Err, engine.ErrNotFound):
		return "precondition"
	case errors.Is(res.Err, engine.ErrNotFound):
		return "notfound"
	case errors.Is(res.Err, engine.ErrNotInteger):
		return "not_integer"
	case errors.Is(res.Err, engine.ErrOverflow):
		return "overflow"
	}
	return res.Err.Error()
}

// dumpStore lists table t straight from the store.
func dumpStore(t *testing.T, f *fixture) []kv.Entry {
	t.Helper()
	p, err := f.store.Scan(ctx, "t", kv.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Entries
}

// dumpHTTP lists table t through the API, two items a page, in base64 so every byte is checked.
func dumpHTTP(t *testing.T, f *fixture) []kv.Entry {
	t.Helper()
	var out []kv.Entry
	cursor := ""
	for {
		rec := f.do("GET", "/v1/tables/t/keys?values=true&encoding=base64&limit=2&cursor="+cursor, "")
		wantStatus(t, rec, http.StatusOK)
		p := decodeJSON[pageJSON](t, rec)
		for _, it := range p.Items {
			k, err1 := base64.StdEncoding.DecodeString(str(it.KeyB64))
			v, err2 := base64.StdEncoding.DecodeString(str(it.ValueB64))
			if err1 != nil || err2 != nil {
				t.Fatalf("bad base64 in %+v", it)
			}
			out = append(out, kv.Entry{Key: k, Item: engine.Item{Value: v, Flags: it.Flags, Expires: it.Expires, Version: it.Version}})
		}
		if p.Cursor == "" {
			return out
		}
		cursor = p.Cursor
	}
}

func sameEntries(a, b []kv.Entry) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d items against %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Item.Value, y.Item.Value) || x.Item.Flags != y.Item.Flags ||
			x.Item.Expires != y.Item.Expires || x.Item.Version != y.Item.Version {
			return fmt.Errorf("item %d: %q=%+v against %q=%+v", i, x.Key, x.Item, y.Key, y.Item)
		}
	}
	return nil
}

// TestHTTPAndStoreAgree applies the same random writes to two stores: the mixed store takes each write at random
// through HTTP or straight through kv (as RESP and memcached do), the reference store takes all of them through
// kv. Every write must have the same outcome on both, and at the end both hold the same items, whether read
// through kv or paged through HTTP.
func TestHTTPAndStoreAgree(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		mixed, ref := newFixture(t, Options{}, kv.Limits{}), newFixture(t, Options{}, kv.Limits{})
		var log []string
		for i := 0; i < 200; i++ {
			o := randomOp(rng)
			if o.kind == opAdvance {
				d := time.Duration(rng.Intn(1500)) * time.Millisecond
				mixed.clock.Advance(d)
				ref.clock.Advance(d)
				continue
			}
			v := currentVersion(ref, o.key)
			if o.stale || v == 0 {
				// Version 0 would mean "absent" to the engine, while If-Match: "0" fails as RFC 9110 wants
				// (no item has version 0): a compare-and-set of a missing item uses a version no item has.
				v += uint64(1 + rng.Intn(3))
			}
			via, got := "store", ""
			if rng.Intn(2) == 0 {
				via, got = "http", viaHTTP(mixed, o, v)
			} else {
				got = viaStore(mixed, o, v)
			}
			want := viaStore(ref, o, v)
			log = append(log, fmt.Sprintf("%s %+v -> %s", via, o, got))
			if got != want {
				t.Fatalf("seed %d op %d: %s gave %q, the reference %q\n%v", seed, i, via, got, want, log)
			}
		}
		want := dumpStore(t, ref)
		if err := sameEntries(dumpStore(t, mixed), want); err != nil {
			t.Fatalf("seed %d: stores differ: %v", seed, err)
		}
		if err := sameEntries(dumpHTTP(t, mixed), want); err != nil {
			t.Fatalf("seed %d: HTTP listing differs: %v", seed, err)
		}
		for _, key := range propKeys {
			rec := mixed.do("GET", itemURL("t", key), "")
			it, ok := ref.get("t", key)
			if ok != (rec.Code == http.StatusOK) || (ok && (!bytes.Equal(rec.Body.Bytes(), it.Value) ||
				rec.Header().Get("ETag") != etag(it.Version))) {
				t.Fatalf("seed %d: GET %q = %d %q, reference %q %v", seed, key, rec.Code, rec.Body.Bytes(), it.Value, ok)
			}
		}
	}
}
