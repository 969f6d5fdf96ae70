package redis

import (
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/glob"
	"anykv/internal/protocol/resp"
	"anykv/internal/pubsub"
	"anykv/internal/server"
)

// Pub/sub. Once a connection subscribes, everything it sends out goes through its pusher: a queue drained by a
// goroutine of its own, which publishers append messages to without waiting for the socket. Confirmations are
// queued before the subscription is registered, so no message can overtake the confirmation of its channel. A
// subscriber whose queue grows past client-output-buffer-limit's pubsub class (Redis's default: 32 MiB at once, or
// 8 MiB for a minute) is disconnected, as Redis does, rather than growing memory without end (obuf.go).

func init() {
	ps := func(c *command) *command { c.groupName = "pubsub"; c.firstKey = -1; c.flags |= flagPubSub; return c }
	// The shard commands' channels sit where keys would (Redis's cluster hashes them to slots): COMMAND INFO says
	// 1 last 1, but they are no keys (GETKEYS has none), as Redis's not_key key specs have it.
	sh := func(c *command, last int) *command {
		c.firstKey, c.lastKey, c.step, c.notKeys = 1, last, 1, true
		return c
	}
	register(
		ps(&command{name: "subscribe", arity: -2, flags: flagTx, imm: cmdSubscribe, since: "2.0.0", summary: "Listens for messages published to channels."}),
		ps(&command{name: "unsubscribe", arity: -1, flags: flagTx, imm: cmdSubscribe, since: "2.0.0", summary: "Stops listening to messages posted to channels."}),
		ps(&command{name: "psubscribe", arity: -2, flags: flagTx, imm: cmdSubscribe, since: "2.0.0", summary: "Listens for messages published to channels that match one or more patterns."}),
		ps(&command{name: "punsubscribe", arity: -1, flags: flagTx, imm: cmdSubscribe, since: "2.0.0", summary: "Stops listening to messages published to channels that match one or more patterns."}),
		ps(&command{name: "publish", arity: 3, flags: flagFast, imm: cmdPublish, since: "2.0.0", summary: "Posts a message to a channel."}),
		&command{name: "pubsub", arity: -2, firstKey: -1, groupName: "pubsub", imm: cmdPubSub, since: "2.8.0", summary: "A container for Pub/Sub commands."}, // a container has no flags of its own
		sh(ps(&command{name: "ssubscribe", arity: -2, flags: flagTx, imm: cmdSubscribe, since: "7.0.0", summary: "Listens for messages published to shard channels."}), -1),
		sh(ps(&command{name: "sunsubscribe", arity: -1, flags: flagTx, imm: cmdSubscribe, since: "7.0.0", summary: "Stops listening to messages posted to shard channels."}), -1),
		sh(ps(&command{name: "spublish", arity: 3, flags: flagFast, imm: cmdSPublish, since: "7.0.0", summary: "Post a message to a shard channel"}), 1),
	)
	for _, name := range []string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"} {
		commands[name].pushes = true // their confirmations are pushes: CLIENT REPLY OFF leaves them, as Redis
	}
}

// pubsubLimit bounds a monitor's queued lines and the invalidations held for a busy tracking connection.
const pubsubLimit = 32 << 20

// pushChunk is the size of the pieces a pusher's queue is kept in: the queue holds about what is queued, where
// one growing slice held up to twice that, and the slice being written as much again (a slow subscriber peaked
// at 72 MiB of heap against the 32 MiB limit). A written piece is kept for the next (spare), so a steady trickle
// of messages allocates nothing.
const pushChunk = 16 << 10

// pusher is a subscribed connection's ordered output queue and the goroutine that writes it. Its queue is held
// to client-output-buffer-limit (obuf.go): the pubsub class's while the connection has subscriptions, the normal
// class's otherwise (a RESP3 tracking client, one that unsubscribed from everything), as Redis classes clients.
type pusher struct {
	conn  net.Conn
	lim   func() *obufLimits
	state *clientState // the connection's subscription counts, and omem (queued, for CLIENT LIST)
	log   *slog.Logger
	timer *time.Timer // the soft limit's check once its seconds are up (checkSoft); stopped when the pusher ends
	// monitor: the connection monitors; its queue is held to pubsubLimit instead (Redis counts a monitor a normal
	// client, without a limit by default).
	monitor atomic.Bool
	mu      sync.Mutex
	cond    *sync.Cond
	// resp3: the connection speaks RESP3 as of the last output it queued (output), so messages are pushes; a
	// message is encoded under mu, so it comes in the protocol of the replies around it, as Redis writes it.
	resp3  bool
	chunks [][]byte  // what waits to be written, in order
	queued int       // bytes in chunks and in the write in progress: what counts against the limits
	soft   softClock // how long queued has stayed over the soft limit
	spare  []byte    // a written chunk, emptied, for the next
	closed bool
	// draining: the connection is ending; the writer ends once what is queued is written (drain).
	draining bool
	held     int // hold's: while above 0, what is queued waits
	done     chan struct{}
}

func newPusher(s *session, resp3 bool) *pusher {
	p := &pusher{conn: s.conn, resp3: resp3, lim: s.h.obufNow, state: &s.state, log: s.h.log,
		done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.run()
	return p
}

// enqueue appends output; past the limits the subscriber is cut off and b is dropped.
func (p *pusher) enqueue(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enqueueLocked(b)
}

// output appends the connection's own output (replies, confirmations), written in proto, the protocol the
// connection speaks from then on: the messages queued after it are written in that protocol (HELLO and RESET
// change it). b may be empty.
func (p *pusher) output(b []byte, proto int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resp3 = proto >= 3
	if len(b) > 0 {
		p.enqueueLocked(b)
	}
}

// enqueueLocked is enqueue with p.mu held.
func (p *pusher) enqueueLocked(b []byte) {
	if p.closed {
		return
	}
	p.queued += len(b)
	p.state.omem.Store(int64(p.queued))
	l := p.limit()
	gen := p.soft.gen
	if p.soft.over(l, p.queued) {
		p.cutOff(l)
		return
	}
	if p.soft.gen != gen { // just went over the soft limit: cut off then if it is still over, even with no traffic
		g := p.soft.gen
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(l.softFor+time.Second, func() { p.checkSoft(g) })
	}
	for len(b) > 0 {
		n := len(p.chunks)
		if n == 0 || len(p.chunks[n-1]) == cap(p.chunks[n-1]) {
			c := p.spare
			if c == nil {
				c = make([]byte, 0, pushChunk)
			}
			p.chunks, p.spare = append(p.chunks, c), nil
			n++
		}
		last := p.chunks[n-1]
		k := min(len(b), cap(last)-len(last))
		p.chunks[n-1] = append(last, b[:k]...)
		b = b[k:]
	}
	p.cond.Signal()
}

// limit is what the queue is held to: a subscriber's class, pubsub; any other connection's, normal, and at most
// pubsubLimit, as a monitor's (Redis's normal class has no limit by default, and a RESP3 tracking client that
// does not read would have its invalidations pile up without end).
func (p *pusher) limit() obufLimit {
	if !p.monitor.Load() {
		if st := p.state; st.sub.Load()+st.psub.Load()+st.ssub.Load() > 0 {
			return p.lim()[obufPubSub]
		}
	}
	l := p.lim()[obufNormal]
	if l.hard == 0 || l.hard > pubsubLimit {
		l.hard = pubsubLimit
	}
	return l
}

// cutOff ends a connection whose queue passed l; the caller holds p.mu.
func (p *pusher) cutOff(l obufLimit) {
	p.log.Warn("client closed for overcoming of output buffer limits", "client", p.conn.RemoteAddr().String(),
		"queued", p.queued, "hard", l.hard, "soft", l.soft)
	p.closed = true
	// The reader fails next, and the connection ends. Closed at once, without a TLS close_notify, which would wait
	// up to 5 s for this client that does not read, with p.mu held and every publisher to it waiting too.
	server.CloseNow(p.conn)
	p.cond.Signal()
}

// checkSoft cuts the subscriber off if its queue is over the soft limit still, since it went over as gen.
func (p *pusher) checkSoft(gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.limit(); !p.closed && p.soft.gen == gen && p.soft.over(l, p.queued) {
		p.cutOff(l)
	}
}

// Deliver implements pubsub.Subscriber.
func (p *pusher) Deliver(pattern, channel string, msg []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := resp.NewWriter(2)
	if p.resp3 {
		w.SetProto(3)
	}
	if pattern == "" {
		w.PushHeader(3)
		w.BulkString("message")
	} else {
		w.PushHeader(4)
		w.BulkString("pmessage")
		w.BulkString(pattern)
	}
	w.BulkString(channel)
	w.Bulk(msg)
	p.enqueueLocked(w.Bytes())
}

// shardSub is a connection's pusher as a subscriber of shard channels: their messages are "smessage".
type shardSub struct{ p *pusher }

// Deliver implements pubsub.Subscriber.
func (ss shardSub) Deliver(_, channel string, msg []byte) {
	ss.p.mu.Lock()
	defer ss.p.mu.Unlock()
	w := resp.NewWriter(2)
	if ss.p.resp3 {
		w.SetProto(3)
	}
	w.PushHeader(3)
	w.BulkString("smessage")
	w.BulkString(channel)
	w.Bulk(msg)
	ss.p.enqueueLocked(w.Bytes())
}

func (p *pusher) run() {
	defer close(p.done)
	defer p.discard() // what is queued and the soft limit's timer go with the pusher
	for {
		p.mu.Lock()
		for (len(p.chunks) == 0 || p.held > 0 && !p.draining) && !p.closed {
			if p.draining && len(p.chunks) == 0 {
				p.closed = true
				break
			}
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		out := p.chunks
		p.chunks = nil
		p.mu.Unlock()
		n := 0
		for _, c := range out {
			n += len(c)
		}
		last := out[len(out)-1][:0]
		bufs := net.Buffers(out)
		_, err := bufs.WriteTo(p.conn) // one writev (it empties out's slices as it goes)
		p.mu.Lock()
		p.queued -= n
		p.state.omem.Store(int64(p.queued))
		if obufCounted(p.queued) < p.limit().soft {
			p.soft.since = time.Time{}
		}
		if p.spare == nil && cap(last) == pushChunk {
			p.spare = last
		}
		p.mu.Unlock()
		if err != nil {
			p.stop()
			return
		}
	}
}

// discard drops what the ended pusher still holds: its queue (a subscriber cut off at its limit held up to the
// limit) and the soft limit's timer, which kept the pusher, queue and all, for the soft seconds (a review: 20
// stalled subscribers closing left 190 MiB for a minute, past maxclients).
func (p *pusher) discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.chunks, p.spare, p.queued = nil, nil, 0
	p.state.omem.Store(0)
}

// hold keeps queued output from the client until release: a (P)SUBSCRIBE's confirmation is queued before the
// broker may deliver on the subscription, and sent only once the subscription is registered, so that a client
// told it is subscribed is (a PUBLISH right after the confirmation reached only the channel's other subscribers).
func (p *pusher) hold() {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
}

// holdPushes holds the pusher (hold) until runParsed has accounted the command that holds it (releasePushes):
// the confirmations of (P)SUBSCRIBE and MONITOR's +OK then leave after the command's slow-log entry and monitor
// line exist, as Redis logs a command before its reply is written. A client that read the confirmation found no
// entry yet, or the entry among the next commands' (a test's SLOWLOG RESET and MONITOR after it, under load).
func (s *session) holdPushes() {
	s.sub.hold()
	s.pushHeld++
}

// testHookAccounting, when set by a test, runs before an immediate command (not a data command) is accounted.
var testHookAccounting atomic.Pointer[func(name string)]

// releasePushes releases the holds of holdPushes.
func (s *session) releasePushes() {
	for ; s.pushHeld > 0; s.pushHeld-- {
		s.sub.release()
	}
}

func (p *pusher) release() {
	p.mu.Lock()
	p.held--
	p.cond.Signal()
	p.mu.Unlock()
}

// drain ends the writer once what is queued is written: the replies a subscribed client got before its
// connection ended (QUIT's +OK, a protocol error, a SUBSCRIBE's confirmation sent with QUIT) still reach it.
func (p *pusher) drain() {
	p.mu.Lock()
	p.draining = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// stop ends the writer; queued output not yet written is dropped.
func (p *pusher) stop() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// subscriptions counts the connection's channels and patterns (the number Redis reports in their
// confirmations; SSUBSCRIBE's reports the shard channels alone).
func (s *session) subscriptions() int { return len(s.channels) + len(s.patterns) }

// subscribed reports whether the connection has any subscription, shard channels included (RESP2's subscribed
// context).
func (s *session) subscribed() bool { return s.sub != nil && s.subscriptions()+len(s.shards) > 0 }

// leaveAll drops every subscription of the connection (RESET, and its end).
func (s *session) leaveAll() {
	for ch := range s.channels {
		s.h.broker.Unsubscribe(ch, s.sub)
	}
	for p := range s.patterns {
		s.h.broker.PUnsubscribe(p, s.sub)
	}
	for ch := range s.shards {
		s.h.shards.Unsubscribe(ch, shardSub{s.sub})
	}
	s.subsMu.Lock()
	s.channels, s.patterns, s.shards = map[string]int{}, map[string]int{}, map[string]int{}
	s.subsMu.Unlock()
	s.notePubSub()
}

// out sends the replies written so far: through the pusher once the connection has subscribed.
func (s *session) out() error {
	if s.w.Len() == 0 {
		if s.sub != nil { // a HELLO or RESET whose reply CLIENT REPLY silenced still changes the messages' protocol
			s.sub.output(nil, s.w.Proto())
		}
		return nil
	}
	defer s.w.Reset()
	s.outs++
	s.adoptPusher()
	if s.sub != nil {
		s.sub.output(s.w.Bytes(), s.w.Proto())
		return nil
	}
	var deadline time.Time // the normal class's soft limit's, for replies over it (obuf.go)
	if l := s.h.obufNow()[obufNormal]; l.hard > 0 || l.soft > 0 {
		var err error
		if deadline, err = s.obufCheck(l); err != nil {
			return err
		}
	}
	// A big reply counts while a client that does not read holds it up, but for what reads reserved already
	// (held.read, an EXEC's or MIGRATE's: twice what they read, past each MiB, for the values and their replies;
	// the values are dropped by now, so all of it covers the reply). Only the rest is reserved here, where the
	// connection's own held.read would make it the biggest holder, refused and closed with its reply dropped.
	held, err := s.acct.HoldReply(s.w.Len() - s.held.read)
	if err != nil {
		// The budget refused the replies (and logged it): they are dropped, so the connection ends here, or the
		// replies after them would go out in their place (a review: GET small's answered GET big).
		s.closing = true
		s.conn.Close()
		return err
	}
	if !deadline.IsZero() {
		s.conn.SetWriteDeadline(deadline)
	}
	_, err = s.acct.WriteReply(s.conn, s.w.Bytes()) // its progress keeps the connection from looking idle
	s.acct.Release(held)
	s.runOut += s.w.Len()
	if !deadline.IsZero() {
		s.conn.SetWriteDeadline(time.Time{})
		if err != nil {
			s.obufClose("the soft limit's seconds passed", "err", err)
		}
	}
	return err
}

// endPubSub drops every subscription and stops the pusher (the connection is closing).
func (s *session) endPubSub() {
	if s.sub == nil {
		return
	}
	s.leaveAll()
	// What is queued goes out first (QUIT's +OK: node-redis's quit() of a subscriber waited for it forever),
	// within a second: a client that does not read does not hold the connection open.
	s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	s.sub.drain()
	<-s.sub.done
}

// channelStillAllowed checks a channel (or pattern) just added to the connection's set against the user's rules
// as they are now. An ACL change stores the new rules, then closes the subscribers they refuse
// (killSubscribersOutside): a change that stored its rules after this read sees the channel in the set.
func (s *session) channelStillAllowed(ch []byte, pattern, shard bool) bool {
	if s.user == nil {
		return true
	}
	r, one := s.user.get(), []string{string(ch)}
	switch {
	case pattern:
		return r.channelsAllowed(nil, one, nil)
	case shard:
		return r.channelsAllowed(nil, nil, one)
	}
	return r.channelsAllowed(one, nil, nil)
}

// testHookSubscribing, when set by a test, runs after the command's ACL check and before a channel is added to the
// connection's set, where a concurrent ACL change may land.
var testHookSubscribing atomic.Pointer[func(*session)]

// confirm queues one (un)subscribe confirmation.
func (s *session) confirm(kind string, name []byte, null bool) {
	n := s.subscriptions()
	if kind == "ssubscribe" || kind == "sunsubscribe" {
		n = len(s.shards)
	}
	w := resp.NewWriter(s.w.Proto())
	w.PushHeader(3)
	w.BulkString(kind)
	if null {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(n))
	s.sub.output(w.Bytes(), s.w.Proto())
}

func cmdSubscribe(s *session, args [][]byte) {
	if s.inMulti {
		s.w.Error("ERR Command not allowed inside a transaction")
		return
	}
	name := lower(args[0])
	if s.channels == nil {
		s.ensurePusher()
		s.subsMu.Lock()
		s.channels, s.patterns, s.shards = map[string]int{}, map[string]int{}, map[string]int{}
		s.subsMu.Unlock()
	}
	defer s.notePubSub() // a RESP2 redirect target now gets invalidations as messages (tracking_push.go)
	s.out()              // earlier replies stay ahead of the confirmations
	s.holdPushes()
	// Before the confirmations go out: a client that read one finds the connection a subscriber (CLIENT LIST and
	// KILL TYPE pubsub; TestClientKillTypePubSub failed one run in three under -race).
	defer s.publishSubs()
	pattern, shard := name[0] == 'p', name == "ssubscribe" || name == "sunsubscribe"
	set, broker, sub := s.channels, s.h.broker, pubsub.Subscriber(s.sub)
	switch {
	case pattern:
		set = s.patterns
	case shard:
		set, broker, sub = s.shards, s.h.shards, shardSub{s.sub}
	}
	switch name {
	case "subscribe", "psubscribe", "ssubscribe":
		for _, a := range args[1:] {
			if pattern && len(a) > s.h.maxPattern() {
				s.w.Error(errPatternTooLong)
				s.out()
				return
			}
			if _, in := set[string(a)]; !in {
				var g *glob.Pattern
				size := len(a) + heldOverhead
				if pattern {
					g = glob.Compile(a)
					size += g.Bytes() // about eight bytes a pattern byte, where len(a) alone undercounted it
				}
				if !s.hold(&s.held.subs, size) {
					s.w.Error(errHeldMemory)
					s.out() // through the pusher, after the confirmations before it
					return
				}
				if hook := testHookSubscribing.Load(); hook != nil {
					(*hook)(s)
				}
				s.subsMu.Lock()
				set[string(a)] = size
				s.subsMu.Unlock()
				if !s.channelStillAllowed(a, pattern, shard) {
					// An ACL change (SETUSER, DELUSER, LOAD) looked at this connection's channels after the
					// command's check and before this one was added: the connection goes, as the change would
					// have closed it, before it can hear the channel; nothing pipelined after runs.
					s.closing = true
					s.conn.Close()
					return
				}
				s.confirm(name, a, false) // queued before the broker can deliver on it
				if pattern {
					broker.PSubscribe(string(a), g, sub)
				} else {
					broker.Subscribe(string(a), sub)
				}
				continue
			}
			s.confirm(name, a, false)
		}
	default:
		names := args[1:]
		if len(names) == 0 {
			all := make([]string, 0, len(set))
			for n := range set {
				all = append(all, n)
			}
			sort.Strings(all)
			for _, n := range all {
				names = append(names, []byte(n))
			}
		}
		if len(names) == 0 {
			s.confirm(name, nil, true)
			return
		}
		for _, a := range names {
			if size, in := set[string(a)]; in {
				s.subsMu.Lock()
				delete(set, string(a))
				s.subsMu.Unlock()
				s.acct.Release(size)
				s.held.subs -= size
				if pattern {
					broker.PUnsubscribe(string(a), sub)
				} else {
					broker.Unsubscribe(string(a), sub)
				}
			}
			s.confirm(name, a, false)
		}
	}
}

func cmdPublish(s *session, args [][]byte) {
	s.w.Int(int64(s.h.broker.Publish(string(args[1]), args[2])))
}

func cmdSPublish(s *session, args [][]byte) {
	s.w.Int(int64(s.h.shards.Publish(string(args[1]), args[2])))
}

func cmdPubSub(s *session, args [][]byte) {
	switch sub := lower(args[1]); {
	case (sub == "channels" || sub == "shardchannels") && len(args) <= 3:
		broker := s.h.broker
		if sub == "shardchannels" {
			broker = s.h.shards
		}
		var pat []byte
		if len(args) == 3 {
			pat = args[2]
			if len(pat) > s.h.maxPattern() {
				s.w.Error(errPatternTooLong)
				return
			}
		}
		chs := broker.Channels(pat)
		s.w.ArrayHeader(len(chs))
		for _, c := range chs {
			s.w.BulkString(c)
		}
	case sub == "numsub" || sub == "shardnumsub":
		broker := s.h.broker
		if sub == "shardnumsub" {
			broker = s.h.shards
		}
		s.w.ArrayHeader(2 * (len(args) - 2)) // an array in RESP3 too, as Redis answers it
		for _, c := range args[2:] {
			s.w.Bulk(c)
			s.w.Int(int64(broker.NumSub(string(c))))
		}
	case sub == "numpat" && len(args) == 2:
		s.w.Int(int64(s.h.broker.NumPat()))
	case sub == "help" && len(args) == 2:
		helpTo(s.w, pubsubHelp)
	default:
		s.subcommandError("pubsub", args[1], "help", "channels", "numsub", "numpat", "shardchannels", "shardnumsub")
	}
}

// allowedWhileSubscribed lists what a RESP2 connection with subscriptions may send, as Redis does.
var allowedWhileSubscribed = map[string]bool{"subscribe": true, "unsubscribe": true, "psubscribe": true,
	"punsubscribe": true, "ping": true, "quit": true, "reset": true, "ssubscribe": true, "sunsubscribe": true}

// subscribedContext answers a command a subscribed RESP2 connection may not send; true if it did.
func (s *session) subscribedContext(cmd *command) bool {
	if !s.subscribed() || s.w.Proto() >= 3 || allowedWhileSubscribed[cmd.name] {
		return false
	}
	s.reject("ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}
