package redis

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"

	"anykv/internal/engine"
	"anykv/internal/gctune"
	"anykv/internal/protocol/resp"
)

// MEMORY STATS, DOCTOR, MALLOC-STATS, PURGE and HELP (USAGE is in bits.go). anykv keeps its data in the engine,
// not in its heap, so the figures are the Go heap's under Redis's names: what the process holds for requests,
// caches and scripts, beside the keys it serves.

// memoryCommand compiles MEMORY: USAGE reads the key in the batch, the others answer from the process when
// their turn comes, so they keep their place in a pipeline or a transaction.
func cmdMemory(s *session, args [][]byte) {
	sub := lower(args[1])
	var fn func(s *session, w *resp.Writer)
	switch {
	case sub == "usage" && len(args) >= 3:
		memoryUsage(s, args)
		return
	case sub == "stats" && len(args) == 2:
		fn = memoryStats
	case sub == "doctor" && len(args) == 2:
		fn = func(s *session, w *resp.Writer) { w.Verbatim("txt", s.h.memoryDoctor()) }
	case sub == "malloc-stats" && len(args) == 2:
		fn = func(s *session, w *resp.Writer) { w.Verbatim("txt", mallocStats()) }
	case sub == "purge" && len(args) == 2:
		fn = func(s *session, w *resp.Writer) {
			debug.FreeOSMemory() // collect, and return the freed pages to the OS as jemalloc's purge does
			w.SimpleString("OK")
		}
	case sub == "help" && len(args) == 2:
		fn = func(s *session, w *resp.Writer) {
			helpTo(w, memoryHelp)
		}
	case sub == "usage" || sub == "stats" || sub == "doctor" || sub == "malloc-stats" || sub == "purge" || sub == "help":
		s.fail("ERR wrong number of arguments for 'memory|" + sub + "' command")
		return
	default:
		s.fail("ERR unknown subcommand '" + clip(args[1]) + "'. Try MEMORY HELP.")
		return
	}
	s.plan(func(w *resp.Writer, _ []engine.Result) { fn(s, w) })
}

// memoryHelp is Redis 7's MEMORY HELP.
var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

// memFigures are the process's memory figures behind MEMORY STATS, DOCTOR and INFO memory.
type memFigures struct {
	heap, peak, startup, inuse, heapResident, rss uint64
	clients, lua                                  int64
	scripts                                       int // the scripts cached (EVAL's and SCRIPT LOAD's), whose source is lua bytes
}

// memPeak is the largest heap seen by any reading of the figures (Redis samples its peak the same way).
var memPeak atomic.Uint64

func (h *Handler) memFigures() memFigures {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b := gctune.Held() // the collector's ballast: counted in use by the runtime, never touched, not the data's
	f := memFigures{heap: ms.HeapAlloc - b, startup: h.startupHeap, inuse: ms.HeapInuse - b,
		heapResident: ms.HeapSys - ms.HeapReleased - b, rss: residentBytes(ms.Sys)}
	for {
		p := memPeak.Load()
		if f.heap <= p || memPeak.CompareAndSwap(p, f.heap) {
			f.peak = max(p, f.heap)
			break
		}
	}
	if h.opts.Budget != nil {
		f.clients = h.opts.Budget.Used()
	}
	h.scripts.mu.Lock()
	for _, src := range h.scripts.m {
		f.lua += int64(len(src))
	}
	f.scripts = len(h.scripts.m)
	h.scripts.mu.Unlock()
	return f
}

// residentBytes is the process's resident set size from /proc (Linux), or fallback elsewhere.
func residentBytes(fallback uint64) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return fallback
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * uint64(os.Getpagesize())
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// memoryStats answers MEMORY STATS with Redis's field names: a map in RESP3, a flat name/value array in RESP2.
func memoryStats(s *session, w *resp.Writer) {
	f := s.h.memFigures()
	keys := int64(0)
	for db := 0; db < s.h.opts.Databases; db++ {
		c, err := s.h.store.Census(context.Background(), table(db))
		if errors.Is(err, engine.ErrNotSupported) {
			break
		}
		if err != nil {
			w.Error(errText(err))
			return
		}
		keys += c.Keys
	}
	overhead := f.startup + uint64(f.clients) + uint64(f.lua)
	dataset := uint64(0)
	if f.heap > overhead {
		dataset = f.heap - overhead
	}
	perKey := int64(0)
	if keys > 0 && f.heap > f.startup {
		perKey = int64(f.heap-f.startup) / keys
	}
	type field struct {
		name string
		n    int64
		f    float64
		dbl  bool
	}
	fields := []field{
		{name: "peak.allocated", n: int64(f.peak)},
		{name: "total.allocated", n: int64(f.heap)},
		{name: "startup.allocated", n: int64(f.startup)},
		{name: "clients.normal", n: f.clients},
		{name: "lua.caches", n: f.lua},
		{name: "overhead.total", n: int64(overhead)},
		{name: "keys.count", n: keys},
		{name: "keys.bytes-per-key", n: perKey},
		{name: "dataset.bytes", n: int64(dataset)},
		{name: "dataset.percentage", f: 100 * ratio(dataset, f.heap-min(f.heap, f.startup)), dbl: true},
		{name: "peak.percentage", f: 100 * ratio(f.heap, f.peak), dbl: true},
		{name: "allocator.allocated", n: int64(f.heap)},
		{name: "allocator.active", n: int64(f.inuse)},
		{name: "allocator.resident", n: int64(f.heapResident)},
		{name: "allocator-fragmentation.ratio", f: ratio(f.inuse, f.heap), dbl: true},
		{name: "allocator-fragmentation.bytes", n: int64(f.inuse) - int64(f.heap)},
		{name: "allocator-rss.ratio", f: ratio(f.heapResident, f.inuse), dbl: true},
		{name: "allocator-rss.bytes", n: int64(f.heapResident) - int64(f.inuse)},
		{name: "rss-overhead.ratio", f: ratio(f.rss, f.heapResident), dbl: true},
		{name: "rss-overhead.bytes", n: int64(f.rss) - int64(f.heapResident)},
		{name: "fragmentation", f: ratio(f.rss, f.heap), dbl: true},
		{name: "fragmentation.bytes", n: int64(f.rss) - int64(f.heap)},
	}
	w.MapHeader(len(fields))
	for _, fl := range fields {
		w.BulkString(fl.name)
		if fl.dbl {
			w.Double(fl.f)
		} else {
			w.Int(fl.n)
		}
	}
}

// Redis's MEMORY DOCTOR texts that anykv's checks share.
const (
	doctorEmpty = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in " +
		"these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will " +
		"be back to our programming as soon as I finished rebooting."
	doctorFine = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
)

// memoryDoctor reports memory problems as Redis's MEMORY DOCTOR does, with the checks that apply to anykv: a past
// peak far above today's heap, request buffers near --maxmemory-clients, and Go's heap far from its RSS.
func (h *Handler) memoryDoctor() string {
	f := h.memFigures()
	if f.heap < 5<<20 {
		return doctorEmpty
	}
	var issues []string
	if float64(f.peak) > 1.5*float64(f.heap) {
		issues = append(issues, " * Peak memory: In the past this instance used more than 150% the memory that is "+
			"currently using ("+human(f.peak)+" against "+human(f.heap)+"). Go's collector returns freed pages to the "+
			"system over a few minutes; MEMORY PURGE returns them now.")
	}
	if h.opts.Budget != nil && h.opts.Budget.Limit() > 0 && f.clients > h.opts.Budget.Limit()/2 {
		issues = append(issues, " * Big client buffers: the request buffers of all clients hold "+human(uint64(f.clients))+
			", more than half of maxmemory-clients; the largest clients are closed when it is reached. Look for "+
			"clients sending very large values or partial requests (CLIENT LIST qbuf, rbs).")
	}
	if f.rss > 3*f.heap {
		issues = append(issues, " * High total RSS: the process's resident set ("+human(f.rss)+") is more than three "+
			"times its Go heap ("+human(f.heap)+"); the rest is the engine's memory outside the heap (block cache, "+
			"memtables) and pages the runtime has not yet returned. --cache-size bounds the block cache.")
	}
	if len(issues) == 0 {
		return doctorFine
	}
	return "Sam, I detected a few issues in this anykv instance memory implants:\n\n" + strings.Join(issues, "\n\n") +
		"\n\nI'm here to keep you safe, Sam. I want to help you.\n"
}

// mallocStats is MEMORY MALLOC-STATS: Go's allocator figures, as jemalloc's report stands in Redis, as the runtime
// counts them (the ballast of internal/gctune included, and listed).
func mallocStats() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var b strings.Builder
	b.WriteString("___ Begin Go runtime memory statistics ___\n")
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"HeapAlloc", ms.HeapAlloc}, {"HeapInuse", ms.HeapInuse}, {"HeapIdle", ms.HeapIdle},
		{"HeapReleased", ms.HeapReleased}, {"HeapSys", ms.HeapSys}, {"HeapObjects", ms.HeapObjects},
		{"StackInuse", ms.StackInuse}, {"StackSys", ms.StackSys}, {"MSpanInuse", ms.MSpanInuse},
		{"MCacheInuse", ms.MCacheInuse}, {"GCSys", ms.GCSys}, {"OtherSys", ms.OtherSys}, {"Sys", ms.Sys},
		{"TotalAlloc", ms.TotalAlloc}, {"Mallocs", ms.Mallocs}, {"Frees", ms.Frees}, {"NumGC", uint64(ms.NumGC)},
		{"NextGC", ms.NextGC}, {"Ballast", gctune.Held()}, // the collector's ballast, within HeapAlloc and HeapInuse
	} {
		b.WriteString(f.name + ": " + strconv.FormatUint(f.v, 10) + "\n")
	}
	b.WriteString("--- End Go runtime memory statistics ---\n")
	return b.String()
}
