package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// scrape returns the exposition as a map from "name{labels}" to value, after checking its syntax: every sample
// belongs to a family declared before it by exactly one HELP and one TYPE line, and no sample repeats.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	var b bytes.Buffer
	m.WriteText(&b)
	return parseText(t, b.String())
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$`)
	metaLine   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
)

func parseText(t *testing.T, text string) map[string]float64 {
	t.Helper()
	types := map[string]string{}
	helps := map[string]bool{}
	out := map[string]float64{}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("exposition does not end with a newline")
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if m := metaLine.FindStringSubmatch(line); m != nil {
			if m[1] == "HELP" {
				if helps[m[2]] {
					t.Fatalf("second HELP for %s", m[2])
				}
				helps[m[2]] = true
				continue
			}
			if types[m[2]] != "" {
				t.Fatalf("second TYPE for %s", m[2])
			}
			switch m[3] {
			case "counter", "gauge", "histogram":
			default:
				t.Fatalf("bad type in %q", line)
			}
			types[m[2]] = m[3]
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("malformed line %q", line)
		}
		fam := m[1]
		if types[fam] == "" {
			fam = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(fam, "_bucket"), "_sum"), "_count")
			if types[fam] != "histogram" {
				t.Fatalf("sample %q before its TYPE line", line)
			}
		}
		if !helps[fam] {
			t.Fatalf("sample %q without HELP", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("bad value in %q", line)
		}
		if _, dup := out[m[1]+m[2]]; dup {
			t.Fatalf("duplicate sample %q", line)
		}
		out[m[1]+m[2]] = v
	}
	return out
}

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
			return `{protocol="http",command="get"}`
		}
		return `{protocol="http",command="get",le="` + le + `"}`
	}
	want := map[string]float64{
		"anykv_requests_total" + lbl(""):                         5,
		"anykv_request_errors_total" + lbl(""):                   1,
		"anykv_request_duration_seconds_bucket" + lbl("0.00005"): 3,
		"anykv_request_duration_seconds_bucket" + lbl("0.001"):   3,
		"anykv_request_duration_seconds_bucket" + lbl("0.0025"):  4,
		"anykv_request_duration_seconds_bucket" + lbl("10"):      4,
		"anykv_request_duration_seconds_bucket" + lbl("+Inf"):    5,
		"anykv_request_duration_seconds_count" + lbl(""):         5,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
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
	got := scrape(t, m)
	if got[`anykv_requests_total{protocol="x\"y",command="a\\b\nc"}`] != 1 {
		t.Fatalf("escaped sample missing: %v", got)
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
}

func TestWriteStoreSanitizesAndDeduplicates(t *testing.T) {
	var b bytes.Buffer
	writeStore(&b, 0, 0, 0, 0, 0, 0, map[string]int64{"items": 4, "keys": 5, "cache.hits-total": 7, "bytes": 9,
		"cache_hits-total": 8})
	got := parseText(t, b.String())
	if got["anykv_items"] != 5 || got["anykv_engine_cache_hits_total"] != 7 || got["anykv_bytes"] != 9 {
		t.Fatalf("engine figures: %v", got)
	}
	// Pebble's names: an estimate of keys and the disk usage, also kept under their own names.
	b.Reset()
	writeStore(&b, 0, 0, 0, 0, 0, 0, map[string]int64{"keys_estimate": 3, "disk_bytes": 4096})
	got = parseText(t, b.String())
	if got["anykv_items"] != 3 || got["anykv_bytes"] != 4096 || got["anykv_engine_keys_estimate"] != 3 ||
		got["anykv_engine_disk_bytes"] != 4096 {
		t.Fatalf("pebble figures: %v", got)
	}
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
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Fatalf("Content-Type %q", ct)
	}
	if !strings.Contains(string(body), `anykv_requests_total{protocol="resp",command="ping"} 1`) {
		t.Fatalf("body lacks the sample:\n%s", body)
	}
	parseText(t, string(body))
	head, err := http.Head(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, head.Body)
	head.Body.Close()
	if n != 0 || head.ContentLength != int64(len(body)) {
		t.Fatalf("HEAD: %d body bytes, Content-Length %d, want 0 and %d", n, head.ContentLength, len(body))
	}
}

// TestObserveConcurrently runs Observe from many goroutines while scraping: counts add up and -race stays quiet.
func TestObserveConcurrently(t *testing.T) {
	m := New(nil)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				var b bytes.Buffer
				m.WriteText(&b)
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
	got := scrape(t, m)
	var total float64
	for k, v := range got {
		if strings.HasPrefix(k, "anykv_request_duration_seconds_count") {
			total += v
		}
	}
	if total != workers*each {
		t.Fatalf("histogram counted %v, want %d", total, workers*each)
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	o := New(nil).Command("resp", "get")
	if n := testing.AllocsPerRun(1000, func() { o.Observe(123*time.Microsecond, false) }); n != 0 {
		t.Fatalf("Observe allocates %v times", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	o := New(nil).Command("resp", "get")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Observe(300*time.Microsecond, false)
		}
	})
}
