package redis

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHistogramMatchesHdrHistogram: the values of testdata/hdr/reference.txt, recorded here, give the
// percentiles and the LATENCY HISTOGRAM walk that Redis 7.0.15's hdr_histogram gave for them (testdata/hdr/gen.c
// wrote the file): bucket edges from 1 ns to past 1 s, and random latencies, in nanoseconds and in whole
// microseconds.
func TestHistogramMatchesHdrHistogram(t *testing.T) {
	f, err := os.Open("testdata/hdr/reference.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var h *latencyHist
	cases := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch fields[0] {
		case "values":
			h = new(latencyHist)
			for _, v := range fields[1:] {
				n, _ := strconv.ParseInt(v, 10, 64)
				h.record(time.Duration(n), 1)
			}
			cases++
		case "percentiles":
			counts := new([histLen]int64)
			total := h.snapshot(counts)
			for _, kv := range fields[1:] {
				p, want, _ := strings.Cut(kv, "=")
				pf, _ := strconv.ParseFloat(p, 64)
				if got := strconv.FormatInt(percentile(counts, total, pf), 10); got != want {
					t.Errorf("case %d: p%s = %s, hdr_histogram %s", cases, p, got, want)
				}
			}
		case "cdf":
			counts := new([histLen]int64)
			total := h.snapshot(counts)
			micros, cum := cdf(counts, total, nil, nil)
			var got []string
			for i := range micros {
				got = append(got, fmt.Sprintf("%d=%d", micros[i], cum[i]))
			}
			if strings.Join(got, " ") != strings.Join(fields[1:], " ") {
				t.Errorf("case %d: histogram %v, hdr_histogram %v", cases, got, fields[1:])
			}
		}
	}
	if cases < 30 {
		t.Fatalf("read %d cases", cases)
	}
}

// TestPercentileSettingMatchesRedis: latency-tracking-info-percentiles is split at each space and read as strtod,
// as Redis reads it, and shown with %f's trailing zeros cut.
func TestPercentileSettingMatchesRedis(t *testing.T) {
	for v, want := range map[string]string{"50 99 99.9": "50 99 99.9", "": "", "0.0 100.0": "0 100",
		"1e1 0x10 +5": "10 16 5", "99.99999": "99.99999", "1": "1"} {
		ps, err := parsePercentiles(v)
		var shown []string
		for _, p := range ps {
			shown = append(shown, formatPercentile(p))
		}
		if err != nil || strings.Join(shown, " ") != want {
			t.Errorf("%q: %v %v, want %q", v, shown, err, want)
		}
	}
	for v, want := range map[string]string{"50  99": "Invalid", " 50": "Invalid", "50 ": "Invalid", "a": "Invalid",
		"nan": "Invalid", "101": "sit between", "-1": "sit between", "inf": "sit between", "1e-400": "Invalid", "1e400": "Invalid"} {
		if _, err := parsePercentiles(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
}

// latencyStatsTranscript times a few commands and reads them back through LATENCY HISTOGRAM (all, by name, a
// container, a subcommand, unknown names) and INFO latencystats, in RESP2 and RESP3, with every setting of
// latency-tracking and its percentiles, the times masked.
func latencyStatsTranscript(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	var out []string
	for _, args := range [][]string{
		{"CONFIG", "RESETSTAT"}, {"LATENCY", "HISTOGRAM"}, {"SET", "a", "b"}, {"SET", "a", "c"}, {"GET", "a"},
		{"CLIENT", "GETNAME"}, {"LATENCY", "HISTOGRAM", "set", "GET"}, {"LATENCY", "HISTOGRAM", "client"},
		{"LATENCY", "HISTOGRAM", "CLIENT|GETNAME"}, {"LATENCY", "HISTOGRAM", "nosuch", "set|x", "client|nosuch", "set"},
		{"LATENCY", "HISTOGRAM", "hset"}, {"INFO", "latencystats"}, {"CONFIG", "GET", "latency-tracking"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50 99.99 100"}, {"INFO", "latencystats"},
		{"CONFIG", "GET", "latency-tracking-info-percentiles"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "10 a"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "10  20"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "100.5"},
		{"CONFIG", "GET", "latency-tracking-info-percentiles"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", ""}, {"INFO", "latencystats"},
		{"CONFIG", "GET", "latency-tracking-info-percentiles"},
		{"CONFIG", "SET", "latency-tracking", "maybe"}, {"CONFIG", "SET", "latency-tracking", "NO"},
		{"SET", "a", "d"}, {"INFO", "latencystats"}, {"LATENCY", "HISTOGRAM", "set"},
		{"CONFIG", "SET", "latency-tracking", "yes"}, {"SET", "a", "e"}, {"LATENCY", "HISTOGRAM", "set"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "50"}, {"INFO", "latencystats"},
		{"HELLO", "3"}, {"LATENCY", "HISTOGRAM", "set", "get"}, {"LATENCY", "HELP"},
		{"CONFIG", "RESETSTAT"}, {"LATENCY", "HISTOGRAM"},
	} {
		out = append(out, strings.Join(args, " ")+" -> "+c.do(args...))
	}
	out[len(out)-5] = "HELLO 3" // its version and id differ
	// The buckets' times and counts, and the percentiles' times, masked; INFO's lines sorted (Redis lists them in its
	// hash table's order, anykv by name). The calls stay.
	buckets := regexp.MustCompile(`(histogram_usec\r\n)[*%]\d+\r\n(:\d+\r\n)*`)
	pcts := regexp.MustCompile(`(p[\d.]+)=\d+\.\d{3}`)
	for i := range out {
		out[i] = buckets.ReplaceAllString(out[i], "$1_\r\n")
		out[i] = pcts.ReplaceAllString(out[i], "$1=_")
		if cmd, body, ok := strings.Cut(out[i], "# Latencystats\r\n"); ok { // its length too (the masks)
			lines := strings.Split(strings.TrimSpace(body), "\r\n")
			sort.Strings(lines)
			out[i] = cmd[:strings.Index(cmd, "$")] + strings.Join(lines, "\n")
		}
	}
	return out
}

// TestLatencyStatsMatchRedis: INFO latencystats, LATENCY HISTOGRAM and the latency-tracking settings answer as
// redis-server 7's, times aside.
func TestLatencyStatsMatchRedis(t *testing.T) {
	sameAsRedis(t, latencyStatsTranscript)
}

// TestLatencyHistogramOfManyNamesStaysSmall: a LATENCY HISTOGRAM naming one command 10,000 times (a 60 KB
// request) allocates about its reply, not a 24 KiB copy of the histogram per name (a review: 245 MiB).
func TestLatencyHistogramOfManyNamesStaysSmall(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.raw(t)
	c.expect("+OK\r\n", "SET", "k", "v")
	args := []string{"LATENCY", "HISTOGRAM"}
	for i := 0; i < 10000; i++ {
		args = append(args, "set")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := c.do(args...)
	runtime.ReadMemStats(&after)
	if !strings.HasPrefix(got, "*20000\r\n$3\r\nset\r\n") {
		t.Fatalf("reply %.60q", got)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("one LATENCY HISTOGRAM of 10,000 names allocated %d MiB", grew>>20)
	}
}
