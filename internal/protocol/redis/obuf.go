package redis

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// client-output-buffer-limit, as Redis's: for each class of client, a hard limit of output bytes waiting to be
// written, past which the client is disconnected at once, and a soft limit past which it is disconnected once it
// has stayed over it longer than soft seconds. 0 is no limit. A normal client's output is what one run of its
// commands answers, before it is written (out); a subscriber's is its pusher's queue. Replicas have no output
// here: their class is kept for CONFIG GET and REWRITE only.

// obufLimit is one class's limits.
type obufLimit struct {
	hard, soft uint64
	softFor    time.Duration
}

// obufGrace is the output Redis keeps in a client's own reply buffer (PROTO_REPLY_CHUNK_BYTES), which its limits
// do not count (getClientOutputBufferMemoryUsage counts the reply list beyond it): so a limit of a few bytes does
// not close a client at its next +OK. Past it, all of the output counts: Redis's list then holds most of it, all
// of it for a reply whose length comes after its elements (KEYS: unit/obuf-limits closes one of 111 KB at 100 KB).
const obufGrace = 16 << 10

// obufCounted is what of n bytes of output counts against the limits.
func obufCounted(n int) uint64 {
	if n <= obufGrace {
		return 0
	}
	return uint64(n)
}

const (
	obufNormal = iota
	obufReplica
	obufPubSub
)

// obufLimits are the three classes' limits, in Redis's order.
type obufLimits [3]obufLimit

var obufClassNames = [3]string{"normal", "slave", "pubsub"}

// defaultObuf is Redis's default: normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60.
var defaultObuf = obufLimits{{}, {256 << 20, 64 << 20, 60 * time.Second}, {32 << 20, 8 << 20, 60 * time.Second}}

// String is the CONFIG GET form: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
func (l obufLimits) String() string {
	parts := make([]string, 0, 12)
	for i, c := range l {
		parts = append(parts, obufClassNames[i], strconv.FormatUint(c.hard, 10), strconv.FormatUint(c.soft, 10),
			itoa(int64(c.softFor/time.Second)))
	}
	return strings.Join(parts, " ")
}

// parseObuf reads CONFIG SET client-output-buffer-limit as Redis does: the value split at each space into
// groups of class, hard, soft and soft seconds (memtoull's and strtoll's text, truncated as Redis truncates
// them); the classes named change, the others keep cur's. All or nothing, with Redis's errors.
func parseObuf(v string, cur obufLimits) (obufLimits, error) {
	var args []string
	if v != "" {
		args = strings.Split(v, " ")
	}
	if len(args)%4 != 0 {
		return cur, configError("Wrong number of arguments in buffer limit configuration.")
	}
	out := cur
	for j := 0; j < len(args); j += 4 {
		class := -1
		switch strings.ToLower(args[j]) {
		case "normal":
			class = obufNormal
		case "slave", "replica":
			class = obufReplica
		case "pubsub":
			class = obufPubSub
		}
		if class < 0 {
			return cur, configError("Invalid client class specified in buffer limit configuration.")
		}
		hard, okHard := memtoull(args[j+1])
		soft, okSoft := memtoull(args[j+2])
		secs, okSecs := strtollInt(args[j+3])
		if !okHard || !okSoft || !okSecs || secs < 0 {
			return cur, configError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		out[class] = obufLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second}
	}
	return out, nil
}

// memtoull is Redis's: digits (none is 0; past 2^64-1 they stay at it, as strtoull), then a unit (b, k, kb, m, mb,
// g, gb, any case); the product wraps around 2^64 as C's does.
func memtoull(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mul, ok := memoryUnits[strings.ToLower(s[i:])]
	if !ok || i >= 128 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil && i > 0 {
		n = math.MaxUint64 // strtoull's ERANGE, which memtoull does not check
	}
	return n * mul, true
}

// strtollInt is Redis's soft seconds: strtoll's text (a sign, digits; none is 0), the whole field read, the value
// held at the long long's bounds and then cut to a C int's 32 bits.
func strtollInt(s string) (int32, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r") // strtoll skips leading white space
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || strings.Trim(digits, "0123456789") != "" || digits == "" && s != "" {
		return 0, false
	}
	if digits == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // out of range: strtoll's LLONG_MAX or LLONG_MIN
		n = math.MaxInt64
		if s[0] == '-' {
			n = math.MinInt64
		}
	}
	return int32(n), true
}

func init() {
	configSetters["client-output-buffer-limit"] = func(h *Handler, v string) (func(), error) {
		l, err := parseObuf(v, *h.obufNow())
		return func() { h.obuf.Store(&l) }, err
	}
	// A CONFIG SET names the classes it changes: what REWRITE writes is all three.
	configCanonical["client-output-buffer-limit"] = func(h *Handler) string { return h.obufNow().String() }
}

// obufNow returns the limits in force.
func (h *Handler) obufNow() *obufLimits {
	if l := h.obuf.Load(); l != nil {
		return l
	}
	return &defaultObuf
}

// softClock tracks how long a client's output has stayed at or over its class's soft limit, as Redis's
// obuf_soft_limit_reached_time: over reports whether output of n bytes is to disconnect the client now.
type softClock struct {
	since time.Time
	gen   int // bumped each time the output goes over the soft limit anew (a pusher's timer checks it)
}

func (c *softClock) over(l obufLimit, n int) bool {
	used := obufCounted(n)
	if l.hard > 0 && used >= l.hard {
		return true
	}
	if l.soft == 0 || used < l.soft {
		c.since = time.Time{}
		return false
	}
	t := time.Now()
	if c.since.IsZero() {
		c.since = t
		c.gen++
		return false
	}
	return t.Sub(c.since) > l.softFor
}

// errObufLimit ends a connection whose output passed its class's limit.
var errObufLimit = errors.New("client output buffer limit reached")

// obufCheck applies the normal class's limits l to the replies of the connection's current run of commands (what
// it read at once: a pipeline, an EXEC): those written out already (runOut: a run's replies go out a MiB at a
// time, so that a connection holds no more) and those waiting in s.w. At the hard limit the connection ends
// without the ones waiting, as Redis closes a client before it writes what passed the limit; past the soft limit
// the deadline by which out must have written them (Redis disconnects once the output stayed over the soft limit
// more than soft seconds, counted in whole seconds).
func (s *session) obufCheck(l obufLimit) (deadline time.Time, err error) {
	if s.obufClosed { // the rest of the run's batch, after the close: said once
		return deadline, errObufLimit
	}
	n := s.runOut + s.w.Len()
	used := obufCounted(n)
	if l.hard > 0 && used >= l.hard {
		s.obufClose("hard limit", "bytes", n, "hard", l.hard)
		return deadline, errObufLimit
	}
	if l.soft > 0 && used >= l.soft {
		deadline = time.Now().Add(l.softFor + time.Second)
	}
	return deadline, nil
}

// obufClose ends a normal client at its output limit, and says so.
func (s *session) obufClose(why string, attrs ...any) {
	s.h.log.Warn("client closed for overcoming of output buffer limits", append([]any{"client",
		s.conn.RemoteAddr().String(), "class", "normal", "why", why}, attrs...)...)
	s.obufClosed, s.closing = true, true
	s.conn.Close()
}
