package httpapi

import (
	"bytes"
	"net/http"
	"runtime"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// discardWriter is a ResponseWriter that counts the body and keeps none of it.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

// TestQueryPageMemory: a query page with values=true holds at least one item whatever its size, and its JSON
// is built whole in memory (json.Encoder.Encode) before a byte is sent. A value of control bytes (valid UTF-8,
// so sent as a JSON string) grows sixfold when escaped (\u0001), and the encoder's buffer doubles its way there:
// on the real server one GET of a page holding a 64 MiB value took the process from 0.4 GB to 2.5 GB, and six
// such requests at once ended it with "fatal error: out of memory" under an 8 GB address-space limit. What one
// page costs should stay within a small multiple of the values it carries.
func TestQueryPageMemory(t *testing.T) {
	f := newFixture(t, Options{}, kv.Limits{})
	const size = 8 << 20
	value := bytes.Repeat([]byte{1}, size)
	if res := f.store.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("big"), Value: value}); res.Err != nil {
		t.Fatal(res.Err)
	}
	value = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := &discardWriter{h: http.Header{}}
	f.h.ServeHTTP(w, newRequest("GET", "/v1/tables/t/keys?values=true", nil))
	runtime.ReadMemStats(&after)
	if w.status != http.StatusOK {
		t.Fatalf("status %d", w.status)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("page of one %d-byte value: %d bytes of JSON, %d bytes allocated", size, w.n, allocated)
	if allocated > 4*size {
		t.Fatalf("serving one page of a %d MiB value allocated %d MiB (%.1fx the value)", size>>20, allocated>>20,
			float64(allocated)/size)
	}
}
