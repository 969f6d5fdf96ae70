package redis

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/server"
)

// How client-side caching's invalidations reach a connection (tracking.go, tracking_table.go). They come from any
// goroutine (another client's write, the sweeper), so they go through the connection's inbox: its pusher, made
// by whoever sends first (pubsub.go), which the connection adopts for its own replies at its next write, so that
// one goroutine writes the socket in order.
//
// Ordering, as Redis gives it: a connection's invalidations must not overtake the reply of a read that saw the
// value they invalidate. A tracking connection is therefore busy from the moment it takes a read's commands
// until their replies are queued; invalidations for its own connection that come meanwhile are held and queued
// after those replies (its own writes' invalidations follow its replies so, as Redis sends them after the
// command). Reads register their keys before they run, so a write they did not see invalidates after them.

// inbox is the part of a connection other goroutines write to; its fields are guarded by mu.
type inbox struct {
	mu    sync.Mutex
	p     *pusher     // the connection's pusher once it has one
	adopt atomic.Bool // p was made by a sender: the connection writes through it from its next write on
	resp3 bool        // the connection speaks RESP3 (HELLO 3)
	// pubsub: the connection has subscriptions, so a RESP2 connection can get redirected invalidations as
	// messages of __redis__:invalidate.
	pubsub bool
	busy   bool     // between taking a read's commands and queuing their replies (a tracking connection)
	held   [][]byte // invalidations that came while busy
	heldN  int      // their bytes
	gone   bool     // the connection ended
}

// Fixed parts of the messages, byte for byte as Redis writes them.
const (
	invalidatePush = ">2\r\n$10\r\ninvalidate\r\n"
	invalidateMsg  = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
)

// sendTracking sends the messages a write, an expiry or an eviction made.
func (h *Handler) sendTracking(out []trackMsg) {
	for i := range out {
		out[i].send()
	}
}

// send writes one invalidation to its tracker's connection or redirect target, as Redis's sendTrackingMessage
// does: a RESP3 target gets a push, a RESP2 one a pub/sub message when redirected to and subscribed, else
// nothing. A redirect whose target is gone sets the tracker's broken flag and tells a RESP3 tracker.
func (m *trackMsg) send() {
	own := m.t.s
	if m.own && m.redir == 0 && !m.bcast { // sent by the connection's goroutine, which is applying it
		own.holdOwn(m)
		return
	}
	ownResp3 := own.box.isResp3()
	var value []byte
	if m.null { // the tracker's own protocol's null, as Redis writes it, even to a target of the other
		value = []byte("$-1\r\n")
		if ownResp3 {
			value = []byte("_\r\n")
		}
	} else {
		value = keysArray(m.keys)
	}
	if m.redir == 0 {
		own.box.deliver(own, value, false, true)
		return
	}
	// A redirect to itself is held as its own messages are: its reads are the ones they invalidate.
	if m.to != nil && m.to.box.deliver(m.to, value, true, m.to == own) {
		return
	}
	own.state.trackBroken.Store(true)
	if ownResp3 {
		id := strconv.FormatInt(m.redir, 10)
		own.box.push(own, []byte(">2\r\n$21\r\ntracking-redir-broken\r\n:"+id+"\r\n"), true)
	}
}

// keysArray is keys as a RESP array of bulk strings.
func keysArray(keys [][]byte) []byte {
	n := 16
	for _, k := range keys {
		n += len(k) + 16
	}
	b := make([]byte, 0, n)
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(keys)), 10)
	b = append(b, "\r\n"...)
	for _, k := range keys {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, "\r\n"...)
		b = append(b, k...)
		b = append(b, "\r\n"...)
	}
	return b
}

// isResp3 reports whether the connection speaks RESP3.
func (b *inbox) isResp3() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resp3
}

// deliver sends an invalidation whose value (the keys, or a null) is value to s, framed for its protocol (a
// redirected one as a pub/sub message to a subscribed RESP2 connection), held while s is busy if mayHold; it
// reports false only when s is gone.
func (b *inbox) deliver(s *session, value []byte, redirected, mayHold bool) bool {
	b.mu.Lock()
	resp3, pubsub, gone := b.resp3, b.pubsub, b.gone
	b.mu.Unlock()
	var msg []byte
	switch {
	case gone:
		return false
	case resp3:
		msg = append([]byte(invalidatePush), value...)
	case redirected && pubsub:
		msg = append([]byte(invalidateMsg), value...)
	default:
		return true // RESP2 has no push on the same connection: Redis sends nothing
	}
	b.push(s, msg, mayHold)
	return true
}

// push queues msg on s's connection, or holds it while s is busy if mayHold. Held messages past pubsubLimit
// close the connection, as a pusher's queue does.
func (b *inbox) push(s *session, msg []byte, mayHold bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.gone:
	case b.busy && mayHold:
		b.held = append(b.held, msg)
		b.heldN += len(msg)
		if b.heldN > pubsubLimit {
			b.held, b.heldN, b.gone = nil, 0, true
			server.CloseNow(s.conn) // under b.mu: a TLS Close would wait up to 5 s on a client that does not read
		}
	default:
		if b.p == nil {
			b.p = newPusher(s, b.resp3)
			b.adopt.Store(true)
		}
		b.p.enqueue(msg)
	}
}

// ensurePusher gives the session a pusher (to subscribe, monitor or track): the one a sender made, or a new one.
func (s *session) ensurePusher() {
	if s.sub != nil {
		return
	}
	b := &s.box
	b.mu.Lock()
	if b.p == nil {
		b.p = newPusher(s, b.resp3)
	}
	s.sub = b.p
	b.mu.Unlock()
}

// adoptPusher makes the session write through the pusher a sender made for it, if one did (out calls it).
func (s *session) adoptPusher() {
	if s.sub == nil && s.box.adopt.Load() {
		s.box.mu.Lock()
		s.sub = s.box.p
		s.box.mu.Unlock()
	}
}

// setProto records the connection's protocol for senders (HELLO, RESET).
func (s *session) setProto(p int) {
	s.w.SetProto(p)
	s.box.mu.Lock()
	s.box.resp3 = p >= 3
	s.box.mu.Unlock()
}

// notePubSub records for senders whether the connection has subscriptions.
func (s *session) notePubSub() {
	on := s.subscribed()
	s.box.mu.Lock()
	s.box.pubsub = on
	s.box.mu.Unlock()
}

// trackBusy marks a tracking connection busy: it is taking commands whose replies its invalidations must follow.
// What was held before goes out first: those writes were done before these commands were sent (the previous
// replies are out, but the connection may not have been idle since).
func (s *session) trackBusy() {
	b := &s.box
	b.mu.Lock()
	defer b.mu.Unlock()
	s.releaseHeld()
	b.busy = true
}

// trackIdle ends a busy stretch once its replies are queued (written, or with the pusher): the invalidations
// held meanwhile follow them.
func (s *session) trackIdle() {
	b := &s.box
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy = false
	s.releaseHeld()
}

// releaseHeld queues the invalidations held while busy; the caller holds the inbox's lock.
func (s *session) releaseHeld() {
	b := &s.box
	if len(b.held) == 0 || b.gone {
		return
	}
	if b.p == nil {
		b.p = newPusher(s, b.resp3)
	}
	s.sub = b.p
	for _, m := range b.held {
		b.p.enqueue(m)
	}
	b.held, b.heldN = nil, 0
}

// closeInbox ends deliveries to the connection (it is closing) and adopts a pusher a sender made, so that the
// connection's end stops it.
func (s *session) closeInbox() {
	b := &s.box
	b.mu.Lock()
	b.gone, b.held = true, nil
	if s.sub == nil {
		s.sub = b.p
	}
	b.mu.Unlock()
}

// ownInval is an invalidation of the connection's own write, waiting for that command's reply.
type ownInval struct {
	key  []byte // the key written (nil with null: a flush)
	null bool
	msg  []byte
}

// holdOwn keeps the invalidation of the connection's own write or flush until the reply of the command that made
// it is written (emitOwn); the connection's goroutine calls it, from its own Apply.
func (s *session) holdOwn(m *trackMsg) {
	if s.w.Proto() < 3 {
		return // RESP2 has no push on the same connection
	}
	o := ownInval{null: m.null}
	if m.null {
		o.msg = []byte(invalidatePush + "_\r\n")
	} else {
		o.key = append([]byte(nil), m.keys[0]...)
		o.msg = append([]byte(invalidatePush), keysArray(m.keys)...)
	}
	s.trackOwn = append(s.trackOwn, o)
}

// emitOwn writes, after a command's reply, the held invalidations of the keys that command wrote (muts and res:
// its own), in its order; with muts nil, all of them. Inside EXEC nothing is written until EXEC's reply is.
func (s *session) emitOwn(muts []engine.Mutation, res []engine.Result) {
	if s.inExec {
		return
	}
	if muts == nil {
		for _, o := range s.trackOwn {
			s.w.Raw(o.msg)
		}
		s.trackOwn = s.trackOwn[:0]
		return
	}
	take := func(key []byte, null bool) {
		for i, o := range s.trackOwn {
			if o.null == null && (null || bytes.Equal(o.key, key)) {
				s.w.Raw(o.msg)
				s.trackOwn = append(s.trackOwn[:i], s.trackOwn[i+1:]...)
				return
			}
		}
	}
	kv.EachWritten(muts, res, func(_ int, _ string, key []byte) { take(key, false) }, func(int, string) { take(nil, true) })
}
