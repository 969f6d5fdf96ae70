// Package metrics counts the requests of every protocol (requests, errors and a latency histogram per protocol
// and command) and exposes them, with the store's figures and the Go runtime's and the process's, in the
// Prometheus text format. It is built on the official Prometheus Go client (github.com/prometheus/client_golang),
// so the exposition, its escaping and its content negotiation are the client's, not ours.
//
// The hot path is Observer.Observe: a protocol looks its Observer up once (Metrics.Command), which resolves the
// client's label maps once and keeps the children (a prometheus.Counter per counter) and its own latency histogram
// (latency.go: the client's takes one observation at a time, and ObserveN records a pipeline's replies answered
// together at once); Observe then only does atomic adds, with no lock, no map lookup and no allocation per
// request. A nil *Observer ignores observations, so a protocol built without metrics needs no branches.
//
// Every Metrics has its own prometheus.Registry, never the client's global one: two servers in one process (as in
// the tests) must not count into each other's families, and registering twice in the global registry panics.
package metrics

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"anykv/internal/kv"
)

// latencyBounds are the upper bounds of the latency histogram buckets, in seconds (the client adds +Inf). They
// span a cache hit in memory (tens of microseconds) to a slow fsync or a large scan (seconds).
var latencyBounds = [...]float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// commandLabels are the variable labels of the per-command families, in the order Command passes their values.
var commandLabels = []string{"protocol", "command"}

// Metrics holds the collectors of one process: the per-command families, the store's figures, and the Go runtime
// and process collectors, in a private registry. Safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	replies  *prometheus.CounterVec // error replies by kind
	handler  http.Handler           // built once: promhttp registers its own error counter in the registry

	mu   sync.Mutex
	cmds map[cmdKey]*Observer // so one pair always gets the same Observer
}

type cmdKey struct{ protocol, command string }

// New returns the collectors of one server; at each scrape they also export the figures of store.Stats() (items,
// bytes, store counters and the engine's own figures). store may be nil: then no store figures are exported.
func New(store *kv.Store) *Metrics {
	var stats func() kv.Stats
	if store != nil {
		stats = store.Stats
	}
	return newMetrics(stats)
}

// newMetrics is New with the store reduced to its Stats method, so tests can feed any figures (nil: none).
func newMetrics(stats func() kv.Stats) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anykv_requests_total",
			Help: "Requests served, per protocol and command.",
		}, commandLabels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anykv_request_errors_total",
			Help: "Requests answered with an error (not counting plain misses), per protocol and command.",
		}, commandLabels),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anykv_error_replies_total",
			Help: "Error replies sent, per protocol and kind (Redis: the error's first word, ERR, WRONGTYPE, ...).",
		}, []string{"protocol", "kind"}),
		cmds: make(map[cmdKey]*Observer),
	}
	m.registry.MustRegister(m.requests, m.errors, newLatencyCollector(m), m.replies,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if stats != nil {
		m.registry.MustRegister(storeCollector{stats: stats})
	}
	m.handler = newHandler(m.registry)
	return m
}

// Command returns the Observer of one protocol's command, creating it (and its samples, at zero) on first use; the
// same pair always returns the same Observer. Look it up once and keep it: Command takes a lock and looks the
// children up in the client's maps, Observe does neither. Bytes that are not UTF-8 become U+FFFD, because the
// client refuses (panics on) such label values. A nil *Metrics returns a nil Observer, which ignores observations.
func (m *Metrics) Command(protocol, command string) *Observer {
	if m == nil {
		return nil
	}
	k := cmdKey{protocol, command}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.cmds[k]; o != nil {
		return o
	}
	p, c := strings.ToValidUTF8(protocol, "\uFFFD"), strings.ToValidUTF8(command, "\uFFFD")
	o := &Observer{
		requests: m.requests.WithLabelValues(p, c),
		errors:   m.errors.WithLabelValues(p, c),
		latency:  new(latencyHist),
		labels:   [2]string{p, c},
	}
	m.cmds[k] = o
	return o
}

// ErrorReply counts one error reply of kind (Redis's INFO errorstats). A protocol keeps kinds few: the client
// keeps one series per kind for good. A nil *Metrics ignores it.
func (m *Metrics) ErrorReply(protocol, kind string) {
	if m == nil {
		return
	}
	m.replies.WithLabelValues(strings.ToValidUTF8(protocol, "\uFFFD"), strings.ToValidUTF8(kind, "\uFFFD")).Inc()
}

// Observer counts one command of one protocol. It holds the client's children for its label values and its own
// latency histogram, so its methods are safe for concurrent use and allocate nothing.
type Observer struct {
	requests, errors prometheus.Counter
	latency          *latencyHist
	labels           [2]string // protocol and command, as exposed
}

// Observe records one request that took d; failed marks it as an error reply (what counts as one is the
// protocol's choice: Redis error replies, memcached ERROR/CLIENT_ERROR/SERVER_ERROR, HTTP 4xx/5xx other than a
// plain miss). A negative d (the clock stepped back) counts as zero, so the histogram's sum never shrinks. A nil
// Observer does nothing.
func (o *Observer) Observe(d time.Duration, failed bool) {
	if failed {
		o.ObserveN(d, 1, 1)
	} else {
		o.ObserveN(d, 1, 0)
	}
}

// ObserveN records n requests that each took d, failed of them error replies: replies answered together.
func (o *Observer) ObserveN(d time.Duration, n, failed int) {
	if o == nil || n <= 0 {
		return
	}
	o.requests.Add(float64(n))
	if failed > 0 {
		o.errors.Add(float64(failed))
	}
	o.latency.observe(max(d, 0), n)
}

// Requests returns how many requests were observed (for tests and INFO-style reports). It reads the client's
// counter through its Write method, which allocates: not for the hot path.
func (o *Observer) Requests() uint64 {
	if o == nil {
		return 0
	}
	return counterValue(o.requests)
}

// Errors returns how many observed requests failed; like Requests, not for the hot path.
func (o *Observer) Errors() uint64 {
	if o == nil {
		return 0
	}
	return counterValue(o.errors)
}

// counterValue reads a client counter. Counters only ever Inc here, so the value is a whole number, exact up to
// 2^53.
func counterValue(c prometheus.Counter) uint64 {
	var pb dto.Metric
	if err := c.Write(&pb); err != nil {
		return 0
	}
	return uint64(pb.GetCounter().GetValue())
}

// ConnFigures are one listener's connection figures, read at each scrape.
type ConnFigures struct {
	Current, Total, Rejected, Denied, Evicted func() int64
}

// Connections exports one listener's figures: anykv_connections (open now), anykv_connections_total (served),
// anykv_connections_refused_total with reason "limit" (over --maxclients) or "protected_mode" (another host and no
// password), and anykv_connections_evicted_total (unauthenticated connections closed at the limit to admit a new
// one). Call it once per protocol; a nil *Metrics ignores it.
func (m *Metrics) Connections(protocol string, f ConnFigures) {
	if m == nil {
		return
	}
	gauge := func(name, help string, v func() int64, labels prometheus.Labels) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v()) })
	}
	counter := func(name, help string, v func() int64, labels prometheus.Labels) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v()) })
	}
	const refused = "Connections refused at accept, per protocol and reason."
	m.registry.MustRegister(
		gauge("anykv_connections", "Connections open now, per protocol.", f.Current, prometheus.Labels{"protocol": protocol}),
		counter("anykv_connections_total", "Connections served, per protocol.", f.Total, prometheus.Labels{"protocol": protocol}),
		counter("anykv_connections_refused_total", refused, f.Rejected, prometheus.Labels{"protocol": protocol, "reason": "limit"}),
		counter("anykv_connections_refused_total", refused, f.Denied, prometheus.Labels{"protocol": protocol, "reason": "protected_mode"}),
	)
	if f.Evicted != nil {
		m.registry.MustRegister(counter("anykv_connections_evicted_total", "Unauthenticated connections closed at "+
			"the connection limit to admit a new one, per protocol.", f.Evicted, prometheus.Labels{"protocol": protocol}))
	}
}
