package memcache

import (
	"bytes"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// stat names one counter of the stats command.
type stat int

// The counters, named as memcached's stats report them.
const (
	sCmdGet stat = iota
	sCmdSet
	sCmdFlush
	sCmdTouch
	sCmdMeta
	sGetHits
	sGetMisses
	sDeleteHits
	sDeleteMisses
	sIncrHits
	sIncrMisses
	sDecrHits
	sDecrMisses
	sCasHits
	sCasMisses
	sCasBadval
	sTouchHits
	sTouchMisses
	sTotalItems
	sStoreTooLarge
	sServerErrors
	sBatches
	sBytesRead
	sBytesWritten
	sAuthCmds
	sAuthErrors
	nStats
)

var statNames = [nStats]string{
	"cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta", "get_hits", "get_misses", "delete_hits",
	"delete_misses", "incr_hits", "incr_misses", "decr_hits", "decr_misses", "cas_hits", "cas_misses",
	"cas_badval", "touch_hits", "touch_misses", "total_items", "store_too_large", "server_errors",
	"write_batches", "bytes_read", "bytes_written", "auth_cmds", "auth_errors",
}

// localCounters are one connection's counts since it last published them; plain integers, so counting costs
// nothing on the request path.
type localCounters [nStats]int64

// counters are the handler's totals. A connection adds its local counts once per read round, which keeps
// shared cache lines out of the per-request path. This is also where a metrics hook would read from: the
// lead's metrics exporter can take a snapshot of counters the way statsCmd does.
type counters [nStats]atomic.Int64

func (h *counters) add(l *localCounters) {
	for i, v := range l {
		if v != 0 {
			h[i].Add(v)
			l[i] = 0
		}
	}
}

func (h *counters) snapshot() (s localCounters) {
	for i := range h {
		s[i] = h[i].Load()
	}
	return s
}

func (h *counters) reset() {
	for i := range h {
		h[i].Store(0)
	}
}

// statsCmd answers stats, stats settings, stats reset and the memcached forms that have nothing to report
// here (items, slabs, sizes, conns: an empty list).
func (c *conn) statsCmd(req *request) {
	if req.nargs == 0 {
		c.generalStats()
		return
	}
	switch string(req.sub) {
	case "settings":
		c.settingsStats()
	case "reset":
		c.h.stats.reset()
		c.line("RESET")
	case "detail":
		c.line("CLIENT_ERROR usage: stats detail on|off|dump")
	case "items", "slabs", "sizes", "conns":
		c.line("END")
	case "cachedump":
		c.cachedump(req.keys)
	default:
		c.line("ERROR")
	}
}

func (c *conn) stat(name string, v int64) {
	c.out = append(c.out, "STAT "...)
	c.out = append(c.out, name...)
	c.out = append(c.out, ' ')
	c.out = strconv.AppendInt(c.out, v, 10)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) statString(name, v string) {
	c.line("STAT " + name + " " + v)
}

func (c *conn) generalStats() {
	h := c.h
	now := h.store.Time()
	s := h.stats.snapshot()
	c.stat("pid", int64(os.Getpid()))
	c.stat("uptime", int64(now.Sub(h.started).Seconds()))
	c.stat("time", now.Unix())
	c.statString("version", h.version)
	c.stat("pointer_size", 64)
	user, sys := rusage()
	c.statString("rusage_user", user)
	c.statString("rusage_system", sys)
	var cur, total, rejected int64
	if cc := h.conns.Load(); cc != nil {
		cur, total, rejected = cc.Current.Load(), cc.Total.Load(), cc.Rejected.Load()
	}
	c.stat("curr_connections", cur)
	c.stat("total_connections", total)
	c.stat("rejected_connections", rejected)
	for _, i := range []stat{sCmdGet, sCmdSet, sCmdFlush, sCmdTouch, sCmdMeta, sGetHits, sGetMisses} {
		c.stat(statNames[i], s[i])
	}
	c.stat("get_expired", 0) // the engine does not tell an expired item from a missing one
	c.stat("get_flushed", 0)
	for _, i := range []stat{sDeleteMisses, sDeleteHits, sIncrMisses, sIncrHits, sDecrMisses, sDecrHits,
		sCasMisses, sCasHits, sCasBadval, sTouchHits, sTouchMisses, sStoreTooLarge} {
		c.stat(statNames[i], s[i])
	}
	c.stat("store_no_memory", 0)
	c.stat("auth_cmds", s[sAuthCmds])
	c.stat("auth_errors", s[sAuthErrors])
	c.stat("bytes_read", s[sBytesRead])
	c.stat("bytes_written", s[sBytesWritten])
	c.stat("limit_maxbytes", 0) // no memory limit: anykv keeps every item until it expires or is deleted
	c.stat("accepting_conns", 1)
	c.stat("threads", int64(threads()))
	es := h.store.Stats().Engine
	c.stat("bytes", firstOf(es, "bytes", "live_bytes", "disk_bytes"))
	c.stat("curr_items", firstOf(es, "keys", "keys_estimate"))
	c.stat("total_items", s[sTotalItems])
	c.stat("evictions", 0)
	c.stat("reclaimed", 0)
	c.stat("server_errors", s[sServerErrors])
	c.stat("write_batches", s[sBatches])
	names := make([]string, 0, len(es))
	for k := range es {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		c.stat("engine_"+k, es[k])
	}
	c.line("END")
}

func firstOf(m map[string]int64, names ...string) int64 {
	for _, n := range names {
		if v, ok := m[n]; ok {
			return v
		}
	}
	return 0
}

func (c *conn) settingsStats() {
	h := c.h
	port := "0"
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port)
	}
	c.stat("maxbytes", 0)
	c.statString("tcpport", port)
	c.stat("udpport", 0)
	c.stat("verbosity", int64(h.verbosity.Load()))
	c.stat("oldest", 0)
	c.statString("evictions", "off")
	c.statString("cas_enabled", "yes")
	c.stat("item_size_max", int64(h.maxItem))
	c.stat("num_threads", int64(threads()))
	c.statString("binding_protocol", "auto-negotiate")
	auth := "no"
	if h.auth.Required() {
		auth = "yes"
	}
	c.statString("auth_enabled_sasl", auth)
	c.statString("auth_enabled_ascii", auth)
	c.statString("detail_enabled", "no")
	c.statString("flush_enabled", "yes")
	c.stat("idle_timeout", 0)
	c.statString("table", strings.ReplaceAll(h.table, " ", "_"))
	c.line("END")
}

// Limits of stats cachedump, as memcached has them.
const (
	slabClasses    = 64      // MAX_NUMBER_OF_SLAB_CLASSES: a higher class id is illegal
	cachedumpMax   = 2 << 20 // bytes of a dump without a limit
	cachedumpPage  = 128     // items read per scan page
	cachedumpClass = 1       // the class anykv reports every item in
)

// cachedump answers `stats cachedump <class> <limit>`, which memcdump uses to list keys: anykv has no slab
// classes, so class 1 lists the table's items (`ITEM <key> [<bytes> b; <unix expiry or 0> s]`, in key order,
// at most limit of them, or 2 MiB of lines when limit is 0) and the other classes are empty. Collections of the
// Redis protocol are not memcached items, and keys the text protocol cannot name (spaces, control characters)
// would break the line format: both are left out.
func (c *conn) cachedump(args []byte) {
	class, rest := nextToken(args)
	limitTok, _ := nextToken(rest)
	if len(limitTok) == 0 {
		c.line("CLIENT_ERROR bad command line")
		return
	}
	id, ok1 := parseUint(class, 32)
	limit, ok2 := parseUint(limitTok, 32)
	switch {
	case !ok1 || !ok2:
		c.line("CLIENT_ERROR bad command line format")
		return
	case id >= slabClasses:
		c.line("CLIENT_ERROR Illegal slab id")
		return
	case id != cachedumpClass:
		c.line("END")
		return
	}
	start, n := len(c.out), uint64(0)
	q := kv.Query{Limit: cachedumpPage, KeysOnly: true}
	for {
		page, err := c.h.store.Scan(c.ctx, c.h.table, q)
		if err != nil {
			c.out = c.out[:start]
			c.line(c.serverError(err))
			return
		}
		for _, e := range page.Entries {
			if e.Item.Kind != engine.KindString || !c.p.validKey(e.Key) || bytes.IndexByte(e.Key, ' ') >= 0 {
				continue
			}
			if (limit > 0 && n == limit) || (limit == 0 && len(c.out)-start > cachedumpMax) {
				c.line("END")
				return
			}
			n++
			c.out = append(c.out, "ITEM "...)
			c.out = append(c.out, e.Key...)
			c.out = append(c.out, " ["...)
			c.out = strconv.AppendInt(c.out, int64(e.Size), 10)
			c.out = append(c.out, " b; "...)
			c.out = strconv.AppendInt(c.out, (e.Item.Expires+999)/1000, 10)
			c.out = append(c.out, " s]\r\n"...)
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	c.line("END")
}
