package redis

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The latency monitor, as Redis 7's: with latency-monitor-threshold (ms, CONFIG SET; 0, the default: off) a
// command that took at least that long is a sample of the event "command" ("fast-command" for a command flagged
// fast), one sample per second per event (the worst of that second), the last 160 kept, and the worst since the
// last reset. LATENCY LATEST, HISTORY and RESET answer as Redis; DOCTOR names each event's spikes as Redis does,
// without Redis's advice; GRAPH draws only the graph's title. A command's time is counted from when it was read to
// when its reply was ready (a batch's fsync included), less the time it waited blocked (BLPOP).

const latencySamples = 160 // Redis's LATENCY_TS_LEN

type latencySample struct{ at, ms int64 }

type latencySeries struct {
	samples []latencySample // oldest first, at most latencySamples
	max     int64
}

type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0: off
	mu        sync.Mutex
	events    map[string]*latencySeries
}

// offer records a command that took took (its blocked wait left out) if the monitor is on and it took long enough.
// now is called only then: a clock read per reply was 4% of a GET pipeline's CPU.
func (m *latencyMonitor) offer(now func() time.Time, cmd *command, took time.Duration) {
	t := m.threshold.Load()
	ms := took.Milliseconds()
	if t <= 0 || ms < t {
		return
	}
	event := "command"
	if cmd.flags&flagFast != 0 {
		event = "fast-command"
	}
	m.add(event, now().Unix(), ms)
}

func (m *latencyMonitor) add(event string, at, ms int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	if n := len(ts.samples); n > 0 && ts.samples[n-1].at == at { // one sample a second: its worst
		ts.samples[n-1].ms = max(ts.samples[n-1].ms, ms)
		return
	}
	if len(ts.samples) == latencySamples {
		copy(ts.samples, ts.samples[1:])
		ts.samples = ts.samples[:latencySamples-1]
	}
	ts.samples = append(ts.samples, latencySample{at, ms})
}

// snapshot copies the events by name, in name order.
func (m *latencyMonitor) snapshot() (names []string, series map[string]latencySeries) {
	m.mu.Lock()
	defer m.mu.Unlock()
	series = map[string]latencySeries{}
	for n, ts := range m.events {
		names = append(names, n)
		series[n] = latencySeries{samples: append([]latencySample(nil), ts.samples...), max: ts.max}
	}
	sort.Strings(names)
	return names, series
}

// reset forgets the named events (all when none is named) and counts those it forgot.
func (m *latencyMonitor) reset(names [][]byte) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(0)
	if len(names) == 0 {
		n = int64(len(m.events))
		m.events = nil
		return n
	}
	for _, e := range names {
		if _, ok := m.events[string(e)]; ok {
			delete(m.events, string(e))
			n++
		}
	}
	return n
}

// latencyDoctor is Redis's answer while its latency monitor is disabled (latency-monitor-threshold 0).
const latencyDoctor = `I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.`

// latencyNoSpikes is Redis's DOCTOR while the monitor is on and has seen nothing.
const latencyNoSpikes = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"

// doctor writes Redis's report of each event's spikes (the count, average, mean deviation, period and worst),
// without Redis's advice.
func (m *latencyMonitor) doctor(now int64) string {
	if m.threshold.Load() <= 0 {
		return latencyDoctor
	}
	names, series := m.snapshot()
	if len(names) == 0 {
		return latencyNoSpikes
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	for i, n := range names {
		ts := series[n]
		var sum, dev int64
		for _, s := range ts.samples {
			sum += s.ms
		}
		count := int64(len(ts.samples))
		avg := sum / count
		for _, s := range ts.samples {
			dev += max(s.ms-avg, avg-s.ms)
		}
		// As Redis: the seconds since the oldest sample kept (at least 1), per sample.
		period := float64(max(now-ts.samples[0].at, 1)) / float64(count)
		b.WriteString(strconv.Itoa(i+1) + ". " + n + ": " + strconv.FormatInt(count, 10) + " latency spikes (average " +
			strconv.FormatInt(avg, 10) + "ms, mean deviation " + strconv.FormatInt(dev/count, 10) + "ms, period " +
			strconv.FormatFloat(period, 'f', 2, 64) + " sec). Worst all time event " + strconv.FormatInt(ts.max, 10) + "ms.\n")
	}
	return b.String()
}

// graphTitle is the first lines of Redis's LATENCY GRAPH of an event: its high and low in the history kept, and
// its worst since the last reset ("" for an event without samples).
func (m *latencyMonitor) graphTitle(event string) string {
	_, series := m.snapshot()
	ts, ok := series[event]
	if !ok || len(ts.samples) == 0 {
		return ""
	}
	hi, lo := ts.samples[0].ms, ts.samples[0].ms
	for _, s := range ts.samples {
		hi, lo = max(hi, s.ms), min(lo, s.ms)
	}
	return event + " - high " + strconv.FormatInt(hi, 10) + " ms, low " + strconv.FormatInt(lo, 10) +
		" ms (all time high " + strconv.FormatInt(ts.max, 10) + " ms)\n" + strings.Repeat("-", 80) + "\n"
}
