package redis

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"anykv/internal/engine"
)

// Per-command latency histograms, as Redis 7's latency tracking keeps them for INFO latencystats and LATENCY
// HISTOGRAM: an HDR histogram per command (and per container subcommand) with Redis's layout, 1 ns to 1 s at two
// significant digits, so the percentiles and buckets read as Redis's do. anykv records nanoseconds where Redis
// records whole microseconds times 1000, so its figures are finer, not coarser.

const (
	histMin      = 1             // Redis's LATENCY_HISTOGRAM_MIN_VALUE (ns)
	histMax      = 1_000_000_000 // LATENCY_HISTOGRAM_MAX_VALUE (ns)
	histHalfBits = 7             // two significant digits: 256 sub-buckets, half of them per bucket past the first
	histHalf     = 1 << histHalfBits
	histSubMask  = 2*histHalf - 1
	histBuckets  = 23                           // buckets to cover histMax: 256 << 22 > 1e9
	histLen      = (histBuckets + 1) * histHalf // 3,072 counts, 24 KiB, made at a command's first call
)

// latencyHist is one command's histogram. Counts are added atomically by every connection; a reader sees each
// count whole but may see one recorded between two of its loads.
type latencyHist struct {
	counts [histLen]atomic.Int64
}

// histBucket is the power-of-two bucket a value (ns) falls in: hdr_histogram's get_bucket_index.
func histBucket(v int64) int {
	return 64 - bits.LeadingZeros64(uint64(v)|histSubMask) - (histHalfBits + 1)
}

// histIndex is the count a value (ns, within histMin..histMax) falls in: hdr_histogram's counts_index_for.
func histIndex(v int64) int {
	bucket := histBucket(v)
	return (bucket+1)<<histHalfBits + int(v>>bucket) - histHalf
}

// histValue is the lowest value of count i: hdr_value_at_index.
func histValue(i int) int64 {
	bucket, sub := i>>histHalfBits-1, i&(histHalf-1)+histHalf
	if bucket < 0 {
		sub -= histHalf
		bucket = 0
	}
	return int64(sub) << bucket
}

// histHighest is the highest value counted with v: hdr_histogram's highest_equivalent_value.
func histHighest(v int64) int64 {
	bucket := histBucket(v)
	sub := v >> bucket
	size := int64(1) << bucket
	if sub >= 2*histHalf {
		size <<= 1
	}
	return sub<<bucket + size - 1
}

// record counts n calls that took d.
func (h *latencyHist) record(d time.Duration, n int64) {
	v := min(max(int64(d), histMin), histMax)
	h.counts[histIndex(v)].Add(n)
}

// snapshot reads the counts into counts and returns their total.
func (h *latencyHist) snapshot(counts *[histLen]int64) (total int64) {
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	return total
}

// percentile is hdr_value_at_percentile: the highest value of the count where the calls reach p percent of the
// total (the lowest value, for p 0).
func percentile(counts *[histLen]int64, total int64, p float64) int64 {
	want := max(int64(min(p, 100)/100*float64(total)+0.5), 1)
	i, sum := 0, int64(0)
	for ; i < histLen; i++ {
		if sum += counts[i]; sum >= want {
			break
		}
	}
	if i == histLen {
		return 0
	}
	if p == 0 {
		return histValue(i)
	}
	return histHighest(histValue(i))
}

// cdf is what LATENCY HISTOGRAM answers of one command, as Redis's fillCommandCDF walks the histogram: the calls
// counted up to each power of two from 1,024 ns, as (µs, cumulative calls) pairs, those that add nothing left out.
// It appends them to micros[:0] and cumulative[:0] (at most 31 pairs).
func cdf(counts *[histLen]int64, total int64, micros, cumulative []int64) ([]int64, []int64) {
	micros, cumulative = micros[:0], cumulative[:0]
	i, sum, prev := 0, int64(0), int64(0)
	for level := int64(1024); sum < total; level *= 2 {
		last := histLen - 1 // a level past the counts: every count (as Redis's iterator, which runs off the end)
		if level <= histMax {
			last = histIndex(level)
		}
		for ; i <= last; i++ {
			sum += counts[i]
		}
		if sum > prev {
			micros = append(micros, histHighest(histValue(last))/1000)
			cumulative = append(cumulative, sum)
		}
		prev = sum
		if i >= histLen {
			break
		}
	}
	return micros, cumulative
}

// defaultPercentiles is latency-tracking-info-percentiles' default, as Redis's.
var defaultPercentiles = []float64{50, 99, 99.9}

// latencyTracking holds latency-tracking (on by default, as in Redis) and the percentiles INFO latencystats shows.
type latencyTracking struct {
	off         atomic.Bool
	percentiles atomic.Pointer[[]float64] // nil: the default
}

func (t *latencyTracking) shown() []float64 {
	if p := t.percentiles.Load(); p != nil {
		return *p
	}
	return defaultPercentiles
}

// formatPercentile writes a percentile as Redis does: "%f" with trailing zeros (and a bare point) cut.
func formatPercentile(p float64) string {
	s := strconv.FormatFloat(p, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// parsePercentiles reads latency-tracking-info-percentiles as Redis does: the value split at each space, each part
// a number between 0 and 100 (strtod's text), "" for none, with Redis's errors.
func parsePercentiles(v string) ([]float64, error) {
	out := []float64{}
	if v == "" {
		return out, nil
	}
	for _, a := range strings.Split(v, " ") {
		f, ok := engine.ParseLongDouble([]byte(a))
		if !ok {
			return nil, configError("Invalid latency-tracking-info-percentiles parameters")
		}
		p, _ := f.Float64()
		if !f.IsInf() && (math.IsInf(p, 0) || p == 0 && f.Sign() != 0) { // strtod's range error: out of a double's range
			return nil, configError("Invalid latency-tracking-info-percentiles parameters")
		}
		if p < 0 || p > 100 {
			return nil, configError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		out = append(out, p)
	}
	return out, nil
}

func init() {
	configSetters["latency-tracking"] = func(h *Handler, v string) (func(), error) {
		on, err := configBool(v)
		return func() { h.tracking.off.Store(!on) }, err
	}
	configSetters["latency-tracking-info-percentiles"] = func(h *Handler, v string) (func(), error) {
		p, err := parsePercentiles(v)
		return func() { h.tracking.percentiles.Store(&p) }, err
	}
}

// latencyStatsSection is INFO latencystats: each command's (and subcommand's) percentiles, in name order, while
// latency tracking is on.
func (h *Handler) latencyStatsSection() [][2]string {
	if h.tracking.off.Load() {
		return nil
	}
	ps := h.tracking.shown()
	var out [][2]string
	counts := new([histLen]int64) // one copy at a time, reused
	for _, slot := range sortedSlots() {
		hist := h.cmdStats[slot].hist.Load()
		if hist == nil {
			continue
		}
		total := hist.snapshot(counts)
		var b strings.Builder
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			us := float64(percentile(counts, total, p)) / 1000
			b.WriteString("p" + formatPercentile(p) + "=" + strconv.FormatFloat(us, 'f', 3, 64))
		}
		out = append(out, [2]string{"latency_percentiles_usec_" + statSlots()[slot], b.String()})
	}
	return out
}

// latencyHistogram is LATENCY HISTOGRAM: each named command's calls and cumulative latencies (a container's
// subcommands with it; every command's when none is named), as a map, those never timed and unknown names left
// out, as Redis.
func (s *session) latencyHistogram(names [][]byte) {
	all := statSlots()
	var slots []int
	if len(names) == 0 {
		slots = sortedSlots()
	}
	for _, n := range names {
		name, sub, isSub := strings.Cut(lower(n), "|")
		c := commands[name]
		switch {
		case c == nil:
		case isSub:
			if slot, ok := c.subStats[sub]; ok {
				slots = append(slots, slot)
			}
		default:
			subs := make([]int, 0, len(c.subStats))
			for _, slot := range c.subStats {
				subs = append(subs, slot)
			}
			slices.SortFunc(subs, func(a, b int) int { return strings.Compare(all[a], all[b]) })
			slots = append(append(slots, c.id), subs...)
		}
	}
	// Each histogram is copied into one buffer and written at once: a request naming a command 20,000 times must
	// not hold 20,000 copies of 24 KiB (a review: 490 MB of heap from a 180 KB request).
	type shown struct {
		name string
		h    *latencyHist
	}
	var out []shown // the histograms as found now: a RESETSTAT meanwhile must not change how many are written
	for _, slot := range slots {
		if h := s.h.cmdStats[slot].hist.Load(); h != nil {
			out = append(out, shown{all[slot], h})
		}
	}
	s.w.MapHeader(len(out))
	counts := new([histLen]int64)
	var micros, cum []int64
	for _, o := range out {
		total := o.h.snapshot(counts)
		s.w.BulkString(o.name)
		s.w.MapHeader(2)
		s.w.BulkString("calls")
		s.w.Int(total)
		s.w.BulkString("histogram_usec")
		micros, cum = cdf(counts, total, micros, cum)
		s.w.MapHeader(len(micros))
		for i := range micros {
			s.w.Int(micros[i])
			s.w.Int(cum[i])
		}
	}
}
