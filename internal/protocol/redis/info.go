package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/glob"
	"anykv/internal/protocol/resp"
)

func init() {
	register(
		&command{name: "command", arity: -1, imm: cmdCommand, summary: "Returns detailed information about all commands."},
		&command{name: "info", arity: -1, imm: cmdInfo, summary: "Returns information and statistics about the server."},
		&command{name: "config", arity: -2, flags: flagAdmin, imm: cmdConfig, summary: "A container for server configuration commands."},
		&command{name: "slowlog", arity: -2, flags: flagAdmin, imm: cmdSlowlog, since: "2.2.12", summary: "A container for slow log commands."},
		&command{name: "time", arity: 1, flags: flagFast, imm: cmdTime, summary: "Returns the server time."},
		&command{name: "debug", arity: -2, flags: flagAdmin, imm: cmdDebug, data: cmdDebugObject, immIf: notDebugObject,
			summary: "A container for debugging commands."},
	)
}

func cmdTime(s *session, args [][]byte) {
	now := s.h.store.Time()
	s.w.ArrayHeader(2)
	s.w.BulkString(strconv.FormatInt(now.Unix(), 10))
	s.w.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

func cmdDebug(s *session, args [][]byte) {
	if eq(args[1], "sleep") && len(args) == 3 {
		f, err := strconv.ParseFloat(string(args[2]), 64)
		if err != nil || f < 0 {
			s.w.Error("ERR value is not a valid float")
			return
		}
		time.Sleep(time.Duration(min(f, 60) * float64(time.Second)))
		s.w.SimpleString("OK")
		return
	}
	if eq(args[1], "error") && len(args) == 3 { // an error reply of the client's choosing (client tests use it)
		s.w.Error(string(args[2]))
		return
	}
	s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try DEBUG HELP.")
}

// notDebugObject: DEBUG runs on its own (cmdDebug) but for DEBUG OBJECT key, a read in the batch.
func notDebugObject(args [][]byte) bool { return len(args) != 3 || !eq(args[1], "object") }

// cmdDebugObject is DEBUG OBJECT key: Redis's line, its encoding as OBJECT ENCODING's, its serializedlength the
// length of the value's DUMP encoding (without its type and footer).
func cmdDebugObject(s *session, args [][]byte) {
	s.getAny(args[2])
	s.add(collections.Dump(s.table(), args[2]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		it, dumped := res[0], res[1]
		switch {
		case errors.Is(it.Err, engine.ErrNotFound):
			w.Error("ERR no such key")
		case it.Err != nil:
			w.Error(errText(it.Err))
		case dumped.Err != nil && !errors.Is(dumped.Err, collections.ErrDumpStream):
			w.Error(errText(dumped.Err))
		default:
			size := 0 // a stream, which DUMP does not encode
			if dumped.Err == nil {
				size = max(len(dumped.New.Value)-11, 0)
			}
			w.SimpleString("Value at:0x0 refcount:1 encoding:" + encodingOf(it.New) + " serializedlength:" +
				itoa(int64(size)) + " lru:0 lru_seconds_idle:0")
		}
	})
}

// maxmemoryPolicy is Redis's name for what anykv does when memory runs short: it evicts nothing.
const maxmemoryPolicy = "noeviction"

// settings returns the configuration CONFIG GET reports.
func (h *Handler) settings() map[string]string {
	m := map[string]string{
		"databases":        itoa(int64(h.opts.Databases)),
		"save":             "",
		"appendonly":       "no",
		"maxmemory":        "0",
		"maxmemory-policy": maxmemoryPolicy, // what INFO memory reports

		"slowlog-log-slower-than": itoa(h.slowlog.slowerThan.Load()),
		"slowlog-max-len":         itoa(h.slowlog.maxLen.Load()),
		"acllog-max-len":          h.acl.log.maxLenSetting(),

		"notify-keyspace-events": formatNotifyEvents(int(h.notifyFlags.Load())),
	}
	for k, v := range h.opts.Settings {
		m[k] = v
	}
	h.liveSettings(m)
	return m
}

func cmdConfig(s *session, args [][]byte) {
	switch sub := lower(args[1]); {
	case sub == "get" && len(args) >= 3:
		set := s.h.settings()
		var names []string
		for name := range set {
			for _, p := range args[2:] {
				if glob.Compile([]byte(strings.ToLower(string(p)))).Matches([]byte(name)) {
					names = append(names, name)
					break
				}
			}
		}
		sort.Strings(names)
		s.w.MapHeader(len(names))
		for _, n := range names {
			s.w.BulkString(n)
			s.w.BulkString(set[n])
		}
	case sub == "set" && len(args) >= 4 && len(args)%2 == 0:
		if msg := s.h.configSet(args[2:]); msg != "" {
			s.w.Error(msg)
			return
		}
		s.w.SimpleString("OK")
	case sub == "rewrite" && len(args) == 2:
		if msg := s.h.configRewrite(); msg != "" {
			s.w.Error(msg)
			return
		}
		s.w.SimpleString("OK")
	case sub == "resetstat" && len(args) == 2:
		s.h.resetStats()
		s.w.SimpleString("OK")
	case sub == "help" && len(args) == 2:
		helpTo(s.w, configHelp)
	default:
		s.subcommandError("config", args[1], "get", "set", "rewrite", "resetstat", "help")
	}
}

// infoSections lists INFO's sections in Redis's order; "default" and "all" select them all.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu",
	"modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

// infoHeaders are the section titles that are not the name capitalized.
var infoHeaders = map[string]string{"cpu": "CPU"}

func cmdInfo(s *session, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[lower(a)] = true
	}
	all := want["all"] || want["everything"]
	def := len(want) == 0 || want["default"]
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec] && !(def && sec != "commandstats" && sec != "latencystats") { // as in Redis, not default sections
			continue
		}
		kvps, err := s.h.infoSection(sec)
		if err != nil {
			s.w.Error(errText(err))
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := infoHeaders[sec]
		if title == "" {
			title = strings.ToUpper(sec[:1]) + sec[1:]
		}
		b.WriteString("# " + title + "\r\n")
		for _, kvp := range kvps {
			b.WriteString(kvp[0] + ":" + kvp[1] + "\r\n")
		}
	}
	s.w.Verbatim("txt", b.String())
}

// infoSection returns the fields of one INFO section; only the keyspace section reads the store, and fails
// when a read does.
func (h *Handler) infoSection(sec string) ([][2]string, error) {
	switch sec {
	case "keyspace":
		return h.keyspace()
	case "commandstats":
		return h.commandStatsSection(), nil
	case "errorstats":
		return h.errorStatsSection(), nil
	case "latencystats":
		return h.latencyStatsSection(), nil
	}
	return h.statSection(sec), nil
}

func (h *Handler) statSection(sec string) [][2]string {
	st := h.store.Stats()
	up := time.Since(h.started)
	switch sec {
	case "server":
		port := ""
		if a, ok := h.opts.Settings["port"]; ok {
			port = a
		}
		exe, _ := os.Executable()
		return [][2]string{
			{"redis_version", Version}, {"redis_mode", "standalone"}, {"anykv_version", h.opts.AnykvVersion},
			{"os", runtime.GOOS + " " + runtime.GOARCH}, {"arch_bits", "64"}, {"process_id", itoa(int64(os.Getpid()))},
			{"run_id", h.runID},
			{"tcp_port", port}, {"uptime_in_seconds", itoa(int64(up.Seconds()))},
			{"uptime_in_days", itoa(int64(up.Hours() / 24))}, {"executable", exe}, {"config_file", h.opts.ConfigFile},
		}
	case "clients":
		cur := int64(0)
		if c := h.conns.Load(); c != nil {
			cur = c.Current.Load()
		}
		return [][2]string{{"connected_clients", itoa(cur)}, {"maxclients", h.opts.Settings["maxclients"]},
			{"blocked_clients", itoa(h.waiters.clients.Load())}, {"tracking_clients", itoa(int64(h.track.n.Load()))}}
	case "memory":
		f := h.memFigures()
		// Redis's figures that dashboards show (asynq's RDB.RedisInfo, for one, reads used_memory_peak_perc),
		// printed as Redis prints them: percentages and ratios with two decimals.
		return [][2]string{{"used_memory", itoa(int64(f.heap))}, {"used_memory_human", human(f.heap)},
			{"used_memory_rss", itoa(int64(f.rss))}, {"used_memory_rss_human", human(f.rss)},
			{"used_memory_peak", itoa(int64(f.peak))}, {"used_memory_peak_human", human(f.peak)},
			{"used_memory_peak_perc", strconv.FormatFloat(100*ratio(f.heap, f.peak), 'f', 2, 64) + "%"},
			{"used_memory_startup", itoa(int64(f.startup))},
			{"used_memory_scripts_eval", itoa(f.lua)}, {"number_of_cached_scripts", itoa(int64(f.scripts))},
			{"maxmemory", "0"}, {"maxmemory_human", "0B"}, {"maxmemory_policy", maxmemoryPolicy},
			{"mem_fragmentation_ratio", strconv.FormatFloat(ratio(f.rss, f.heap), 'f', 2, 64)}}
	case "persistence":
		out := [][2]string{{"loading", "0"}, {"aof_enabled", h.settings()["appendonly"]},
			{"anykv_engine", h.opts.Settings["engine"]}, {"anykv_fsync", h.opts.Settings["fsync"]}}
		out = append(out, h.saveInfo()...)
		for _, k := range sortedKeys(st.Engine) {
			out = append(out, [2]string{"engine_" + k, itoa(st.Engine[k])})
		}
		return out
	case "stats":
		total, rejected := int64(0), h.stats.rejected.Load()
		if c := h.conns.Load(); c != nil {
			total, rejected = c.Total.Load(), c.Rejected.Load()
		}
		b := h.base()
		_, keys, items, prefixes := h.track.stats()
		return [][2]string{{"total_connections_received", itoa(total - b.connections)},
			{"total_commands_processed", itoa(h.stats.commands.Load())}, {"instantaneous_ops_per_sec", "0"},
			{"rejected_connections", itoa(rejected - b.rejected)}, {"expired_keys", itoa(st.ExpiredSwept - b.expired)},
			{"keyspace_hits", itoa(st.Hits - b.hits)}, {"keyspace_misses", itoa(st.Misses - b.misses)},
			{"migrate_cached_sockets", "0"},
			{"tracking_total_keys", itoa(int64(keys))}, {"tracking_total_items", itoa(int64(items))},
			{"tracking_total_prefixes", itoa(int64(prefixes))}, {"total_error_replies", itoa(h.errs.total.Load())},
			{"acl_access_denied_auth", itoa(h.acl.denied[0].Load())}, {"acl_access_denied_cmd", itoa(h.acl.denied[1].Load())},
			{"acl_access_denied_key", itoa(h.acl.denied[2].Load())}, {"acl_access_denied_channel", itoa(h.acl.denied[3].Load())}}
	case "cluster":
		return [][2]string{{"cluster_enabled", "0"}}
	case "replication": // a master without replicas, with Redis's fields (exporters and failover tools read them)
		return [][2]string{{"role", "master"}, {"connected_slaves", "0"}, {"master_failover_state", "no-failover"},
			{"master_replid", h.replID}, {"master_replid2", strings.Repeat("0", 40)}, {"master_repl_offset", "0"},
			{"second_repl_offset", "-1"}, {"repl_backlog_active", "0"}, {"repl_backlog_size", "1048576"},
			{"repl_backlog_first_byte_offset", "0"}, {"repl_backlog_histlen", "0"}}
	case "cpu":
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		sec := func(t syscall.Timeval) string {
			return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
		}
		return [][2]string{{"used_cpu_sys", sec(ru.Stime)}, {"used_cpu_user", sec(ru.Utime)}}
	}
	return nil
}

// keyspace counts the keys of each non-empty database, those with a time to live and their mean time left, in
// one scan each (O(keys), unlike Redis's O(1); the expiry counts cost nothing more). An engine that cannot scan
// shows no databases; a failed scan fails the section.
func (h *Handler) keyspace() ([][2]string, error) {
	var out [][2]string
	for db := 0; db < h.opts.Databases; db++ {
		c, err := h.store.Census(context.Background(), table(db))
		switch {
		case errors.Is(err, engine.ErrNotSupported):
			return nil, nil
		case err != nil:
			return nil, err
		case c.Keys > 0:
			out = append(out, [2]string{"db" + itoa(int64(db)),
				"keys=" + itoa(c.Keys) + ",expires=" + itoa(c.Expires) + ",avg_ttl=" + itoa(c.AvgTTL)})
		}
	}
	return out, nil
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + "G"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + "M"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 2, 64) + "K"
	}
	return strconv.FormatUint(n, 10) + "B"
}

// randomHex returns 2n hex digits from crypto/rand (INFO's run_id and master_replid).
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
