package metrics

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// ContentType is the media type of the Prometheus text exposition format this package writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves every metric in the Prometheus text format. It holds no lock while writing to the client.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		m.WriteText(&b)
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		if r.Method != http.MethodHead {
			w.Write(b.Bytes())
		}
	})
}

// WriteText appends the exposition of every metric to b: the per-command families first, then the store's.
func (m *Metrics) WriteText(b *bytes.Buffer) {
	obs := m.observers()
	family(b, "anykv_requests_total", "counter", "Requests served, per protocol and command.")
	for _, o := range obs {
		sample(b, "anykv_requests_total", o.labels(""), float64(o.requests.Load()))
	}
	family(b, "anykv_request_errors_total", "counter",
		"Requests answered with an error (not counting plain misses), per protocol and command.")
	for _, o := range obs {
		sample(b, "anykv_request_errors_total", o.labels(""), float64(o.errors.Load()))
	}
	family(b, "anykv_request_duration_seconds", "histogram", "Time to serve one request, per protocol and command.")
	for _, o := range obs {
		o.writeHistogram(b)
	}
	if st, ok := m.storeFigures(); ok {
		writeStore(b, st.Gets, st.Hits, st.Misses, st.Batches, st.Mutations, st.ExpiredSwept, st.Engine)
	}
}

// writeHistogram writes one observer's buckets (cumulative, as the format wants), sum and count. The count is the
// sum of the buckets read, so the +Inf bucket and the count always agree even while requests are observed.
func (o *Observer) writeHistogram(b *bytes.Buffer) {
	var cum uint64
	for i := range o.buckets {
		cum += o.buckets[i].Load()
		le := "+Inf"
		if i < len(latencyBounds) {
			le = strconv.FormatFloat(latencyBounds[i], 'f', -1, 64)
		}
		sample(b, "anykv_request_duration_seconds_bucket", o.labels(le), float64(cum))
	}
	sample(b, "anykv_request_duration_seconds_sum", o.labels(""), float64(o.sumNanos.Load())/1e9)
	sample(b, "anykv_request_duration_seconds_count", o.labels(""), float64(cum))
}

// labels renders the label set of an observer, with le for a histogram bucket when not empty.
func (o *Observer) labels(le string) string {
	var s strings.Builder
	s.WriteString(`{protocol="`)
	s.WriteString(escapeLabel(o.protocol))
	s.WriteString(`",command="`)
	s.WriteString(escapeLabel(o.command))
	if le != "" {
		s.WriteString(`",le="`)
		s.WriteString(le)
	}
	s.WriteString(`"}`)
	return s.String()
}

// storeCounters name the kv.Stats counters in the exposition, in the order writeStore receives them.
var storeCounters = [...]struct{ name, help string }{
	{"anykv_store_gets_total", "Point reads served by the store."},
	{"anykv_store_hits_total", "Point reads that found a live item."},
	{"anykv_store_misses_total", "Point reads that found nothing."},
	{"anykv_store_batches_total", "Batches of mutations applied."},
	{"anykv_store_mutations_total", "Mutations applied."},
	{"anykv_store_expired_swept_total", "Expired items reclaimed by the background sweeper."},
}

// itemFigures and byteFigures are the engine figures that become anykv_items and anykv_bytes, first present
// wins: engines name them differently (memstore counts "keys" and "bytes" exactly; pebble only estimates its
// keys from its tables and knows its disk usage).
var (
	itemFigures = []string{"keys", "items", "keys_estimate"}
	byteFigures = []string{"bytes", "live_bytes", "disk_bytes"}
)

// writeStore writes the store counters, the anykv_items and anykv_bytes gauges, and every engine figure as a gauge
// named anykv_engine_<figure> (but "keys", "items" and "bytes", which anykv_items and anykv_bytes already are).
func writeStore(b *bytes.Buffer, gets, hits, misses, batches, mutations, swept int64, eng map[string]int64) {
	for i, v := range [...]int64{gets, hits, misses, batches, mutations, swept} {
		family(b, storeCounters[i].name, "counter", storeCounters[i].help)
		sample(b, storeCounters[i].name, "", float64(v))
	}
	first := func(names []string) (int64, bool) {
		for _, n := range names {
			if v, ok := eng[n]; ok {
				return v, true
			}
		}
		return 0, false
	}
	if v, ok := first(itemFigures); ok {
		family(b, "anykv_items", "gauge", "Items stored (live, or expired and not yet swept); an estimate where the engine only estimates.")
		sample(b, "anykv_items", "", float64(v))
	}
	if v, ok := first(byteFigures); ok {
		family(b, "anykv_bytes", "gauge", "Bytes stored, as the engine counts them (keys and values in memory, or disk usage).")
		sample(b, "anykv_bytes", "", float64(v))
	}
	names := make([]string, 0, len(eng))
	for name := range eng {
		if name != "keys" && name != "items" && name != "bytes" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, name := range names {
		metric := "anykv_engine_" + sanitize(name)
		if seen[metric] { // two names that sanitize alike: keep the first
			continue
		}
		seen[metric] = true
		family(b, metric, "gauge", "Engine figure "+strconv.Quote(name)+".")
		sample(b, metric, "", float64(eng[name]))
	}
}

func family(b *bytes.Buffer, name, typ, help string) {
	b.WriteString("# HELP ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help))
	b.WriteString("\n# TYPE ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(typ)
	b.WriteByte('\n')
}

func sample(b *bytes.Buffer, name, labels string, v float64) {
	b.WriteString(name)
	b.WriteString(labels)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	b.WriteByte('\n')
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// sanitize makes a metric name part out of an engine figure name: [a-zA-Z0-9_], other bytes as '_'.
func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			out[i] = '_'
		}
	}
	return string(out)
}
