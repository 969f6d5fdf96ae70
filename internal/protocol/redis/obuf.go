package redis

import (
	"errors"
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
	hard, soft int64
	softFor    time.Duration
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
		parts = append(parts, obufClassNames[i], itoa(c.hard), itoa(c.soft), itoa(int64(c.softFor/time.Second)))
	}
	return strings.Join(parts, " ")
}

// parseObuf reads CONFIG SET client-output-buffer-limit as Redis does: the value split at each space into
// groups of class, hard, soft and soft seconds, the limits in Redis's memory units; the classes named change, the
// others keep cur's. All or nothing, with Redis's errors.
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
		hard, okHard := ParseMemory(args[j+1])
		soft, okSoft := ParseMemory(args[j+2])
		secs, err := strconv.ParseInt(strings.TrimPrefix(args[j+3], "+"), 10, 32)
		if !okHard || !okSoft || err != nil && args[j+3] != "" || secs < 0 {
			return cur, configError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		out[class] = obufLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second}
	}
	return out, nil
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

func (c *softClock) over(l obufLimit, n int64, now func() time.Time) bool {
	if l.hard > 0 && n >= l.hard {
		return true
	}
	if l.soft == 0 || n < l.soft {
		c.since = time.Time{}
		return false
	}
	t := now()
	if c.since.IsZero() {
		c.since = t
		c.gen++
		return false
	}
	return t.Sub(c.since) > l.softFor
}

// errObufUnder: the replies are within the normal class's limits, and go out as any.
var errObufUnder = errors.New("within the output buffer limits")

// errObufLimit ends a connection whose output passed its class's limit.
var errObufLimit = errors.New("client output buffer limit reached")

// obufWrite applies the normal class's limits l to the replies waiting in s.w: past the hard limit the connection
// ends without them, as Redis closes a client before it writes what passed the limit; past the soft limit they
// are written within the soft seconds or the connection ends. It returns errObufUnder when neither applies.
func (s *session) obufWrite(l obufLimit) error {
	n := int64(s.w.Len())
	if l.hard > 0 && n >= l.hard {
		s.h.log.Info("client output buffer hard limit reached, closing the client", "client", s.conn.RemoteAddr().String(),
			"bytes", n, "limit", l.hard)
		s.closing = true
		s.conn.Close()
		return errObufLimit
	}
	if l.soft == 0 || n < l.soft {
		return errObufUnder
	}
	held, err := s.acct.HoldReply(int(n))
	if err != nil {
		s.closing = true
		s.conn.Close()
		return err
	}
	defer s.acct.Release(held)
	// Redis disconnects once the output stayed over the soft limit more than soft seconds, counted in whole seconds.
	s.conn.SetWriteDeadline(time.Now().Add(l.softFor + time.Second))
	_, err = s.conn.Write(s.w.Bytes())
	s.conn.SetWriteDeadline(time.Time{})
	if err != nil {
		s.closing = true
		s.conn.Close()
	}
	return err
}
