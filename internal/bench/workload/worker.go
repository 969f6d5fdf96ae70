package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"anykv/internal/bench/driver"
	"anykv/internal/bench/gen"
)

// Outcome is what one operation came to.
type Outcome struct {
	Kind string // operation kind: read, update, insert, scan, ...
	Err  error  // the request failed or timed out
	Fail string // the answer was wrong (non-empty description)
}

// Worker is one load-generating thread. Its methods issue one request each,
// validate the answer against the tracker and return the outcome.
type Worker struct {
	ID    int
	R     *rand.Rand
	State any // per-worker workload state (key choosers)

	ctx context.Context
	d   driver.Driver
	t   *Tracker
	buf []byte
}

// Put writes a fresh self-checking value of size bytes.
func (w *Worker) Put(kind, table, key string, size int) Outcome {
	seq := w.t.BeginWrite(table, key, false)
	w.buf = gen.Encode(w.buf, gen.KeyHash(table, key), seq, size)
	err := w.d.Put(w.ctx, table, key, w.buf)
	w.t.EndWrite(table, key, false, err)
	return Outcome{Kind: kind, Err: err}
}

// Get reads key and checks the value against what was written.
func (w *Worker) Get(kind, table, key string) Outcome {
	return w.get(kind, table, key, false)
}

// GetLoaded reads a key the workload loaded or inserted before. Unlike Get,
// finding nothing for a key that was never written is a Fail: the workload
// addressed a key it should not have, and a miss is no successful read.
func (w *Worker) GetLoaded(kind, table, key string) Outcome {
	return w.get(kind, table, key, true)
}

func (w *Worker) get(kind, table, key string, loaded bool) Outcome {
	rs := w.t.BeginRead(table, key)
	v, found, err := w.d.Get(w.ctx, table, key)
	if err != nil {
		return Outcome{Kind: kind, Err: err}
	}
	if !found && loaded && !w.t.Known(table, key) {
		return Outcome{Kind: kind, Fail: fmt.Sprintf("%s/%s: not found and never written, but read as a loaded record", table, key)}
	}
	return Outcome{Kind: kind, Fail: w.t.CheckRead(table, key, rs, v, found)}
}

// Delete removes key; deleting a key the tracker knows is present but the
// store calls absent is a Fail.
func (w *Worker) Delete(kind, table, key string) Outcome {
	before, _ := w.t.peek(table, key)
	w.t.BeginWrite(table, key, true)
	existed, err := w.d.Delete(w.ctx, table, key)
	w.t.EndWrite(table, key, true, err)
	if err != nil {
		return Outcome{Kind: kind, Err: err}
	}
	if !existed && before.present && before.inflight == 0 && !before.uncertain {
		return Outcome{Kind: kind, Fail: fmt.Sprintf("%s/%s: delete says absent, but it was written", table, key)}
	}
	return Outcome{Kind: kind}
}

// Query lists the whole table and checks the number of keys.
func (w *Worker) Query(kind, table string) Outcome {
	cs := w.t.BeginCount(table)
	keys, err := w.d.Scan(w.ctx, table, "", 0)
	if err != nil {
		return Outcome{Kind: kind, Err: err}
	}
	if f := w.checkKeys(table, "", keys); f != "" {
		return Outcome{Kind: kind, Fail: f}
	}
	return Outcome{Kind: kind, Fail: w.t.CheckCount(table, cs, int64(len(keys)))}
}

// Scan lists up to limit keys with prefix and checks each belongs there.
func (w *Worker) Scan(kind, table, prefix string, limit int) Outcome {
	return w.ScanAtLeast(kind, table, prefix, limit, 0)
}

// ScanAtLeast is Scan that also fails a scan returning fewer than atLeast
// keys: the caller knows that many keys with prefix exist for certain.
func (w *Worker) ScanAtLeast(kind, table, prefix string, limit int, atLeast int64) Outcome {
	keys, err := w.d.Scan(w.ctx, table, prefix, limit)
	if err != nil {
		return Outcome{Kind: kind, Err: err}
	}
	if limit > 0 && len(keys) > limit {
		return Outcome{Kind: kind, Fail: fmt.Sprintf("%s: scan limit %d returned %d keys", table, limit, len(keys))}
	}
	if int64(len(keys)) < atLeast {
		return Outcome{Kind: kind, Fail: fmt.Sprintf("%s: scan for prefix %q limit %d returned %d keys; %d loaded keys have that prefix",
			table, prefix, limit, len(keys), atLeast)}
	}
	return Outcome{Kind: kind, Fail: w.checkKeys(table, prefix, keys)}
}

func (w *Worker) checkKeys(table, prefix string, keys []string) string {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			return fmt.Sprintf("%s: scan for prefix %q returned %q", table, prefix, k)
		}
		if seen[k] {
			return fmt.Sprintf("%s: scan returned %q twice", table, k)
		}
		seen[k] = true
		if !w.t.Known(table, k) {
			return fmt.Sprintf("%s: scan returned %q, which was never written", table, k)
		}
	}
	return ""
}

// Count counts the whole table and checks the number.
func (w *Worker) Count(kind, table string) Outcome {
	cs := w.t.BeginCount(table)
	n, err := w.d.Count(w.ctx, table, "")
	if err != nil {
		return Outcome{Kind: kind, Err: err}
	}
	return Outcome{Kind: kind, Fail: w.t.CheckCount(table, cs, n)}
}

// Noop is one round trip that touches no data.
func (w *Worker) Noop(kind string) Outcome {
	return Outcome{Kind: kind, Err: w.d.Noop(w.ctx)}
}

// Then runs b after a when a succeeded, as one operation of kind.
func Then(kind string, a Outcome, b func() Outcome) Outcome {
	if a.Err != nil || a.Fail != "" {
		a.Kind = kind
		return a
	}
	o := b()
	o.Kind = kind
	return o
}
