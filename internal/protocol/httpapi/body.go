package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"anykv/internal/membudget"
)

// Request bodies are read into memory counted against the server's budget of request buffers (Options.Budget,
// --maxmemory-clients), shared with RESP and memcached: twenty clients each sending 64 MiB and stalling took
// 3.5 GB when nothing counted them. The buffer grows with the bytes that arrive, never past the length the
// request claims, and its bytes stay reserved until the request ends.

// bodyStart is the most a body's buffer sets aside before its bytes arrive.
const bodyStart = 64 << 10

// errClientsMemory answers a body refused or evicted because the request buffers of all clients are at the
// budget.
var errClientsMemory = newError(http.StatusServiceUnavailable, "unavailable",
	"maxmemory-clients reached: the request buffers of all clients are at their limit; try again later")

// readBody reads the request body, at most MaxBody bytes (413 value_too_large past that).
func (a *api) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, _, err := a.readBodyMax(w, r, a.opts.MaxBody)
	return body, err
}

// readBodyMax is readBody with the bound limit; it also returns the request's account.
func (a *api) readBodyMax(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *membudget.Account, error) {
	if r.ContentLength > limit {
		return nil, nil, &http.MaxBytesError{Limit: limit}
	}
	acct, rw := a.account(w, r, false)
	if rw != nil {
		rw.reading.Store(true)
		defer rw.reading.Store(false)
		defer acct.Serving(true) // the body is in: the handler runs the request (account)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	want := r.ContentLength // -1: unknown (chunked)
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if want >= 0 && int64(len(buf)) == want {
				// All the bytes claimed are here: a read of a byte more sees the end (or the body's error).
				var one [1]byte
				k, err := body.Read(one[:])
				switch {
				case k == 0 && errors.Is(err, io.EOF):
					return buf, acct, nil
				case acct.Evicted():
					return nil, nil, errClientsMemory
				case err != nil && !errors.Is(err, io.EOF):
					return nil, nil, bodyError(err)
				case k == 0:
					continue
				}
				return nil, nil, badRequest("the body is longer than its Content-Length")
			}
			n := max(2*cap(buf), bodyStart)
			if want >= 0 {
				n = min(n, int(want)) // at most what the request claims
			} else {
				n = min(n, int(limit)+1) // a byte past the limit is enough to refuse it
			}
			// What it adds: the bytes of the buffer it leaves pass to it (reserving the new buffer beside the old one
			// refused a body that fits, at its last growth, for half its size more).
			if err := acct.Reserve(n - cap(buf)); err != nil {
				return nil, nil, errClientsMemory
			}
			grown := make([]byte, len(buf), n)
			copy(grown, buf)
			buf = grown
		}
		k, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if k > 0 {
			// A body coming in slowly but steadily is not idle (membudget's Progress: at a 64th of what it holds
			// per idleEvict): its buffer grows (and reserves) only at each doubling, and the second half of a 1 MiB
			// body sent at 40 KiB/s took longer than idleEvict.
			acct.Progress(k)
		}
		switch {
		case errors.Is(err, io.EOF):
			return buf, acct, nil
		case acct.Evicted():
			return nil, nil, errClientsMemory
		case err != nil:
			return nil, nil, bodyError(err)
		}
	}
}

// account opens the request's account of buffer bytes in the budget, which wrap closes once the handler has
// returned (on the handler's goroutine: an account is used by one goroutine). Eviction cuts the body's read
// short while it is being read, and a big reply's write while it is being written (respWriter.Write), and does
// nothing otherwise: then the handler is about to let go. Nil (counting
// nothing) without a budget.
//
// serving marks the account, as it opens, as running the request (membudget's Serving): a wait for room in the
// budget does not take it as idle, however long the handler takes (a write slow in the engine). readBodyMax
// opens it without, as a body being read is judged by the progress of its bytes (one held half-sent is idle),
// and marks it once the body is in.
func (a *api) account(w http.ResponseWriter, r *http.Request, serving bool) (*membudget.Account, *respWriter) {
	rw, ok := w.(*respWriter)
	if !ok || a.opts.Budget == nil {
		return nil, nil
	}
	if rw.acct == nil {
		rc := http.NewResponseController(w)
		rw.acct = a.opts.Budget.Open("http "+r.RemoteAddr, func() {
			if rw.reading.Load() {
				rc.SetReadDeadline(time.Now())
			}
			if rw.writing.Load() {
				rc.SetWriteDeadline(time.Now().Add(time.Second)) // as membudget.EvictConn
			}
		})
		if serving {
			rw.acct.Serving(true)
		}
	}
	return rw.acct, rw
}

// formBody parses the request's form fields from the query string and a urlencoded or multipart body, read
// first as readBody does, within limit bytes. Parsing copies what it decodes (and a value is copied once more
// to be stored), so the budget holds three times the body more while the request lasts.
func (a *api) formBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	body, acct, err := a.readBodyMax(w, r, limit)
	if err != nil {
		return err
	}
	if err := acct.Reserve(3 * len(body)); err != nil {
		return errClientsMemory
	}
	// A MaxBytesReader, so that ParseForm takes limit and not its own 10 MB as the bound of a urlencoded body.
	r.Body = http.MaxBytesReader(w, io.NopCloser(bytes.NewReader(body)), limit)
	r.ContentLength = int64(len(body))
	return nil
}
