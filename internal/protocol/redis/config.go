package redis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"anykv/internal/protocol/resp"
)

// configSetters are the parameters CONFIG SET changes while anykv runs; every other parameter CONFIG GET shows is
// fixed by a flag at start. A setter checks the value and returns how to apply it, or the reason Redis gives for
// refusing it. Each applied value is also kept in h.changed, for CONFIG GET and CONFIG REWRITE.
var configSetters = map[string]func(h *Handler, v string) (apply func(), err error){
	"notify-keyspace-events": func(h *Handler, v string) (func(), error) {
		f, err := ParseNotifyEvents(v)
		return func() { h.notifyFlags.Store(int32(f)) }, err
	},
	"requirepass": func(h *Handler, v string) (func(), error) {
		return func() { h.setRequirePass(v) }, nil // the default user's password; every protocol sharing the policy follows
	},
	"maxclients": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 1, math.MaxUint32, false)
		return func() {
			if h.opts.SetMaxClients != nil {
				h.opts.SetMaxClients(int(n))
			} else if c := h.conns.Load(); c != nil {
				c.Max.Store(n)
			}
		}, err
	},
	"maxmemory-clients": func(h *Handler, v string) (func(), error) {
		if strings.HasSuffix(v, "%") {
			return nil, configError("a share of maxmemory is not supported: anykv has no maxmemory; give bytes")
		}
		n, err := configInt(v, 0, math.MaxInt64, true)
		return func() { h.opts.Budget.SetLimit(n) }, err
	},
	"client-query-buffer-limit": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 1<<20, math.MaxInt64, true)
		return func() { h.setLimits(func(l *resp.Limits) { l.MaxQuery = int(min(n, math.MaxInt/4)) }) }, err
	},
	"proto-max-bulk-len": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 1<<20, math.MaxInt64, true)
		return func() { h.setLimits(func(l *resp.Limits) { l.MaxBulk = int(min(n, math.MaxInt/4)) }) }, err
	},
	"tracking-table-max-keys": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 0, math.MaxInt64, false)
		return func() { h.track.maxKeys.Store(n); h.trackTrim() }, err
	},
	"latency-monitor-threshold": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 0, math.MaxInt64, false)
		return func() { h.latency.threshold.Store(n) }, err
	},
	"timeout": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 0, math.MaxInt32, false)
		return func() { h.setIdleTimeout(n) }, err
	},
	"stream-node-max-entries": func(h *Handler, v string) (func(), error) {
		n, err := configInt(v, 0, math.MaxInt64, false)
		return func() { h.streamNode.Store(n) }, err
	},
	"busy-reply-threshold": setScriptLimit,
	"lua-time-limit":       setScriptLimit, // Redis 7's older name of the same setting
}

// configCanonical gives, for a setting whose CONFIG SET may name part of it, the whole value in force, which CONFIG
// REWRITE must write (the part alone would drop the rest at the next start).
var configCanonical = map[string]func(h *Handler) string{}

// setScriptLimit sets how long a script may run before it is stopped, in milliseconds (0: never stopped).
func setScriptLimit(h *Handler, v string) (func(), error) {
	n, err := configInt(v, 0, math.MaxInt64, false)
	return func() {
		luaTimeLimit.Store(int64(time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond))
	}, err
}

// configAliases map a parameter to the one it shares its value with.
var configAliases = map[string]string{"lua-time-limit": "busy-reply-threshold"}

// RuntimeSettings names the settings CONFIG SET changes, as CONFIG REWRITE writes them (aliases resolved): a
// config file must be able to set each, or a rewritten file would stop the next start.
func RuntimeSettings() []string {
	var out []string
	for name := range configSetters {
		if _, alias := configAliases[name]; !alias {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// configInt parses an integer setting within [lo, hi], with Redis's units (1k, 1kb, 1mb, 1gb) for memory values,
// and Redis's error texts.
func configInt(v string, lo, hi int64, memory bool) (int64, error) {
	var n int64
	var ok bool
	if memory {
		n, ok = ParseMemory(v)
	} else {
		var err error
		n, err = strconv.ParseInt(v, 10, 64)
		ok = err == nil
	}
	switch {
	case !ok && memory:
		return 0, configError("argument must be a memory value")
	case !ok:
		return 0, configError("argument couldn't be parsed into an integer")
	case n < lo || n > hi:
		return 0, configError("argument must be between " + itoa(lo) + " and " + strconv.FormatUint(uint64(hi), 10) + " inclusive")
	}
	return n, nil
}

// configBool reads a yes or no setting (any case), with Redis's error.
func configBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, configError("argument must be 'yes' or 'no'")
}

// ParseMemory reads a byte count as Redis's memtoull: digits, then optionally k, kb, m, mb, g or gb (k = 1000,
// kb = 1024), in any case.
func ParseMemory(v string) (int64, bool) {
	s := strings.ToLower(v)
	i := strings.LastIndexAny(s, "0123456789") + 1
	mul, ok := memoryUnits[s[i:]]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/int64(mul) {
		return 0, false
	}
	return n * int64(mul), true
}

// memoryUnits are Redis's memory units (lower case) and their bytes: k is 1000, kb 1024.
var memoryUnits = map[string]uint64{"": 1, "b": 1, "k": 1000, "kb": 1 << 10, "m": 1000 * 1000, "mb": 1 << 20,
	"g": 1000 * 1000 * 1000, "gb": 1 << 30}

// configSet applies CONFIG SET's name/value pairs: all of them, or none when one is refused (Redis 7 checks
// every pair before applying any). It returns the error reply, or "".
func (h *Handler) configSet(pairs [][]byte) string {
	known, seen := h.settings(), map[string]bool{}
	for i := 0; i < len(pairs); i += 2 {
		name := lower(pairs[i])
		if _, ok := known[name]; !ok {
			return "ERR Unknown option or number of arguments for CONFIG SET - '" + clip(pairs[i]) + "'"
		}
		if seen[name] {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter"
		}
		seen[name] = true
		if configSetters[name] == nil && !(fixedButSettable[name] && sameSetting(name, known[name], string(pairs[i+1]))) {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"
		}
	}
	var apply []func()
	for i := 0; i < len(pairs); i += 2 {
		name, v := lower(pairs[i]), string(pairs[i+1])
		if configSetters[name] == nil {
			continue // set to the value it has (fixedButSettable): nothing changes
		}
		fn, err := configSetters[name](h, v)
		if err != nil {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error()
		}
		apply = append(apply, fn, func() {
			if canon := configCanonical[name]; canon != nil {
				v = canon(h) // after fn applied it
			}
			h.noteChanged(name, v)
		})
	}
	for _, fn := range apply {
		fn()
	}
	return ""
}

// fixedButSettable are settings Redis changes at run time that anykv has fixed (maxmemory 0, noeviction, no RDB
// saves, the append-only file and its fsync as the engine and --fsync make them): a CONFIG SET to the value they
// have answers OK and changes nothing (test setups send CONFIG SET save "" and maxmemory 0), any other value is
// refused as immutable.
var fixedButSettable = map[string]bool{"maxmemory": true, "maxmemory-policy": true, "save": true, "appendonly": true,
	"appendfsync": true}

// sameSetting tells whether v names the value now of a fixedButSettable setting: a memory value by its bytes, a
// word in any case.
func sameSetting(name, now, v string) bool {
	if name == "maxmemory" {
		n, ok := ParseMemory(v)
		m, _ := ParseMemory(now)
		return ok && n == m
	}
	return strings.EqualFold(v, now)
}

// memorySettings are the settings given in bytes (with Redis's units); a config file gets them as plain numbers.
var memorySettings = map[string]bool{"maxmemory-clients": true, "client-query-buffer-limit": true, "proto-max-bulk-len": true}

// noteChanged records a value CONFIG SET applied, under the name and in the form a config file uses.
func (h *Handler) noteChanged(name, v string) {
	if a, ok := configAliases[name]; ok {
		name = a
	}
	if n, ok := ParseMemory(v); ok && memorySettings[name] {
		v = itoa(n)
	}
	h.cfgMu.Lock()
	if h.changed == nil {
		h.changed = map[string]string{}
	}
	h.changed[name] = v
	h.cfgMu.Unlock()
}

// changedSettings returns the values CONFIG SET applied since start, by name.
func (h *Handler) changedSettings() map[string]string {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	out := make(map[string]string, len(h.changed))
	for k, v := range h.changed {
		out[k] = v
	}
	return out
}

// configRewrite is CONFIG REWRITE: the config file is rewritten with the settings in force, by Options.Rewrite.
func (h *Handler) configRewrite() string {
	if h.opts.Rewrite == nil {
		return "ERR The server is running without a config file"
	}
	if err := h.opts.Rewrite(h.changedSettings()); err != nil {
		h.log.Warn("CONFIG REWRITE failed", "err", err)
		return "ERR Rewriting config file: " + err.Error()
	}
	return ""
}

// liveSettings are the values of the run-time settings as they are now, for CONFIG GET.
func (h *Handler) liveSettings(m map[string]string) {
	l := h.limits.Load()
	m["proto-max-bulk-len"] = itoa(int64(l.MaxBulk))
	m["client-query-buffer-limit"] = itoa(int64(l.MaxQuery))
	m["requirepass"] = h.opts.Auth.Password()
	m["maxmemory-clients"] = itoa(h.opts.Budget.Limit())
	ms := itoa(luaTimeLimit.Load() / int64(time.Millisecond))
	m["busy-reply-threshold"], m["lua-time-limit"] = ms, ms
	m["tracking-table-max-keys"] = itoa(h.track.maxKeys.Load())
	m["timeout"] = itoa(h.idleTimeout.Load())
	m["latency-monitor-threshold"] = itoa(h.latency.threshold.Load())
	m["stream-node-max-entries"] = itoa(h.streamNode.Load())
	m["client-output-buffer-limit"] = h.obufNow().String()
	m["latency-tracking"] = map[bool]string{false: "yes", true: "no"}[h.tracking.off.Load()]
	ps := make([]string, 0, 3)
	for _, p := range h.tracking.shown() {
		ps = append(ps, formatPercentile(p))
	}
	m["latency-tracking-info-percentiles"] = strings.Join(ps, " ")
	if c := h.conns.Load(); c != nil && c.Max.Load() > 0 {
		m["maxclients"] = itoa(c.Max.Load())
	}
}

// setLimits changes the request limits of every connection (each takes them before its next read).
func (h *Handler) setLimits(change func(l *resp.Limits)) {
	h.cfgMu.Lock()
	l := *h.limits.Load()
	change(&l)
	h.limits.Store(&l)
	h.cfgMu.Unlock()
}

// CheckStartSettings checks Options.Start: the run-time settings that have no Options field of their own (slowlog-log-slower-than,
// slowlog-max-len, busy-reply-threshold), set at start as CONFIG SET sets them.
func CheckStartSettings(m map[string]string) error {
	for name, v := range m {
		set := configSetters[name]
		if set == nil {
			return configError("unknown run-time setting " + name)
		}
		if _, err := set(&Handler{}, v); err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
	}
	return nil
}

// applyStart applies Options.Start (checked by CheckStartSettings) without counting them as changes.
func (h *Handler) applyStart() {
	for name, v := range h.opts.Start {
		if apply, err := configSetters[name](h, v); err == nil {
			apply()
		} else {
			h.log.Warn("ignoring a bad start setting", "name", name, "err", err)
		}
	}
}
