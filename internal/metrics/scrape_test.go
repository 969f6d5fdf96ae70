package metrics

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The helpers below scrape a Metrics through its Handler, as Prometheus would, and turn the text into something
// a test can index.

// get serves one GET /metrics (with no Accept header, so in the text format) and returns the body.
func get(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// scrape returns the exposition as a map from `name{labels}` to value, the labels sorted by name as the client
// writes them, after parsing it with expfmt.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	return flatten(t, parseText(t, get(t, m)))
}

// parseText parses an exposition with expfmt's text parser, holding names to the classic character set (what
// sanitize promises), and checks what the parser leaves to its callers: every family has a HELP and a TYPE.
func parseText(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, text)
	}
	for name, mf := range fams {
		if mf.Help == nil || mf.GetType() == dto.MetricType_UNTYPED {
			t.Fatalf("family %s lacks a HELP or a TYPE line", name)
		}
	}
	return fams
}

// flatten turns families into one entry per sample line, and fails on a sample that repeats (the parser
// accepts duplicates).
func flatten(t *testing.T, fams map[string]*dto.MetricFamily) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	add := func(name string, labels []*dto.LabelPair, extra string, v float64) {
		pairs := make([]string, 0, len(labels)+1)
		for _, l := range labels {
			pairs = append(pairs, l.GetName()+`="`+escape(l.GetValue())+`"`)
		}
		sort.Strings(pairs)
		if extra != "" {
			pairs = append(pairs, extra)
		}
		key := name
		if len(pairs) > 0 {
			key += "{" + strings.Join(pairs, ",") + "}"
		}
		if _, dup := out[key]; dup {
			t.Fatalf("duplicate sample %s", key)
		}
		out[key] = v
	}
	for name, mf := range fams {
		for _, m := range mf.Metric {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.Label, "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.Label, "", m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.Bucket {
					add(name+"_bucket", m.Label, `le="`+fmtFloat(b.GetUpperBound())+`"`, float64(b.GetCumulativeCount()))
				}
				add(name+"_sum", m.Label, "", h.GetSampleSum())
				add(name+"_count", m.Label, "", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.Quantile {
					add(name, m.Label, `quantile="`+fmtFloat(q.GetQuantile())+`"`, q.GetValue())
				}
				add(name+"_sum", m.Label, "", s.GetSampleSum())
				add(name+"_count", m.Label, "", float64(s.GetSampleCount()))
			default:
				t.Fatalf("family %s of type %v", name, mf.GetType())
			}
		}
	}
	return out
}

// escape and fmtFloat spell label values and bounds as the text format does.
func escape(s string) string { return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) }

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
