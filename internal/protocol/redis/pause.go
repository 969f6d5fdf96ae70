package redis

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CLIENT PAUSE and CLIENT UNPAUSE, as Redis 7.0: while a pause lasts, a command that it covers waits (it is not
// refused) until the pause ends by its timeout or CLIENT UNPAUSE, then runs. ALL covers every command of every
// connection, the pausing one and CLIENT UNPAUSE included (so only the timeout, or UNPAUSE from a monitoring
// connection, ends it, as in Redis); WRITE covers the commands that write (EVAL and an EXEC of queued writes
// too), and reads go on. Monitoring connections are never paused (Redis never pauses replicas, which monitors
// are). A second PAUSE keeps the later end and the stricter mode.

// pauseState is the handler's pause. active is all the hot path reads while nothing is paused.
type pauseState struct {
	active atomic.Bool
	mu     sync.Mutex
	until  time.Time
	all    bool
	ended  chan struct{} // closed when the pause is lifted or changed
	// waiting, when set (tests), hears the name of each command that starts to wait.
	waiting atomic.Pointer[func(name string)]
}

// pause starts or extends a pause until end (the later end and the stricter mode win).
func (p *pauseState) pause(end time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active.Load() && !time.Now().Before(p.until) {
		p.lift() // the last pause ran out without anyone noticing: start afresh
	}
	if !p.active.Load() {
		p.until, p.all = end, all
		p.ended = make(chan struct{})
		p.active.Store(true)
		return
	}
	if end.After(p.until) {
		p.until = end
	}
	p.all = p.all || all
	close(p.ended) // waiters look again: a WRITE pause may have become ALL
	p.ended = make(chan struct{})
}

// lift ends the pause; the caller holds mu.
func (p *pauseState) lift() {
	if p.active.Load() {
		p.active.Store(false)
		close(p.ended)
	}
}

// unpause ends the pause now (CLIENT UNPAUSE).
func (p *pauseState) unpause() {
	p.mu.Lock()
	p.lift()
	p.mu.Unlock()
}

// current returns the pause in force (ended nil: none; an expired one is lifted here).
func (p *pauseState) current() (ended chan struct{}, until time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active.Load() {
		return nil, time.Time{}, false
	}
	if !time.Now().Before(p.until) {
		p.lift()
		return nil, time.Time{}, false
	}
	return p.ended, p.until, p.all
}

// pausedWrite reports whether a WRITE pause covers cmd called with args, as Redis 7 decides it: a write command,
// a command Redis may replicate (PUBLISH, SPUBLISH, PFCOUNT), a script or function not declared no-writes, or an
// EXEC of queued commands one of which is covered.
func (s *session) pausedWrite(cmd *command, args [][]byte) bool {
	switch cmd.name {
	case "publish", "spublish", "pfcount":
		return true
	case "eval", "evalsha", "fcall":
		return !s.noWritesScript(cmd.name, args)
	case "exec":
		for _, q := range s.queued {
			if c := s.lookup(q[0]); c != nil && s.pausedWrite(c, q) {
				return true
			}
		}
		return false
	}
	return cmd.flags&flagWrite != 0
}

// noWritesScript reports whether the script EVAL or EVALSHA names, or the function FCALL names, is declared
// no-writes (its shebang's or its registration's flags). An unknown one is not: it answers an error when it runs.
func (s *session) noWritesScript(name string, args [][]byte) bool {
	if len(args) < 2 {
		return false
	}
	src := args[1]
	switch name {
	case "fcall":
		_, def, err := s.h.lookupFunction(s.ctx, string(args[1]))
		return err == nil && def != nil && def.noWrites
	case "evalsha":
		var ok bool
		if src, ok = s.h.scripts.get(string(args[1]), false); !ok {
			return false
		}
	}
	sb, msg := parseShebang(src)
	return msg == "" && sb.noWrites
}

// waitPause holds a command that the pause covers until the pause ends; the replies of the commands before it
// are sent first. The caller checked pause.active.
func (s *session) waitPause(cmd *command, args [][]byte) {
	if s.monitoring {
		return
	}
	p := &s.h.pause
	for {
		ended, until, all := p.current()
		if ended == nil || (!all && !s.pausedWrite(cmd, args)) {
			return
		}
		s.flush()
		s.out()
		// Those replies are written: what an earlier EXEC's or MIGRATE's reads held goes back, not held while it waits.
		s.unhold(&s.held.read)
		s.runOut = 0 // what went out before the pause is the client's: the output limits count from here
		if s.trk != nil {
			// Those replies are out: invalidations need not wait for the pause (memcached's and HTTP's writes and
			// the sweeper's expiries go on during it), as a blocked command's do not (blocking.go).
			s.trackIdle()
		}
		s.state.blocked.Store(true)
		s.h.waiters.clients.Add(1) // INFO's blocked_clients counts it, as Redis counts a paused client
		if f := p.waiting.Load(); f != nil {
			(*f)(cmd.name)
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-ended:
		case <-t.C:
		case <-s.ctx.Done():
		}
		t.Stop()
		s.state.blocked.Store(false)
		s.h.waiters.clients.Add(-1)
		if s.trk != nil && s.trk.on {
			s.trackBusy()
		}
		if s.ctx.Err() != nil {
			return
		}
	}
}

// clientPause is CLIENT PAUSE timeout [WRITE|ALL] (milliseconds; ALL by default).
func (s *session) clientPause(args [][]byte) {
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		s.w.Error("ERR timeout is not an integer or out of range")
		return
	case ms < 0:
		s.w.Error("ERR timeout is negative")
		return
	case ms > math.MaxInt64-time.Now().UnixMilli(): // as Redis, whose deadline is now + ms in ms
		s.w.Error("ERR timeout is out of range")
		return
	}
	all := true
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "write":
			all = false
		case "all":
		default:
			s.w.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	d := time.Duration(math.MaxInt64) // past 292 years a time.Duration overflows: as good as forever
	if ms < math.MaxInt64/int64(time.Millisecond) {
		d = time.Duration(ms) * time.Millisecond
	}
	s.h.pause.pause(time.Now().Add(d), all)
	s.w.SimpleString("OK")
}
