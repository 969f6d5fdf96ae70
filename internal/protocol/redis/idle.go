package redis

import "time"

// Redis's timeout (CONFIG SET timeout, --timeout): a client that has sent nothing for that many seconds, waiting
// in a read, is closed, as Redis's clientsCron closes it. Subscribers, monitors and clients blocked in a command
// (BLPOP, a paused command, ...) are not, as in Redis. A goroutine checks the connections every second while the
// timeout is set, and ends when it is set back to 0.

// idleSweepEvery is how often the connections are checked.
const idleSweepEvery = time.Second

// setIdleTimeout sets the timeout (seconds; 0: none) and starts the sweeper if it does not run.
func (h *Handler) setIdleTimeout(sec int64) {
	h.idleTimeout.Store(sec)
	if sec > 0 && h.sweeping.CompareAndSwap(false, true) {
		go h.sweepIdle()
	}
}

// sweepIdle closes idle clients every idleSweepEvery until the timeout is 0.
func (h *Handler) sweepIdle() {
	t := time.NewTicker(idleSweepEvery)
	defer t.Stop()
	for range t.C {
		sec := h.idleTimeout.Load()
		if sec <= 0 {
			h.sweeping.Store(false)
			// CONFIG SET may have set a timeout again after the load and before the store, finding the sweeper
			// running: take the sweep up again then.
			if h.idleTimeout.Load() <= 0 || !h.sweeping.CompareAndSwap(false, true) {
				return
			}
			continue
		}
		h.closeIdle(h.store.Time(), time.Duration(sec)*time.Second)
	}
}

// closeIdle closes the clients idle in a read for longer than limit at now (the store's time).
func (h *Handler) closeIdle(now time.Time, limit time.Duration) {
	h.killWhere(nil, func(o *session) bool {
		st := &o.state
		if !st.reading.Load() || st.monitor.Load() || st.sub.Load()+st.psub.Load()+st.ssub.Load() > 0 {
			return false
		}
		last := max(o.created.UnixNano(), st.lastRead.Load(), st.lastActive.Load())
		return now.UnixNano()-last > limit.Nanoseconds()
	}, false)
}
