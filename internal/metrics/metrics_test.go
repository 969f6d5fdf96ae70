package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

func TestCommandReturnsOneObserverPerPair(t *testing.T) {
	m := New(nil)
	a, b := m.Command("resp", "get"), m.Command("resp", "get")
	if a != b {
		t.Fatal("the same protocol and command gave two observers")
	}
	if m.Command("resp", "set") == a || m.Command("memcache", "get") == a {
		t.Fatal("different commands share an observer")
	}
}

func TestNilIsSafe(t *testing.T) {
	var m *Metrics
	o := m.Command("resp", "get")
	if o != nil {
		t.Fatal("nil Metrics returned an observer")
	}
	o.Observe(time.Millisecond, true) // must not panic
	if o.Requests() != 0 || o.Errors() != 0 {
		t.Fatal("nil observer counted")
	}
}

func TestHistogramBucketsAndCounters(t *testing.T) {
	m := New(nil)
	o := m.Command("http", "get")
	o.Observe(30*time.Microsecond, false)
	o.Observe(50*time.Microsecond, false) // on a bound: counts in that bucket (le is inclusive)
	o.Observe(2*time.Millisecond, true)
	o.Observe(20*time.Second, false)
	o.Observe(-time.Second, false) // a clock step backwards counts as zero
	got := scrape(t, m)
	lbl := func(le string) string {
		if le == "" {
			return `{command="get",protocol="http"}`
		}
		return `{command="get",protocol="http",le="` + le + `"}`
	}
	want := map[string]float64{
		"anykv_requests_total" + lbl(""):                        5,
		"anykv_request_errors_total" + lbl(""):                  1,
		"anykv_request_duration_seconds_bucket" + lbl("5e-05"):  3,
		"anykv_request_duration_seconds_bucket" + lbl("0.001"):  3,
		"anykv_request_duration_seconds_bucket" + lbl("0.0025"): 4,
		"anykv_request_duration_seconds_bucket" + lbl("10"):     4,
		"anykv_request_duration_seconds_bucket" + lbl("+Inf"):   5,
		"anykv_request_duration_seconds_count" + lbl(""):        5,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if sum := got["anykv_request_duration_seconds_sum"+lbl("")]; sum < 20.002 || sum > 20.0021 {
		t.Errorf("sum = %v, want 20.00208", sum)
	}
	if o.Requests() != 5 || o.Errors() != 1 {
		t.Errorf("Requests, Errors = %d, %d", o.Requests(), o.Errors())
	}
}

func TestLabelsAreEscaped(t *testing.T) {
	m := New(nil)
	m.Command("x\"y", "a\\b\nc").Observe(time.Millisecond, false)
	m.Command("resp", "bad\xffutf8").Observe(time.Millisecond, false) // the client would panic on it as is
	body := get(t, m)
	if !strings.Contains(body, `anykv_requests_total{command="a\\b\nc",protocol="x\"y"} 1`+"\n") {
		t.Fatalf("escaped sample missing:\n%s", body)
	}
	got := flatten(t, parseText(t, body)) // the parser takes the escapes back to the same label values
	if got[`anykv_requests_total{command="`+escape("a\\b\nc")+`",protocol="`+escape("x\"y")+`"}`] != 1 ||
		got["anykv_requests_total{command=\"bad\uFFFDutf8\",protocol=\"resp\"}"] != 1 {
		t.Fatalf("escaped samples: %v", got)
	}
}

func TestStoreFigures(t *testing.T) {
	s := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "bb"} {
		if r := s.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(k), Value: []byte("vvv")}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	s.Get(ctx, "default", []byte("a"))
	s.Get(ctx, "default", []byte("zz"))
	got := scrape(t, New(s))
	want := map[string]float64{
		"anykv_items": 2, "anykv_bytes": 1 + 3 + 2 + 3, "anykv_engine_version": 2,
		"anykv_store_gets_total": 2, "anykv_store_hits_total": 1, "anykv_store_misses_total": 1,
		"anykv_store_batches_total": 2, "anykv_store_mutations_total": 2, "anykv_store_expired_swept_total": 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := scrape(t, New(nil))["anykv_store_gets_total"]; ok {
		t.Error("store figures without a store")
	}
}

func TestStoreCollectorSanitizesAndDeduplicates(t *testing.T) {
	engineFigures := func(eng map[string]int64) map[string]float64 {
		return scrape(t, newMetrics(func() kv.Stats { return kv.Stats{Engine: eng} }))
	}
	got := engineFigures(map[string]int64{"items": 4, "keys": 5, "cache.hits-total": 7, "bytes": 9,
		"cache_hits-total": 8})
	if got["anykv_items"] != 5 || got["anykv_engine_cache_hits_total"] != 7 || got["anykv_bytes"] != 9 {
		t.Fatalf("engine figures: %v", got)
	}
	if _, ok := got["anykv_engine_keys"]; ok {
		t.Fatal("keys exported twice")
	}
	// Pebble's names: an estimate of keys and the disk usage, also kept under their own names.
	got = engineFigures(map[string]int64{"keys_estimate": 3, "disk_bytes": 4096})
	if got["anykv_items"] != 3 || got["anykv_bytes"] != 4096 || got["anykv_engine_keys_estimate"] != 3 ||
		got["anykv_engine_disk_bytes"] != 4096 {
		t.Fatalf("pebble figures: %v", got)
	}
}

// TestExpositionParsesWithExpfmt reads /metrics as Prometheus would, with expfmt's text parser, and finds each
// kind of family with its type: the request counter, the latency histogram, a store gauge, and the Go runtime's.
func TestExpositionParsesWithExpfmt(t *testing.T) {
	s := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer s.Close()
	if r := s.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("v")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	m := New(s)
	o := m.Command("resp", "get")
	for i := 0; i < 3; i++ {
		o.Observe(time.Duration(i)*time.Millisecond, i == 2)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(get(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	family := func(name string, typ dto.MetricType) *dto.MetricFamily {
		t.Helper()
		mf := fams[name]
		if mf == nil || mf.GetType() != typ || mf.GetHelp() == "" {
			t.Fatalf("family %s: %v, want type %v with help", name, mf, typ)
		}
		return mf
	}
	labelsAre := func(m *dto.Metric, protocol, command string) bool {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		return len(got) == 2 && got["protocol"] == protocol && got["command"] == command
	}

	reqs := family("anykv_requests_total", dto.MetricType_COUNTER)
	if len(reqs.Metric) != 1 || !labelsAre(reqs.Metric[0], "resp", "get") || reqs.Metric[0].GetCounter().GetValue() != 3 {
		t.Fatalf("anykv_requests_total: %v", reqs)
	}
	errs := family("anykv_request_errors_total", dto.MetricType_COUNTER)
	if len(errs.Metric) != 1 || errs.Metric[0].GetCounter().GetValue() != 1 {
		t.Fatalf("anykv_request_errors_total: %v", errs)
	}
	lat := family("anykv_request_duration_seconds", dto.MetricType_HISTOGRAM)
	if len(lat.Metric) != 1 {
		t.Fatalf("anykv_request_duration_seconds: %v", lat)
	}
	h := lat.Metric[0].GetHistogram()
	if !labelsAre(lat.Metric[0], "resp", "get") || h.GetSampleCount() != 3 ||
		math.Abs(h.GetSampleSum()-0.003) > 1e-9 || len(h.Bucket) != len(latencyBounds)+1 {
		t.Fatalf("anykv_request_duration_seconds: %v", lat)
	}
	for i, b := range h.Bucket { // the parser keeps the +Inf bucket
		want := math.Inf(1)
		if i < len(latencyBounds) {
			want = latencyBounds[i]
		}
		if b.GetUpperBound() != want {
			t.Fatalf("bucket %d bound %v, want %v", i, b.GetUpperBound(), want)
		}
	}
	if items := family("anykv_items", dto.MetricType_GAUGE); items.Metric[0].GetGauge().GetValue() != 1 {
		t.Fatalf("anykv_items: %v", items)
	}
	family("anykv_store_gets_total", dto.MetricType_COUNTER)
	family("go_goroutines", dto.MetricType_GAUGE)
}

func TestHandler(t *testing.T) {
	m := New(nil)
	m.Command("resp", "ping").Observe(time.Microsecond, false)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if f := expfmt.ResponseFormat(resp.Header); f.FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), `anykv_requests_total{command="ping",protocol="resp"} 1`+"\n") {
		t.Fatalf("body lacks the sample:\n%s", body)
	}
	parseText(t, string(body))
	// HEAD: the headers of a GET, without the body. (Both sent without Accept-Encoding, so neither is gzipped.)
	req, _ := http.NewRequest(http.MethodHead, srv.URL, nil)
	req.Header.Set("Accept-Encoding", "identity")
	head, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, head.Body)
	head.Body.Close()
	if n != 0 || head.StatusCode != http.StatusOK || head.ContentLength < int64(len(body))*9/10 {
		t.Fatalf("HEAD: %d, %d body bytes, Content-Length %d, want 200, 0 and about %d",
			head.StatusCode, n, head.ContentLength, len(body))
	}
}

// TestObserveConcurrently runs Observe from many goroutines while scraping: counts add up and -race stays quiet.
func TestObserveConcurrently(t *testing.T) {
	m := New(nil)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			default:
				get(t, m)
			}
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := m.Command("resp", fmt.Sprint("cmd", w%3))
			for i := 0; i < each; i++ {
				o.Observe(time.Duration(i)*time.Microsecond, i%10 == 0)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-scraped
	got := scrape(t, m)
	var total, requests float64
	for k, v := range got {
		if strings.HasPrefix(k, "anykv_request_duration_seconds_count") {
			total += v
		}
		if strings.HasPrefix(k, "anykv_requests_total") {
			requests += v
		}
	}
	if total != workers*each || requests != workers*each {
		t.Fatalf("histogram counted %v, requests %v, want %d", total, requests, workers*each)
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	o := New(nil).Command("resp", "get")
	if n := testing.AllocsPerRun(1000, func() { o.Observe(123*time.Microsecond, true) }); n != 0 {
		t.Fatalf("Observe allocates %v times", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	o := New(nil).Command("resp", "get")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Observe(300*time.Microsecond, false)
		}
	})
}

func TestConnections(t *testing.T) {
	m := New(nil)
	n := func(v int64) func() int64 { return func() int64 { return v } }
	m.Connections("http", ConnFigures{Current: n(2), Total: n(7), Rejected: n(3), Denied: n(1)})
	m.Connections("resp", ConnFigures{Current: n(0), Total: n(1), Rejected: n(0), Denied: n(4)})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{`anykv_connections{protocol="http"} 2`, `anykv_connections_total{protocol="http"} 7`,
		`anykv_connections_refused_total{protocol="http",reason="limit"} 3`,
		`anykv_connections_refused_total{protocol="http",reason="protected_mode"} 1`,
		`anykv_connections_refused_total{protocol="resp",reason="protected_mode"} 4`} {
		if !strings.Contains(rec.Body.String(), line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
	var nilM *Metrics
	nilM.Connections("x", ConnFigures{})
}

// TestObserveNCountsEach: ObserveN of n requests is n Observes of one: the same counts, errors, buckets and sum,
// and every bound in nanoseconds is exactly its bound in seconds (an observation on a bound counts in it).
func TestObserveNCountsEach(t *testing.T) {
	one, many := New(nil), New(nil)
	for i, d := range []time.Duration{0, 50 * time.Microsecond, 700 * time.Microsecond, 3 * time.Second, time.Minute} {
		for j := 0; j < 5; j++ {
			one.Command("resp", "get").Observe(d, j < i)
		}
		many.Command("resp", "get").ObserveN(d, 5, i)
	}
	scrape := func(m *Metrics) string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		var keep []string
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, "anykv_request") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if a, b := scrape(one), scrape(many); a != b || !strings.Contains(a, `anykv_request_duration_seconds_count{command="get",protocol="resp"} 25`) {
		t.Fatalf("one at a time:\n%s\nfive at a time:\n%s", a, b)
	}
	for i, s := range latencyBounds {
		if float64(boundNanos[i]) != s*1e9 && time.Duration(boundNanos[i]).Seconds() != s {
			t.Errorf("bound %v is %d ns", s, boundNanos[i])
		}
	}
}
