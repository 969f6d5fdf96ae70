package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyHist is one command's latency histogram, kept with atomic adds and exposed through the client's constant
// histograms at each scrape (latencyCollector). The client's own Histogram takes one observation at a time, four
// atomic operations each; a pipeline's replies, answered together, share one latency, and observe records them
// all at the cost of one (its share was 3–7% of a pipelined GET's CPU).
type latencyHist struct {
	buckets [len(latencyBounds) + 1]atomic.Uint64 // by upper bound; the last holds those above every bound
	nanos   atomic.Uint64                         // the sum of the observations
}

// boundNanos are latencyBounds in nanoseconds, for comparisons of durations without floating point.
var boundNanos = func() (b [len(latencyBounds)]int64) {
	for i, s := range latencyBounds {
		b[i] = int64(math.Round(s * 1e9))
	}
	return b
}()

// observe records n observations of d (not negative).
func (h *latencyHist) observe(d time.Duration, n int) {
	i := 0
	for i < len(boundNanos) && int64(d) > boundNanos[i] { // le is inclusive
		i++
	}
	h.buckets[i].Add(uint64(n))
	h.nanos.Add(uint64(d) * uint64(n))
}

// latencyCollector exposes the latency histograms of every Observer of m under one family.
type latencyCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func newLatencyCollector(m *Metrics) latencyCollector {
	return latencyCollector{m: m, desc: prometheus.NewDesc("anykv_request_duration_seconds",
		"Time to serve one request, per protocol and command.", commandLabels, nil)}
}

// Describe implements prometheus.Collector.
func (c latencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one histogram per Observer. The count is the sum of the buckets read,
// so a scrape during observations still shows cumulative buckets that end at the count.
func (c latencyCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	obs := make([]*Observer, 0, len(c.m.cmds))
	for _, o := range c.m.cmds {
		obs = append(obs, o)
	}
	c.m.mu.Unlock()
	for _, o := range obs {
		h := o.latency
		cum, buckets := uint64(0), make(map[float64]uint64, len(latencyBounds))
		for i, bound := range latencyBounds {
			cum += h.buckets[i].Load()
			buckets[bound] = cum
		}
		cum += h.buckets[len(latencyBounds)].Load()
		ch <- prometheus.MustNewConstHistogram(c.desc, cum, float64(h.nanos.Load())/1e9, buckets, o.labels[0], o.labels[1])
	}
}
