package redis

import (
	"cmp"
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
)

// Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX). A blocked connection registers for its
// keys, tries the pop, and waits to be woken by any connection whose batch may have filled one of them, then
// tries again; so a push that lands between the try and the wait is never missed. While it waits it checks that
// the client is still there and honours the server's shutdown. Inside MULTI a blocking pop does not block, as in
// Redis.

func init() {
	rw := flagWrite
	register(
		&command{name: "blpop", arity: -3, flags: rw, lastKey: -2, imm: cmdBPop, groupName: "list", since: "2.0.0", summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise."},
		&command{name: "brpop", arity: -3, flags: rw, lastKey: -2, imm: cmdBPop, groupName: "list", since: "2.0.0", summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise."},
		&command{name: "blmove", arity: 6, flags: rw, lastKey: 2, imm: cmdBMove, groupName: "list", since: "6.2.0", summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise."},
		&command{name: "brpoplpush", arity: 4, flags: rw, lastKey: 2, imm: cmdBMove, groupName: "list", since: "2.2.0", summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise."},
		&command{name: "bzpopmin", arity: -3, flags: rw, lastKey: -2, imm: cmdBPop, groupName: "sorted-set", since: "5.0.0", summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise."},
		&command{name: "bzpopmax", arity: -3, flags: rw, lastKey: -2, imm: cmdBPop, groupName: "sorted-set", since: "5.0.0", summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member is available otherwise."},
	)
}

// waiters are the blocked connections, by table and key.
type waiters struct {
	n       atomic.Int64  // registrations, so writers skip the lock when nobody waits
	clients atomic.Int64  // connections waiting now (INFO's blocked_clients)
	groups  atomic.Int64  // XREADGROUPs waiting now: any write to their keys wakes them (see wake)
	seq     atomic.Uint64 // order of blocking, for first come, first served
	mu      sync.Mutex
	m       map[string]map[*blocked]struct{}
}

// blocked is one waiting connection. A wake sends it an ack to close once its next try is over, and the waker
// waits for that before it answers its own client: as in Redis, a push that serves a blocked client is answered
// after that client was served, and a chain (a BLMOVE whose push serves another BLMOVE) is served through
// before the first push is answered. Clients that take what they wait for (pops, moves) are woken one at a
// time, in the order they blocked, until one finds nothing: first come, first served, as Redis serves them.
// XREADGROUP's readers are woken one at a time in that order too (the first takes the new entries, as in Redis),
// but one that finds nothing does not stop the others (a reader of another group finds the same entries new).
type blocked struct {
	ch     chan *wakeAck // capacity 1: the next try's ack, or nil for a wake nobody waits for
	seq    uint64        // when it blocked
	kind   blockKind
	parked bool     // under waiters.mu: waiting in select, not trying
	missed bool     // under waiters.mu: a wake found ch full (a wake for one key on its way): retry every key
	cur    *wakeAck // under waiters.mu: the last wake sent with an ack, its try in progress until done
}

// busy reports, under waiters.mu, whether b is trying for a wake another waker waits for.
func (b *blocked) busy() bool {
	if b.parked || b.cur == nil {
		return false
	}
	select {
	case <-b.cur.done:
		return false
	default:
		return true
	}
}

// blockKind says how a blocked client takes what it waits for, and so how a wake serves it.
type blockKind uint8

const (
	blockReads blockKind = iota // XREAD: takes nothing, every reader is served at once
	blockPops                   // a pop or move: first come, first served, until one finds nothing
	blockGroup                  // XREADGROUP: first come, first served (the first takes the entries), each tried
)

// wakeAck is closed (done) by the woken client once its try is over; served says whether it was answered. key
// is the key (waitKey's form) whose filling woke it: a pop tries that key alone, as Redis serves a blocked
// client from the key that became ready, not from the first of its keys that holds something.
type wakeAck struct {
	done   chan struct{}
	served bool
	key    string
}

func (a *wakeAck) finish(served bool) {
	a.served = served
	close(a.done)
}

// wakeWait bounds how long a push waits for the clients it woke to finish their tries (a var: tests lengthen it).
var wakeWait = time.Second

// beforeRetry runs when a woken connection is about to try again (tests slow it down, to show that the push
// waits for it).
var beforeRetry = func() {}

func waitKey(table string, key []byte) string { return table + "\x00" + string(key) }

// add registers b for keys, as trying (not parked); keys it is registered for already stay as they are.
func (w *waiters) add(keys []string, b *blocked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]map[*blocked]struct{}{}
	}
	b.parked = false
	for _, k := range keys {
		if w.m[k] == nil {
			w.m[k] = map[*blocked]struct{}{}
		}
		if _, ok := w.m[k][b]; !ok {
			w.m[k][b] = struct{}{}
			w.n.Add(1)
		}
	}
}

// park marks b as waiting for a wake: from now on a waker waits for its next try. It reports false, leaving b
// trying, if a wake was dropped since b last parked: b is to try every key again rather than wait.
func (w *waiters) park(b *blocked) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b.missed {
		b.missed = false
		return false
	}
	b.parked = true
	return true
}

func (w *waiters) remove(keys []string, b *blocked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if _, ok := w.m[k][b]; ok {
			delete(w.m[k], b)
			w.n.Add(-1)
			if len(w.m[k]) == 0 {
				delete(w.m, k)
			}
		}
	}
}

// send hands b a wake under w.mu: an ack to wait for if b is parked (it then counts as trying), else a bare
// signal, which a trying client (the waker itself, or one waiting for it) is never waited for through. nil if
// nothing is to be waited for.
func (w *waiters) send(b *blocked, key string) *wakeAck {
	var ack *wakeAck
	if b.parked {
		ack = &wakeAck{done: make(chan struct{}), key: key}
	}
	select {
	case b.ch <- ack:
		b.parked = false
		if ack != nil {
			b.cur = ack
		}
		return ack
	default: // woken already, maybe for another key alone: its try may pass this one over (see park)
		b.missed = true
		return nil
	}
}

// wake wakes the clients waiting on the keys a batch may have filled (the targets of pushes, moves, adds and
// stores; every key a script declared or wrote, from its result) and waits until they have tried again, within
// wakeWait: those that take what they wait for one at a time in the order they blocked, stopping at the first
// that finds nothing; the others (XREAD) all at once. res are the batch's results (nil: none needed). Unless
// inTry (the waker is a blocked client's try, a BLMOVE's push, which another waker may wait for), a client busy
// trying for another waker's wake is waited for and then served in its turn, as if that wake came first.
func (w *waiters) wake(muts []engine.Mutation, res []engine.Result, inTry bool) {
	if w.n.Load() == 0 {
		return
	}
	var keys []string
	for i := range muts {
		m := &muts[i]
		wide := m.Writes() && w.groups.Load() > 0 // a blocked XREADGROUP answers its stream's deletion or a new type
		switch {
		case wide && m.Op == engine.OpFlush:
			w.mu.Lock()
			for k := range w.m {
				if m.Table == "" || strings.HasPrefix(k, m.Table+"\x00") {
					keys = append(keys, k)
				}
			}
			w.mu.Unlock()
		case m.Op == engine.OpSwap: // SWAPDB: a key of either table may now hold what its clients wait for
			w.mu.Lock()
			for k := range w.m {
				if strings.HasPrefix(k, m.Table+"\x00") || strings.HasPrefix(k, m.Target.Table+"\x00") {
					keys = append(keys, k)
				}
			}
			w.mu.Unlock()
		case m.Op == engine.OpCall, m.Op == engine.OpRename, m.Op == engine.OpCopy, wide:
			keys = append(keys, waitKey(m.Table, m.Key))
			if m.Target.Table != "" {
				keys = append(keys, waitKey(m.Target.Table, m.Target.Key))
			}
			for _, k := range m.Call.Keys {
				keys = append(keys, waitKey(m.Table, k))
			}
			if i < len(res) {
				for _, k := range res[i].Wrote {
					keys = append(keys, waitKey(m.Table, k))
				}
			}
		}
	}
	if len(keys) > 1 { // each key once, in the batch's order: a key named twice would be served twice
		seen := make(map[string]bool, len(keys))
		keys = slices.DeleteFunc(keys, func(k string) bool { dup := seen[k]; seen[k] = true; return dup })
	}
	if len(keys) == 0 {
		return
	}
	var readers []*wakeAck
	queues := make([][]*blocked, len(keys)) // each key's parked consumers, first blocked first
	parked := false
	w.mu.Lock()
	for i, k := range keys {
		for b := range w.m[k] {
			switch {
			case b.parked && b.kind != blockReads:
				queues[i] = append(queues[i], b)
			case b.parked:
				if ack := w.send(b, k); ack != nil {
					readers = append(readers, ack)
				}
			case !inTry && b.kind != blockReads && b.busy():
				queues[i] = append(queues[i], b)
			default:
				w.send(b, k)
			}
		}
		slices.SortFunc(queues[i], func(a, b *blocked) int { return cmp.Compare(a.seq, b.seq) })
		parked = parked || len(queues[i]) > 0
	}
	w.mu.Unlock()
	if !parked && len(readers) == 0 {
		return // nobody to wait for (the usual case: clients are blocked, but on other keys)
	}

	limit := time.NewTimer(wakeWait)
	defer limit.Stop()
	late := false // past wakeWait: the rest are woken without waiting
	wait := func(ack *wakeAck) bool {
		if late {
			return true
		}
		select {
		case <-ack.done:
			return ack.served
		case <-limit.C:
			late = true
			return true
		}
	}
	for i, q := range queues {
		emptied := false // a pop found nothing: the key is empty again, the pops after it would find nothing either
		for _, b := range q {
			if emptied && b.kind == blockPops {
				continue
			}
			var ack *wakeAck
			w.mu.Lock()
			_, ok := w.m[keys[i]][b] // it may have left (served by another key, or gone)
			if ok && !inTry && !late && b.busy() {
				other := b.cur // its try for another waker: once over, it has parked again if it found nothing
				w.mu.Unlock()
				select {
				case <-other.done:
				case <-limit.C:
					late = true
				}
				w.mu.Lock()
				_, ok = w.m[keys[i]][b]
			}
			if ok {
				ack = w.send(b, keys[i])
			}
			w.mu.Unlock()
			if ack != nil && !wait(ack) && b.kind == blockPops {
				emptied = true
			}
		}
	}
	for _, ack := range readers {
		wait(ack)
	}
}

// blockTimeout parses a blocking command's timeout in seconds (0: forever), answering Redis's error if it is bad.
func (s *session) blockTimeout(arg []byte) (time.Duration, bool) {
	d, msg := parseTimeout(arg)
	if msg != "" {
		s.w.Error(msg)
		return 0, false
	}
	return d, true
}

// parseTimeout reads a blocking command's timeout in seconds, or returns Redis's error for it. Redis reads it as a
// long double (hexadecimal and "inf" included), takes the milliseconds rounded up, and calls what does not fit a
// 64-bit integer negative (the conversion's result on x86-64); 0 waits forever, and so in effect does a timeout
// past time.Duration's 292 years (Redis takes up to 292 million years).
func parseTimeout(arg []byte) (time.Duration, string) {
	f, ok := engine.ParseLongDouble(arg)
	if !ok {
		return 0, "ERR timeout is not a float or out of range"
	}
	if f.IsInf() {
		return 0, "ERR timeout is negative"
	}
	ms := new(big.Float).SetPrec(f.Prec()).Mul(f, big.NewFloat(1000))
	n, acc := ms.Int(nil) // toward zero: a positive fraction is rounded up below
	if acc == big.Below {
		n.Add(n, big.NewInt(1))
	}
	switch {
	case !n.IsInt64() || n.Sign() < 0:
		return 0, "ERR timeout is negative"
	case n.Int64() > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64, ""
	}
	return time.Duration(n.Int64()) * time.Millisecond, ""
}

// block runs attempt until it reports success, waiting between tries for a wake-up on keys, until timeout (0:
// none). It reports whether an attempt succeeded; false after the timeout, a shutdown or a vanished client.
// kind says whether the attempt takes what it waits for (a pop or move, an XREADGROUP), so that clients are woken
// first come, first served.
func (s *session) block(keys [][]byte, timeout time.Duration, kind blockKind, attempt func() bool) bool {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = waitKey(s.table(), k)
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	b := &blocked{ch: make(chan *wakeAck, 1), seq: s.h.waiters.seq.Add(1), kind: kind}
	var ack *wakeAck // the waker waiting for the try in progress
	defer func() {
		// Unregistered first, so no waker sends more; then every waker still waiting is released, as if the
		// client had been served (it leaves: the next in line should be tried).
		s.h.waiters.remove(names, b)
		if ack != nil {
			ack.finish(true)
		}
		select {
		case a := <-b.ch:
			if a != nil {
				a.finish(true)
			}
		default:
		}
	}()
	defer s.state.blocked.Store(false) // CLIENT LIST's b flag, set once it waits
	started := time.Now()
	defer func() { s.waited += time.Since(started) }()
	var unblocked <-chan bool // CLIENT UNBLOCK's, once it waits: true for ERROR
	counted := false          // counted in blocked_clients from its first wait, as Redis counts a blocked client
	defer func() {
		if counted {
			s.h.waiters.clients.Add(-1)
		}
	}()
	defer func() { s.wokeBy = "" }()
	for {
		s.h.waiters.add(names, b) // before the attempt: a push after it wakes us
		s.passed = false
		ok, unblockedNow := s.tryBlocked(attempt, unblocked)
		if unblockedNow {
			return false
		}
		again := false // a wake was dropped during the try: try every key at once
		if !ok && !s.noBlock {
			// Parked before it counts as blocked (blocked_clients, CLIENT LIST's b flag) and before its waker
			// goes on: a push sent once a client sees it blocked, or once the push that woke it answered,
			// wakes it in its turn and waits for its try, where one landing while it was not parked would wake
			// it without order (a later client, parked, could take the element first).
			again = !s.h.waiters.park(b)
		}
		if ack != nil {
			// The try its waker waited for is over. One that passed over a key of another type says nothing of
			// whether the key is empty: it counts as served, so that the clients after it that take that type
			// (a BZPOPMIN blocked after a BLPOP on one key) are still tried, as Redis serves them.
			ack.finish(ok || s.passed)
			ack = nil
		}
		if ok {
			return true
		}
		if s.noBlock {
			return false
		}
		if !counted {
			counted = true
			var done func()
			unblocked, done = s.unblockable() // before it counts: a CLIENT UNBLOCK sent once INFO shows it blocked finds it
			defer done()
			s.h.waiters.clients.Add(1)
			s.state.blocked.Store(true)
			if hook := testHookCounted.Load(); hook != nil {
				(*hook)()
			}
			// The replies of the commands before it in the pipeline go out now, as Redis sends them before it
			// blocks: a client may wait for one of them to unblock this one (bee-queue's two BRPOPLPUSHes on
			// one connection waited for the next push, their first one served and its reply held).
			if err := s.out(); err != nil {
				s.closing = true
				return false
			}
			// Those replies are written: what an earlier EXEC's or MIGRATE's reads held goes back, not held while it waits.
			s.unhold(&s.held.read)
			s.runOut = 0      // what went out before the wait is the client's: the output limits count from here
			if s.trk != nil { // its invalidations need not wait for it
				s.trackIdle()
				defer func() {
					if s.trk.on {
						s.trackBusy()
					}
				}()
			}
		}
		woken := again
		if again {
			s.wokeBy = ""
		}
		for !woken {
			select {
			case ack = <-b.ch:
				woken = true
				s.wokeBy = ""
				if ack != nil {
					s.wokeBy = ack.key
				}
			case <-expired:
				return false
			case s.unblockedErr = <-unblocked:
				return false
			case <-s.ctx.Done():
				return false
			case <-tick.C:
				if !s.clientAlive() {
					s.closing = true
					return false
				}
			}
		}
		// Still registered until it leaves: a push to another of its keys before its retry (which looks at the
		// key that woke it alone) wakes it again, for a retry of every key, where unregistered it would miss it.
		if kind != blockReads && peerClosed(s.conn) {
			// The client left after it blocked: popping for it would lose the element (its reply goes nowhere;
			// an XREADGROUP's entries would go pending to a consumer that never reads them, as Redis never does).
			// Released as if served, the waker tries the next client in line; the 200 ms tick alone caught the
			// departure too late.
			s.closing = true
			return false
		}
		beforeRetry()
	}
}

// clientAlive reads whatever the client sent meanwhile (kept for after the blocking command) and reports false
// if the connection is gone.
func (s *session) clientAlive() bool {
	s.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := s.parser.Fill(s.conn)
	if s.ctx.Err() == nil {
		s.conn.SetReadDeadline(time.Time{})
	}
	return err == nil || isTimeout(err)
}

// popSpec says what a pop of several keys takes and how it answers.
type popSpec struct {
	zset, front bool  // a sorted set (else a list); the left end or lowest score
	count       int64 // up to this many; -1: one element
	multi       bool  // answer [key, [elements]] (LMPOP, ZMPOP), else [key, element] (BLPOP, BZPOPMIN: [key, member, score])
}

// popFirst tries one pop on each key in order and writes the reply of the first that had something. Once woken,
// a key that now holds another type is passed over, as Redis serves a blocked client only from a list or sorted
// set (before blocking, it answers WRONGTYPE).
func (s *session) popFirst(keys [][]byte, woken bool, p popSpec) bool {
	note := map[bool]string{true: "lpop", false: "rpop"}[p.front] // the events are LPOP's, ZPOPMIN's, ...
	if p.zset {
		note = map[bool]string{true: "zpopmin", false: "zpopmax"}[p.front]
	}
	for _, k := range keys {
		if j := s.wokenIndex(keys); woken && j >= 0 && string(keys[j]) != string(k) {
			continue // served from the key that woke it, as Redis serves it (see wakeAck)
		}
		m := collections.Pop(s.table(), k, p.front, p.count)
		if p.zset {
			m = collections.ZPop(s.table(), k, !p.front, max(p.count, 1))
		}
		r, sendNotes, err := s.applyNoted(m, note, [][]byte{[]byte(note), k})
		if err == nil {
			err = r.Err
		}
		from := s.w.Len()
		switch {
		case errors.Is(err, engine.ErrNotFound):
			continue
		case woken && errors.Is(err, engine.ErrWrongType):
			s.passed = true
			continue
		case err != nil:
			s.w.Error(errText(err))
			return true
		case p.zset && len(r.Members) == 0:
			continue
		case !p.zset && !p.multi:
			s.w.ArrayHeader(2)
			s.w.Bulk(k)
			s.w.Bulk(r.New.Value)
		case !p.zset:
			s.w.ArrayHeader(2)
			s.w.Bulk(k)
			writeElems(s.w, r.Members)
		case !p.multi:
			s.w.ArrayHeader(3)
			s.w.Bulk(k)
			s.w.Bulk(r.Members[0].Name)
			writeScore(s.w, r.Members[0].Item.Value)
		default:
			s.w.ArrayHeader(2)
			s.w.Bulk(k)
			s.w.ArrayHeader(len(r.Members))
			for _, m := range r.Members {
				s.w.ArrayHeader(2)
				s.w.Bulk(m.Name)
				writeScore(s.w, m.Item.Value)
			}
		}
		sendNotes(from)
		s.popped = k
		return true
	}
	return false
}

// blockPop runs a pop of several keys (BLPOP, BLMPOP, ...) until one has something or timeout, answering a null
// array when none did.
func (s *session) blockPop(keys [][]byte, timeout time.Duration, p popSpec) {
	woken := false
	if !s.block(keys, timeout, blockPops, func() bool { ok := s.popFirst(keys, woken, p); woken = true; return ok }) {
		s.blockEnded(s.w.NullArray)
	}
}

func cmdBPop(s *session, args [][]byte) {
	name := lower(args[0])
	timeout, ok := s.blockTimeout(args[len(args)-1])
	if !ok {
		return
	}
	keys := copyArgs(args[1 : len(args)-1]) // waiting may refill the parser's buffer
	s.blockPop(keys, timeout, popSpec{zset: name[1] == 'z', front: name == "blpop" || name == "bzpopmin", count: -1})
}

// side names a list end as LMOVE's arguments do.
func side(left bool) string {
	if left {
		return "left"
	}
	return "right"
}

func cmdBMove(s *session, args [][]byte) {
	fromLeft, toLeft := false, true // BRPOPLPUSH
	if eq(args[0], "blmove") {
		var ok1, ok2 bool
		fromLeft, ok1 = leftOrRight(args[3])
		toLeft, ok2 = leftOrRight(args[4])
		if !ok1 || !ok2 {
			s.w.Error("ERR syntax error")
			return
		}
	}
	timeout, ok := s.blockTimeout(args[len(args)-1])
	if !ok {
		return
	}
	a := copyArgs(args[1:3])
	m := collections.Move(s.table(), a[0], s.table(), a[1], fromLeft, toLeft)
	noteArgs := [][]byte{[]byte("lmove"), a[0], a[1], []byte(side(fromLeft)), []byte(side(toLeft))} // LMOVE's events
	woken := false
	moved := s.block(a[:1], timeout, blockPops, func() bool {
		defer func() { woken = true }()
		r, sendNotes, err := s.applyNoted(m, "lmove", noteArgs)
		if err == nil {
			err = r.Err
		}
		switch {
		case errors.Is(err, engine.ErrNotFound):
			return false
		case woken && errors.Is(err, engine.ErrWrongType) && !s.holdsList(a[0]):
			// Once woken, a source that now holds another type is passed over, as Redis serves a blocked
			// client only from a list (a destination of another type is answered WRONGTYPE, as in Redis).
			s.passed = true
			return false
		case err != nil:
			s.w.Error(errText(err))
		default:
			s.h.waiters.wake([]engine.Mutation{m}, nil, true)
			from := s.w.Len()
			s.w.Bulk(r.New.Value)
			sendNotes(from)
		}
		return true
	})
	if !moved {
		s.blockEnded(s.w.NullArray) // Redis's RESP2 answer at the timeout is *-1 here too, not $-1
	}
}

// wokenIndex is the index in keys of the key whose wake the retry in progress serves (wakeAck), or -1 if none
// (the first try, or a bare wake): a blocked client is served from that key alone, as Redis serves it.
func (s *session) wokenIndex(keys [][]byte) int {
	if s.wokeBy == "" {
		return -1
	}
	for i, k := range keys {
		if waitKey(s.table(), k) == s.wokeBy {
			return i
		}
	}
	return -1
}

// holdsList reports whether key holds a list (false on a failed read: the caller waits on).
func (s *session) holdsList(key []byte) bool {
	res, err := s.applyHere([]engine.Mutation{{Op: engine.OpGet, Table: s.table(), Key: key, AnyKind: true, NoValue: true}})
	return err == nil && res[0].Err == nil && res[0].New.Kind == engine.KindList
}

// testHookCounted, when set by a test, runs once a blocking command counts itself in blocked_clients.
var testHookCounted atomic.Pointer[func()]

// errUnblocked is what a blocking command answers when CLIENT UNBLOCK ... ERROR ended its wait.
const errUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// unblockable registers the connection, waiting in a blocking command, for CLIENT UNBLOCK: it returns the
// channel the unblocking sends on (true: ERROR) and what to call when the wait is over.
func (s *session) unblockable() (<-chan bool, func()) {
	ch := make(chan bool, 1)
	s.unblockMu.Lock()
	s.unblockCh = ch
	s.unblockMu.Unlock()
	return ch, func() {
		s.unblockMu.Lock()
		s.unblockCh = nil
		s.unblockMu.Unlock()
	}
}

// tryBlocked runs a blocking command's try under unblockMu, so that a CLIENT UNBLOCK comes wholly before it or
// after it, as in Redis: one that came before (while the wake was on its way) ends the wait instead, reported
// as unblocked; once a try served the client, an UNBLOCK answers 0 (it got its element, not a timeout reply).
func (s *session) tryBlocked(attempt func() bool, unblocked <-chan bool) (ok, unblockedNow bool) {
	s.unblockMu.Lock()
	defer s.unblockMu.Unlock()
	select {
	case s.unblockedErr = <-unblocked: // nil before the first wait: never ready
		return false, true
	default:
	}
	ok = attempt()
	if ok {
		s.unblockCh = nil
	}
	return ok, false
}

// unblock ends s's wait in a blocking command, as its timeout would (withErr: with errUnblocked instead), and
// reports whether it was waiting. Called from another connection's goroutine; a try in progress is waited for
// (tryBlocked).
func (s *session) unblock(withErr bool) bool {
	s.unblockMu.Lock()
	defer s.unblockMu.Unlock()
	if s.unblockCh == nil {
		return false
	}
	select {
	case s.unblockCh <- withErr:
		return true
	default: // unblocked already
		return false
	}
}

// blockEnded answers a blocking command that got nothing: its timeout reply, or errUnblocked.
func (s *session) blockEnded(timedOut func()) {
	if s.unblockedErr {
		s.unblockedErr = false
		s.w.Error(errUnblocked)
		return
	}
	timedOut()
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if that connection waited in a blocking command (BLPOP,
// BLMOVE, BZPOPMIN, XREAD and XREADGROUP with BLOCK, ...) and now answers as at its timeout or with an
// UNBLOCKED error; 0 otherwise (a connection paused by CLIENT PAUSE is not blocked in this sense, as in Redis).
func (s *session) clientUnblock(args [][]byte) {
	id, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		s.w.Error(errNotInt)
		return
	}
	withErr := false
	if len(args) == 4 {
		switch lower(args[3]) {
		case "timeout":
		case "error":
			withErr = true
		default:
			s.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	s.h.mu.Lock()
	o := s.h.sessions[id]
	s.h.mu.Unlock()
	if o != nil && o.unblock(withErr) {
		s.w.Int(1)
		return
	}
	s.w.Int(0)
}
