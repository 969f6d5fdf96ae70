package redis

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Command and error statistics, as Redis's INFO commandstats and errorstats report them, and the slow log's
// feed. Every command's outcome passes through session.account once its reply is written.

// cmdStats are one command's counters: calls that ran (and their time), calls refused before running (wrong
// arity, NOAUTH, ...), and calls that ran and answered an error; and the latency histogram of the calls that ran
// while latency tracking was on (latencyhist.go), made at the first.
type cmdStats struct {
	calls, usec, rejected, failed atomic.Int64
	hist                          atomic.Pointer[latencyHist]
}

// histogram returns the command's latency histogram, made if it has none yet.
func (st *cmdStats) histogram() *latencyHist {
	if h := st.hist.Load(); h != nil {
		return h
	}
	st.hist.CompareAndSwap(nil, new(latencyHist))
	return st.hist.Load()
}

// maxErrorKinds bounds the distinct error prefixes counted, as Redis does (beyond it Redis stops tracking new
// ones; so does anykv, counting them only in the total).
const maxErrorKinds = 128

// errorStats counts error replies by their first word (ERR, WRONGTYPE, NOAUTH, ...).
type errorStats struct {
	total atomic.Int64
	mu    sync.Mutex
	kinds map[string]int64
}

// add counts one error reply of kind, and reports whether the kind is tracked (one of the first 128).
func (e *errorStats) add(kind string) bool {
	e.total.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kinds == nil {
		e.kinds = map[string]int64{}
	}
	if _, ok := e.kinds[kind]; ok || len(e.kinds) < maxErrorKinds {
		e.kinds[kind]++
		return true
	}
	return false
}

// reset forgets every count (CONFIG RESETSTAT).
func (e *errorStats) reset() {
	e.total.Store(0)
	e.mu.Lock()
	e.kinds = nil
	e.mu.Unlock()
}

// statNames names the statistics slots: a command's id is its slot, and Redis's subcommands of the containers
// (config|get, xgroup|create, ...) follow, as INFO commandstats counts them apart (statSlots).
var (
	statOnce  sync.Once
	statNames []string
)

// statSlots numbers the slots once every file registered its commands, and returns their names.
func statSlots() []string {
	statOnce.Do(func() {
		t := aclTable() // Redis's subcommands, and anykv's own (CLIENT NO-TOUCH, ...)
		statNames = make([]string, commandIDs)
		for _, c := range sortedCommands() {
			statNames[c.id] = c.name
			id, ok := t.ids[c.name]
			if !ok || len(t.cmds[id].subs) == 0 {
				continue
			}
			c.subStats = map[string]int{}
			for _, sid := range t.cmds[id].subs {
				_, sub, _ := strings.Cut(t.cmds[sid].name, "|")
				c.subStats[sub] = len(statNames)
				statNames = append(statNames, t.cmds[sid].name)
			}
		}
	})
	return statNames
}

// sortedSlots are the statistics slots in name order, as INFO lists them.
func sortedSlots() []int {
	slotOrder.Do(func() {
		names := statSlots()
		slotsByName = make([]int, len(names))
		for i := range slotsByName {
			slotsByName[i] = i
		}
		sort.Slice(slotsByName, func(i, j int) bool { return names[slotsByName[i]] < names[slotsByName[j]] })
	})
	return slotsByName
}

var (
	slotOrder   sync.Once
	slotsByName []int
)

// statSlot is the slot a call of cmd counts in: its subcommand's, for a container; ok is false for a container's
// subcommand Redis does not know, which Redis counts in errorstats only.
func statSlot(cmd *command, args [][]byte) (slot int, ok bool) {
	if cmd.subStats == nil || len(args) < 2 {
		return cmd.id, true
	}
	if len(args[1]) <= 32 {
		slot, ok = cmd.subStats[lower(args[1])]
	}
	return slot, ok
}

// onError is the reply writer's OnError: it counts the error in INFO errorstats and in the metrics.
func (h *Handler) onError(msg string) {
	kind, _, _ := strings.Cut(msg, " ")
	if h.errs.add(kind) {
		h.opts.Metrics.ErrorReply("resp", kind) // the same bound keeps the metric's series few
	}
}

// scriptStat counts a command a script called (keyEvent.stat) in INFO commandstats, and its error reply in
// errorstats.
func (h *Handler) scriptStat(e keyEvent) {
	if e.cmd != nil && e.slotOK {
		st := &h.cmdStats[e.slot]
		switch {
		case e.rejected:
			st.rejected.Add(1)
		case e.errReply != "":
			st.calls.Add(1)
			st.failed.Add(1)
		default:
			st.calls.Add(1)
		}
	}
	if e.errReply != "" {
		h.onError(e.errReply)
	}
}

// account records one command's outcome once its reply is written: its statistics, the slow log when it took
// long, and the monitors' feed. rejected marks a command refused before it ran; failed one that answered an error.
func (s *session) account(cmd *command, args [][]byte, took time.Duration, rejected, failed bool) {
	if cmd == nil {
		return
	}
	slot, ok := statSlot(cmd, args)
	if rejected {
		if ok {
			s.h.cmdStats[slot].rejected.Add(1)
		}
		return
	}
	// The time a blocking command waited for data (BLPOP, XREAD BLOCK) is not its own: Redis leaves it out of
	// commandstats, the slow log and the latency figures alike, timing the command's execution alone.
	took = max(took-s.waited, 0)
	s.waited = 0
	if ok {
		s.counted.add(&s.h.cmdStats[slot], took, failed)
		if !s.h.tracking.off.Load() {
			s.counted.time(took)
		}
	}
	s.h.slowlog.offer(s, cmd, args, took)
	s.h.latency.offer(s.h.store.Time, cmd, took)
	if s.h.monitors.n.Load() > 0 { // the only cost of MONITOR while nobody monitors
		s.feedMonitors(cmd, args)
	}
	s.scriptShown = nil
}

// counted gathers the statistics of consecutive replies of one command, added to its shared counters at once
// (when another command's reply comes, and before a batch's replies are written): three atomic additions per
// reply on counters every connection shares were 1.4% of a GET pipeline's CPU, and contended with more cores.
// A pipeline's replies, answered together, mostly took as long: their latencies are gathered as one too.
type counted struct {
	st                *cmdStats
	calls, usec, fail int64
	took              time.Duration // the latency of the last timed calls, timed of them
	timed             int64
}

func (c *counted) add(st *cmdStats, took time.Duration, failed bool) {
	if c.st != st {
		c.flush()
		c.st = st
	}
	c.calls++
	c.usec += took.Microseconds()
	if failed {
		c.fail++
	}
}

// time adds the latency of the call add counted last to its histogram.
func (c *counted) time(took time.Duration) {
	if c.timed > 0 && took != c.took {
		c.st.histogram().record(c.took, c.timed)
		c.timed = 0
	}
	c.took = took
	c.timed++
}

// flush adds what was gathered to the shared counters.
func (c *counted) flush() {
	if c.st == nil {
		return
	}
	c.st.calls.Add(c.calls)
	c.st.usec.Add(c.usec)
	if c.fail > 0 {
		c.st.failed.Add(c.fail)
	}
	if c.timed > 0 {
		c.st.histogram().record(c.took, c.timed)
	}
	*c = counted{}
}

// commandStatsSection is INFO commandstats: one line per command or subcommand called at least once, in name
// order.
func (h *Handler) commandStatsSection() [][2]string {
	names := statSlots()
	var out [][2]string
	for _, slot := range sortedSlots() {
		st := &h.cmdStats[slot]
		calls, usec, rej, failed := st.calls.Load(), st.usec.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rej == 0 {
			continue
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		out = append(out, [2]string{"cmdstat_" + names[slot], "calls=" + itoa(calls) + ",usec=" + itoa(usec) +
			",usec_per_call=" + strconv.FormatFloat(per, 'f', 2, 64) + ",rejected_calls=" + itoa(rej) +
			",failed_calls=" + itoa(failed)})
	}
	return out
}

// errorStatsSection is INFO errorstats: one line per error prefix seen, in name order.
func (h *Handler) errorStatsSection() [][2]string {
	h.errs.mu.Lock()
	defer h.errs.mu.Unlock()
	kinds := make([]string, 0, len(h.errs.kinds))
	for k := range h.errs.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	out := make([][2]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, [2]string{"errorstat_" + k, "count=" + itoa(h.errs.kinds[k])})
	}
	return out
}

// statsBase is what INFO stats subtracts from counters it does not own (Handler.stats.since).
type statsBase struct {
	connections, rejected, hits, misses, expired int64
}

// base returns the counters' values at the last CONFIG RESETSTAT (zero before any).
func (h *Handler) base() statsBase {
	if b := h.stats.since.Load(); b != nil {
		return *b
	}
	return statsBase{}
}

// resetStats zeroes the command and error statistics, INFO stats' counters and the slow log's counters (CONFIG
// RESETSTAT), as Redis does: a client measuring from a reset read the counts since the server started.
func (h *Handler) resetStats() {
	st := h.store.Stats()
	b := statsBase{rejected: h.stats.rejected.Load(), hits: st.Hits, misses: st.Misses, expired: st.ExpiredSwept}
	if c := h.conns.Load(); c != nil {
		b.connections, b.rejected = c.Total.Load(), c.Rejected.Load()
	}
	h.stats.since.Store(&b)
	h.stats.commands.Store(0)
	for i := range h.acl.denied {
		h.acl.denied[i].Store(0)
	}
	for i := range h.cmdStats {
		st := &h.cmdStats[i]
		st.calls.Store(0)
		st.usec.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
		st.hist.Store(nil)
	}
	h.errs.reset()
}
