// Package metrics counts the requests of every protocol (requests, errors and a latency histogram per protocol
// and command) and exposes them, with the store's figures, in the Prometheus text format.
//
// The hot path is Observer.Observe: a protocol looks its Observer up once (Metrics.Command) and then only adds to
// atomic counters, with no lock and no map lookup per request. A nil *Observer ignores observations, so a
// protocol built without metrics needs no branches.
//
// The exposition is written by this package rather than by prometheus/client_golang: that module is required in
// go.mod but two of its imports (go.yaml.in/yaml/v2, github.com/munnerz/goautoneg) have no go.sum entries, so it
// does not build here. The text format (version 0.0.4) is small and stable; switching to client_golang later only
// changes this package's insides, not its API.
package metrics

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/kv"
)

// latencyBounds are the upper bounds of the latency histogram buckets, in seconds. They span a cache hit in
// memory (tens of microseconds) to a slow fsync or a large scan (seconds).
var latencyBounds = [...]float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// boundNanos are latencyBounds in nanoseconds, so Observe compares integers.
var boundNanos = func() (b [len(latencyBounds)]int64) {
	for i, s := range latencyBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// Metrics holds the collectors of one process. It keeps no global state: two servers in one test process each
// have their own. Safe for concurrent use.
type Metrics struct {
	store *kv.Store // may be nil: then no store figures are exported

	mu   sync.Mutex
	cmds map[cmdKey]*Observer
}

type cmdKey struct{ protocol, command string }

// New returns an empty set of collectors; at each scrape it also exports the figures of store.Stats() (items,
// bytes, store counters and the engine's own figures). store may be nil.
func New(store *kv.Store) *Metrics {
	return &Metrics{store: store, cmds: make(map[cmdKey]*Observer)}
}

// Command returns the Observer of one protocol's command, creating it on first use; the same pair always returns
// the same Observer. Look it up once and keep it: Command takes a lock, Observe does not. A nil *Metrics returns
// a nil Observer, which ignores observations.
func (m *Metrics) Command(protocol, command string) *Observer {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := cmdKey{protocol, command}
	o := m.cmds[k]
	if o == nil {
		o = &Observer{protocol: protocol, command: command}
		m.cmds[k] = o
	}
	return o
}

// observers returns the observers sorted by protocol and command, so the exposition is stable.
func (m *Metrics) observers() []*Observer {
	m.mu.Lock()
	list := make([]*Observer, 0, len(m.cmds))
	for _, o := range m.cmds {
		list = append(list, o)
	}
	m.mu.Unlock()
	sort.Slice(list, func(i, j int) bool {
		if list[i].protocol != list[j].protocol {
			return list[i].protocol < list[j].protocol
		}
		return list[i].command < list[j].command
	})
	return list
}

// Observer counts one command of one protocol. Its methods are safe for concurrent use and allocate nothing.
type Observer struct {
	protocol, command string

	requests, errors atomic.Uint64
	// buckets[i] counts observations in (bound[i-1], bound[i]]; the last one those above every bound.
	buckets  [len(latencyBounds) + 1]atomic.Uint64
	sumNanos atomic.Int64
}

// Observe records one request that took d; failed marks it as an error reply (what counts as one is the
// protocol's choice: Redis error replies, memcached ERROR/CLIENT_ERROR/SERVER_ERROR, HTTP 4xx/5xx other than a
// plain miss). A nil Observer does nothing.
func (o *Observer) Observe(d time.Duration, failed bool) {
	if o == nil {
		return
	}
	o.requests.Add(1)
	if failed {
		o.errors.Add(1)
	}
	ns := int64(d)
	if ns < 0 {
		ns = 0
	}
	i := 0
	for i < len(boundNanos) && ns > boundNanos[i] {
		i++
	}
	o.buckets[i].Add(1)
	o.sumNanos.Add(ns)
}

// Requests returns how many requests were observed (for tests and INFO-style reports).
func (o *Observer) Requests() uint64 {
	if o == nil {
		return 0
	}
	return o.requests.Load()
}

// Errors returns how many observed requests failed.
func (o *Observer) Errors() uint64 {
	if o == nil {
		return 0
	}
	return o.errors.Load()
}

// storeFigures is what one scrape reads from the store.
func (m *Metrics) storeFigures() (kv.Stats, bool) {
	if m.store == nil {
		return kv.Stats{}, false
	}
	return m.store.Stats(), true
}
