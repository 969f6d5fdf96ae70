package metrics

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"anykv/internal/kv"
)

// Handler serves every metric of the registry through the client's promhttp: the text format by default, the
// protobuf format to a scraper that asks for it, gzip when the client accepts it. A HEAD request gets the headers
// of a GET, Content-Length included, and no body.
func (m *Metrics) Handler() http.Handler { return m.handler }

// newHandler wraps promhttp.HandlerFor(reg) in sized. With ContinueOnError a figure that fails to collect costs
// only that figure, not the whole scrape; promhttp counts such failures in
// promhttp_metric_handler_errors_total{cause}, which it registers in reg, so they stay visible.
func newHandler(reg *prometheus.Registry) http.Handler {
	return sized(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg,
	}))
}

// sized buffers h's reply (a few hundred kilobytes, once per scrape) to send it with a Content-Length, and sends
// no body to HEAD: promhttp streams its output, so without this a GET would be chunked and a HEAD would carry no
// length, and promhttp writes the body even for HEAD.
func sized(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := &bufferedWriter{ResponseWriter: w}
		h.ServeHTTP(b, r)
		if b.status == 0 {
			b.status = http.StatusOK
		}
		w.Header().Set("Content-Length", strconv.Itoa(b.body.Len()))
		w.WriteHeader(b.status)
		if r.Method != http.MethodHead {
			w.Write(b.body.Bytes())
		}
	})
}

// bufferedWriter keeps the status and body of a reply; headers go straight to the underlying writer.
type bufferedWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// Store figures. The names and help texts are those of the hand-written exposition this package had before, so
// dashboards keep working.
var (
	storeCounters = [...]*prometheus.Desc{
		prometheus.NewDesc("anykv_store_gets_total", "Point reads served by the store.", nil, nil),
		prometheus.NewDesc("anykv_store_hits_total", "Point reads that found a live item.", nil, nil),
		prometheus.NewDesc("anykv_store_misses_total", "Point reads that found nothing.", nil, nil),
		prometheus.NewDesc("anykv_store_batches_total", "Batches of mutations applied.", nil, nil),
		prometheus.NewDesc("anykv_store_mutations_total", "Mutations applied.", nil, nil),
		prometheus.NewDesc("anykv_store_expired_swept_total", "Expired items reclaimed by the background sweeper.", nil, nil),
	}
	itemsDesc = prometheus.NewDesc("anykv_items",
		"Items stored (live, or expired and not yet swept); an estimate where the engine only estimates.", nil, nil)
	bytesDesc = prometheus.NewDesc("anykv_bytes",
		"Bytes stored, as the engine counts them (keys and values in memory, or disk usage).", nil, nil)
)

// itemFigures and byteFigures are the engine figures that become anykv_items and anykv_bytes, first present
// wins: engines name them differently (memstore counts "keys" and "bytes" exactly; pebble only estimates its
// keys from its tables and knows its disk usage).
var (
	itemFigures = []string{"keys", "items", "keys_estimate"}
	byteFigures = []string{"bytes", "live_bytes", "disk_bytes"}
)

// storeCollector exports, at each scrape, the kv.Stats counters, the anykv_items and anykv_bytes gauges, and every
// engine figure as a gauge named anykv_engine_<figure> (but "keys", "items" and "bytes", which anykv_items and
// anykv_bytes already are). Reading the store at scrape time, rather than mirroring its counters in client
// counters, keeps the store free of any dependency on this package.
//
// It is an unchecked collector (Describe sends nothing): which engine figures exist is only known when the engine
// reports them, and differs between engines.
type storeCollector struct {
	stats func() kv.Stats
}

// Describe sends no descriptor, which makes the collector unchecked; see storeCollector.
func (storeCollector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the store's figures once and sends them.
func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for i, v := range [...]int64{st.Gets, st.Hits, st.Misses, st.Batches, st.Mutations, st.ExpiredSwept} {
		ch <- constMetric(storeCounters[i], prometheus.CounterValue, v)
	}
	first := func(names []string) (int64, bool) {
		for _, n := range names {
			if v, ok := st.Engine[n]; ok {
				return v, true
			}
		}
		return 0, false
	}
	if v, ok := first(itemFigures); ok {
		ch <- constMetric(itemsDesc, prometheus.GaugeValue, v)
	}
	if v, ok := first(byteFigures); ok {
		ch <- constMetric(bytesDesc, prometheus.GaugeValue, v)
	}
	names := make([]string, 0, len(st.Engine))
	for name := range st.Engine {
		if name != "keys" && name != "items" && name != "bytes" {
			names = append(names, name)
		}
	}
	sort.Strings(names) // so that of two names that sanitize alike, the same one always wins
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		metric := "anykv_engine_" + sanitize(name)
		if seen[metric] { // two figures in one family would make the registry refuse the scrape: keep the first
			continue
		}
		seen[metric] = true
		desc := prometheus.NewDesc(metric, "Engine figure "+strconv.Quote(name)+".", nil, nil)
		ch <- constMetric(desc, prometheus.GaugeValue, st.Engine[name])
	}
}

// constMetric is prometheus.NewConstMetric that reports a failure as an invalid metric (the registry then reports
// it to promhttp) rather than panicking in the middle of a scrape.
func constMetric(desc *prometheus.Desc, typ prometheus.ValueType, v int64) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, typ, float64(v))
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// sanitize makes a metric name part out of an engine figure name: [a-zA-Z0-9_], other bytes as '_'. The client
// would accept any UTF-8 name, but only classic names print unquoted in the text format and work in every
// PromQL version.
func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			out[i] = '_'
		}
	}
	return string(out)
}
