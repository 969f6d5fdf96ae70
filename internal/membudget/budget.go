// Package membudget bounds the memory that request buffers of all connections may hold together (Redis's
// maxmemory-clients), and hands out the big buffers from size-classed pools so that they are reused, or
// collected and their pages returned to the OS, instead of staying with the connection that needed them once.
//
// A connection opens an Account, reserves bytes before it grows a buffer and releases them when it lets the
// buffer go; Close releases whatever is left, so a connection must defer it. When a reservation does not fit,
// the client holding the most is closed: another connection holding more than the requester would is evicted
// (and the requester waits for it to let go), or else the requester itself is refused. The server never grows
// past the budget to serve one client.
package membudget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOverBudget is returned by Reserve when the budget cannot hold the reservation without closing a client
// smaller than the requester would be: the requester is the one to go.
var ErrOverBudget = errors.New("maxmemory-clients reached")

// ErrEvicted is returned by Reserve on an account evicted to make room for another connection's request.
var ErrEvicted = errors.New("evicted: maxmemory-clients reached")

// ErrWaitersHold is ReserveWait's refusal, at once, of a reservation for which only clients themselves waiting
// for room (in ReserveWait) hold enough: waiting, each would hold what the other waits for until one's patience
// ended. It wraps ErrOverBudget.
var ErrWaitersHold = fmt.Errorf("%w: what it waits for is held by clients waiting for room", ErrOverBudget)

// evictWait bounds how long a reservation waits for evicted clients to let go of their buffers.
const evictWait = 2 * time.Second

// idleEvict is how long a patient reservation (ReserveWait) waits before it may evict clients that have neither
// reserved nor released anything, nor written a MiB of a reply (WriteReply), nor received a 64th of what they
// hold of a request (Progress), for as long, and are not running a request (Serving): a request held half-sent,
// a big MULTI queue, a reply its client stopped reading. Replies being read go out or make progress within it;
// without it a reader waited out its patience and failed while such a client held the room. It is the default
// of each budget's (SetIdleEvict).
var idleEvict = 10 * time.Second

// reclaimMin is the least peak of reserved bytes after which a drop to a quarter of it triggers a collection
// (see Budget.reclaim).
const reclaimMin = 64 << 20

// Budget is the shared account of request-buffer bytes across connections. A nil *Budget accounts nothing.
type Budget struct {
	limit atomic.Int64 // 0: unlimited (bytes are still counted); SetLimit changes it while serving
	log   *slog.Logger
	used  atomic.Int64
	peak  atomic.Int64 // highest used since the last reclaim

	evictions, refusals atomic.Int64

	mu       sync.Mutex
	accounts map[*Account]struct{}
	changed  chan struct{} // closed (and replaced) when bytes are released or a client is evicted
	waiters  atomic.Int32
	// patientHeld is what the accounts waiting in ReserveWait hold: room no wait of another can count on.
	patientHeld atomic.Int64
	// idleEvict is the budget's (ns): idleEvict unless SetIdleEvict changed it.
	idleEvict atomic.Int64

	reclaiming, reclaimPending atomic.Bool
}

// New returns a budget of limit bytes (0 or less: unlimited, only counted). log receives a line for each
// eviction and refusal; nil discards them.
func New(limit int64, log *slog.Logger) *Budget {
	if limit < 0 {
		limit = 0
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Budget{log: log, accounts: map[*Account]struct{}{}, changed: make(chan struct{})}
	b.limit.Store(limit)
	b.idleEvict.Store(int64(idleEvict))
	return b
}

// Limit returns the budget in bytes (0: unlimited).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit.Load()
}

// SetLimit changes the budget (Redis's CONFIG SET maxmemory-clients; 0 or less: unlimited). Reservations past a
// lowered limit evict as usual; what connections already hold is not taken back.
func (b *Budget) SetLimit(limit int64) {
	if b == nil {
		return
	}
	b.limit.Store(max(limit, 0))
	b.wake() // reservations waiting for room look again
}

// SetIdleEvict changes how long a patient reservation waits before it may evict idle clients (idleEvict, 10 s):
// for tests, which see requests that take longer than that without waiting as long.
func (b *Budget) SetIdleEvict(d time.Duration) {
	if b != nil {
		b.idleEvict.Store(int64(d))
	}
}

// Used returns the bytes reserved now across all accounts.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Evictions returns how many clients were closed to make room for another's request.
func (b *Budget) Evictions() int64 {
	if b == nil {
		return 0
	}
	return b.evictions.Load()
}

// Refusals returns how many reservations were refused (their clients closed) because they did not fit.
func (b *Budget) Refusals() int64 {
	if b == nil {
		return 0
	}
	return b.refusals.Load()
}

// Account is one connection's share of a Budget. Reserve, Release, Alloc and Free are called by the
// connection's goroutine only (or by one it waits on, as a script its batch runs); Evicted and the eviction
// itself may come from others. A nil *Account accounts
// nothing and never refuses (Alloc and Free still use the pools).
type Account struct {
	b       *Budget
	name    string
	evict   func()
	held    atomic.Int64
	evicted atomic.Bool
	closed  bool
	// active is when a last reserved or released bytes, wrote a MiB of a reply or received a request's bytes
	// (Progress), in unix ns; patient is set while it waits in ReserveWait. A patient reservation may evict clients
	// idle for idleEvict that are not patient themselves.
	active  atomic.Int64
	patient atomic.Bool
	// busy is set while its connection runs a request (Serving): a command that takes long is not idle.
	busy atomic.Bool
	// arrived counts a request's bytes come in since Progress last marked a active (the connection's goroutine).
	arrived int64
}

// Serving tells that a's connection runs a request (on) or waits for the next (off): a connection busy with a
// command (an EXEC, a MIGRATE waiting for its target, a batch in the engine) is being served, however long it
// takes, and a patient reservation does not evict it as idle; one reading a request, or writing a reply
// (WriteReply), is judged by its progress.
func (a *Account) Serving(on bool) {
	if a != nil {
		a.busy.Store(on)
	}
}

// Progress counts n bytes of a request coming in (a big command's, an HTTP body's) and marks a active once those
// since the last mark add up to a 64th of what a holds: a request that comes in at that pace or faster (16 KiB in
// idleEvict for a 1 MiB buffer), however long it takes, is not idle; one that trickles a byte now and then while it
// holds a big buffer still is. Its reservations mark it too, but they come only as its buffer doubles, and the end
// of a big request sent slowly looked idle. Called by the connection's goroutine only.
func (a *Account) Progress(n int) {
	if a == nil {
		return
	}
	a.arrived += int64(n)
	if a.arrived >= a.held.Load()/64 {
		a.arrived = 0
		a.active.Store(time.Now().UnixNano())
	}
}

// Open registers a connection. name identifies it in logs (its remote address); evict is called at most
// once, from another goroutine, to make the connection stop: it must wake the connection's blocked reads and
// writes (e.g. by setting deadlines), after which the connection sees Evicted, tells its client and closes.
// On a nil Budget, Open returns nil.
func (b *Budget) Open(name string, evict func()) *Account {
	if b == nil {
		return nil
	}
	a := &Account{b: b, name: name, evict: evict}
	a.active.Store(time.Now().UnixNano())
	b.mu.Lock()
	b.accounts[a] = struct{}{}
	b.mu.Unlock()
	return a
}

// EvictConn returns the usual evict function for Open: it ends c's blocked reads at once and gives its
// writes a second, enough to send the client its error before the connection closes.
func EvictConn(c net.Conn) func() {
	return func() {
		c.SetReadDeadline(time.Now())
		c.SetWriteDeadline(time.Now().Add(time.Second))
	}
}

// Held returns the bytes this account has reserved.
func (a *Account) Held() int64 {
	if a == nil {
		return 0
	}
	return a.held.Load()
}

// Evicted reports whether the account was chosen to be closed to make room for another connection.
func (a *Account) Evicted() bool { return a != nil && a.evicted.Load() }

// Reserve accounts n more bytes to a, or fails with ErrOverBudget or ErrEvicted; then nothing is reserved
// and the caller should tell its client and close.
func (a *Account) Reserve(n int) error { return a.reserve(n, true) }

// TryReserve is Reserve without evicting another client or waiting: past the budget it refuses at once, for a
// caller that must not wait (a script's RESTORE, inside the engine's batch that an evicted client may wait on).
func (a *Account) TryReserve(n int) error { return a.reserve(n, false) }

// ReserveWait is Reserve for bytes that other clients' replies being written will make room for (values read
// for a reply): past the budget it evicts no one (they are serving reads as this one is) and waits up to d, or
// until ctx ends, for the others to let go, then refuses; after idleEvict of waiting it evicts, as Reserve would,
// clients bigger than it that have been idle as long (holding a request half-sent, not a reply being written).
// It refuses at once what the budget could not hold with everything else released.
func (a *Account) ReserveWait(ctx context.Context, n int, d time.Duration) error {
	if a == nil || n <= 0 {
		return nil
	}
	if a.evicted.Load() {
		return ErrEvicted
	}
	if !a.couldHold(n) {
		a.b.refusals.Add(1)
		return ErrOverBudget
	}
	err := a.reserve(n, false)
	if err == nil || d <= 0 || errors.Is(err, ErrEvicted) {
		return err // (no patience left: refused, evicting no one, as reserveSlowWait would evict without it)
	}
	a.b.refusals.Add(-1) // ErrOverBudget, counted, but not refused yet: reserveSlowWait counts its own outcome
	if n >= reclaimReply {
		// The caller let go of the value it read before waiting: collect it now, not when the heap has doubled
		// (30 HTTP clients' GET of a 60 MiB value peaked at 2.9 GB of RSS for a 1 GiB budget).
		a.b.reclaim()
	}
	return a.reserveSlowWait(ctx, int64(n), d)
}

// couldHold reports whether a could reserve n more bytes once every other account let go of what it holds:
// false when even that is not room enough, as ReserveWait then refuses at once.
func (a *Account) couldHold(n int) bool {
	if a == nil {
		return true
	}
	lim := a.b.limit.Load()
	return lim == 0 || a.held.Load()+int64(n) <= lim
}

func (a *Account) reserve(n int, evict bool) error {
	if a == nil || n <= 0 {
		return nil
	}
	b, n64 := a.b, int64(n)
	if a.evicted.Load() {
		return ErrEvicted
	}
	for {
		cur := b.used.Load()
		if lim := b.limit.Load(); lim > 0 && cur+n64 > lim {
			if !evict {
				b.refusals.Add(1)
				return ErrOverBudget
			}
			return a.reserveSlow(n64)
		}
		if b.used.CompareAndSwap(cur, cur+n64) {
			a.held.Add(n64)
			a.active.Store(time.Now().UnixNano())
			b.notePeak(cur + n64)
			return nil
		}
	}
}

// reserveSlow makes room by evicting the clients that hold more than a would, biggest first, and waits for
// them to let go; or refuses a when that cannot make enough room.
func (a *Account) reserveSlow(n int64) error { return a.reserveSlowWait(context.Background(), n, 0) }

// reserveSlowWait is reserveSlow that, when no client can be evicted for a, waits up to patience for the
// bytes others hold to be released before refusing (0: refuse at once).
func (a *Account) reserveSlowWait(ctx context.Context, n int64, patience time.Duration) error {
	b := a.b
	start := time.Now()
	deadline := start.Add(max(evictWait, patience))
	idle := time.Duration(b.idleEvict.Load()) // (idleEvict, or what SetIdleEvict set)
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	if patience > 0 {
		held := a.held.Load() // unchanged while a waits: its connection's goroutine is here
		b.patientHeld.Add(held)
		defer b.patientHeld.Add(-held)
		a.patient.Store(true)
		defer a.patient.Store(false)
	}
	for {
		b.mu.Lock()
		if a.evicted.Load() {
			b.mu.Unlock()
			return ErrEvicted
		}
		if cur, lim := b.used.Load(), b.limit.Load(); (lim == 0 || cur+n <= lim) && b.used.CompareAndSwap(cur, cur+n) {
			b.mu.Unlock()
			a.held.Add(n)
			a.active.Store(time.Now().UnixNano())
			b.notePeak(cur + n)
			return nil
		}
		var victims []*Account
		if patience > 0 {
			if lim := b.limit.Load(); lim > 0 && b.patientHeld.Load()+n > lim {
				// Even with every other client's bytes let go, those that patient clients hold (a's own
				// included) leave no room: each would wait for the others until their patience ended.
				b.mu.Unlock()
				return ErrWaitersHold
			}
			if now := time.Now(); now.Before(deadline) {
				// The others hold replies being written: wait for them, evicting none, but those idle since
				// idleEvict (not writing anything) once a has waited as long.
				victims = []*Account{}
				if now.Sub(start) >= idle {
					idleSince := now.Add(-idle).UnixNano()
					if v := b.chooseVictims(a, n, func(v *Account) bool { return !v.patient.Load() && !v.busy.Load() && v.active.Load() <= idleSince }); v != nil {
						victims = v
					}
				}
			}
		} else {
			victims = b.chooseVictims(a, n, nil)
		}
		if victims == nil {
			b.mu.Unlock()
			b.refusals.Add(1)
			// The caller decides what a refusal costs the client: a request buffer that cannot grow closes the
			// connection (its stream cannot be parsed further), held state (MULTI, WATCH, RESTORE) refuses the command.
			b.log.Warn("maxmemory-clients reached: refusing the client that would hold the most",
				"client", a.name, "holds", a.held.Load(), "wants", n, "used", b.used.Load(), "limit", b.limit.Load())
			return ErrOverBudget
		}
		changed := b.changed
		b.mu.Unlock()
		for _, v := range victims {
			b.evictions.Add(1)
			b.log.Warn("maxmemory-clients reached: evicting the client with the largest request buffer",
				"client", v.name, "holds", v.held.Load(), "for", a.name, "wants", n, "limit", b.limit.Load())
			if v.evict != nil {
				v.evict()
			}
		}
		if len(victims) > 0 {
			// A victim may itself be waiting for room (ReserveWait), not blocked on its connection, which evict
			// wakes: it must hear of it now and let go, not when its patience ends and after this wait refused.
			b.wake()
		}
		wait := time.Until(deadline)
		if patience > 0 {
			// Look for idle holders once a has waited idleEvict, and from then on every tenth of it: a holder
			// may go idle after the wait began, and nothing else wakes the wait when it has been idle long enough.
			if until := time.Until(start.Add(idle)); until > 0 {
				wait = min(wait, until)
			} else {
				wait = min(wait, idle/10)
			}
		}
		if wait <= 0 {
			b.refusals.Add(1)
			return ErrOverBudget
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done(): // the client has gone
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// chooseVictims marks as evicted the clients, biggest first, each holding more than a would after the
// reservation (and, if may is not nil, allowed by it), until the bytes being given back cover the shortfall. It
// returns the newly marked ones (an empty, non-nil slice when clients evicted earlier already cover it), or nil
// when even all of them would not: then a is to be refused. Called with b.mu held.
func (b *Budget) chooseVictims(a *Account, n int64, may func(*Account) bool) []*Account {
	short := b.used.Load() + n - b.limit.Load()
	for v := range b.accounts {
		if v.evicted.Load() {
			short -= v.held.Load()
		}
	}
	if short <= 0 {
		return []*Account{}
	}
	// The candidates, biggest first (their holdings as read once: they change meanwhile, and a sort needs
	// fixed keys).
	type cand struct {
		v    *Account
		held int64
	}
	var cands []cand
	mine := a.held.Load() + n
	for v := range b.accounts {
		if h := v.held.Load(); v != a && !v.evicted.Load() && h > mine && (may == nil || may(v)) {
			cands = append(cands, cand{v, h})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int { return cmp.Compare(y.held, x.held) })
	var victims []*Account
	for _, c := range cands {
		if short <= 0 {
			break
		}
		victims = append(victims, c.v)
		short -= c.held
	}
	if short > 0 {
		// Not enough even so: a is the client to close, and those chosen stay. They are marked only once the
		// choice is made: evicted is read without b.mu (Evicted, reserve), and a client that saw a mark taken
		// back here took itself for evicted and closed, or dropped its reply.
		return nil
	}
	for _, v := range victims {
		v.evicted.Store(true)
	}
	return victims
}

// ReplyHold is the size from which a reply counts against the budget while it is written: a client that sends
// GETs of big values and never reads held every reply in memory without bound (an audit: 8 MGETs of seven 32 MiB
// values took the process from 2.1 to 4.4 GB, held for as long as the sockets stayed open). Smaller replies are
// not counted, so that the budget's shared counter stays off the path of ordinary pipelines.
const ReplyHold = 64 << 10

// reclaimReply is the least refused reply after which the budget collects garbage at once.
const reclaimReply = 4 << 20

// HoldReply reserves a reply of n bytes for as long as it is being written, if it is ReplyHold or more; it
// returns the bytes to Release once the write returned. On an error (the budget chose this client to close, as
// for a request) nothing is held and the reply is not to be sent.
func (a *Account) HoldReply(n int) (held int, err error) {
	if a == nil || n < ReplyHold {
		return 0, nil
	}
	if err := a.Reserve(n); err != nil {
		// The reply, and the values it was built from, are garbage once the client is closed: collect them now
		// rather than when the heap has doubled (a burst of refused big replies took RSS a gigabyte up). Only for
		// big ones: the collections run a second apart at least, but need not run for a refused 64 KiB.
		if n >= reclaimReply {
			a.b.reclaim()
		}
		return 0, err
	}
	return n, nil
}

// writeStep is the piece WriteReply writes at a time, marking the account active after each.
const writeStep = 1 << 20

// WriteReply writes a reply a holds to w, a MiB at a time, marking a active as each piece goes out: a client that
// reads its reply, however slowly, is being served, not idle (idleEvict), as one that stopped reading is. Written
// at once, a reply that took longer than idleEvict to go out looked idle, and a waiting read evicted it mid-reply.
func (a *Account) WriteReply(w io.Writer, b []byte) (n int, err error) {
	if a == nil {
		return w.Write(b)
	}
	if a.busy.Load() { // a write within a request (a pipeline's replies past a MiB): judged by its progress
		// Served up to now: without this a request that ran long before writing (a page streamed in small
		// writes after its reads) looked idle from the moment its first write began.
		a.active.Store(time.Now().UnixNano())
		a.busy.Store(false)
		defer a.busy.Store(true)
	}
	if len(b) <= writeStep {
		return w.Write(b)
	}
	for n < len(b) && err == nil {
		var m int
		m, err = w.Write(b[n:min(n+writeStep, len(b))])
		n += m
		a.active.Store(time.Now().UnixNano())
	}
	return n, err
}

// Release gives back n bytes reserved earlier.
func (a *Account) Release(n int) {
	if a == nil || n <= 0 {
		return
	}
	a.held.Add(-int64(n))
	a.active.Store(time.Now().UnixNano())
	a.b.released(int64(n))
}

// Close releases everything a still holds and unregisters it. Safe to call more than once; the connection
// must call it (deferred) when it ends, after freeing its buffers.
func (a *Account) Close() {
	if a == nil || a.closed {
		return
	}
	a.closed = true
	n := a.held.Swap(0)
	b := a.b
	b.mu.Lock()
	delete(b.accounts, a)
	b.mu.Unlock()
	b.released(n)
	if n == 0 && a.evicted.Load() {
		b.wake() // an evicted client holding nothing (it had freed its buffer already) is gone now too
	}
}

// released returns n bytes to the budget, wakes waiting reservations, and may start a reclaim.
func (b *Budget) released(n int64) {
	if n <= 0 {
		return
	}
	used := b.used.Add(-n)
	if b.waiters.Load() > 0 {
		b.wake()
	}
	if p := b.peak.Load(); p >= reclaimMin && used <= p/4 && b.peak.CompareAndSwap(p, used) {
		b.reclaim()
	}
}

// wake tells waiting reservations to look again.
func (b *Budget) wake() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// notePeak raises the high-water mark to used.
func (b *Budget) notePeak(used int64) {
	for {
		p := b.peak.Load()
		if used <= p || b.peak.CompareAndSwap(p, used) {
			return
		}
	}
}

// reclaim runs the garbage collector twice in the background after request buffers fell to a quarter of
// their peak (of at least reclaimMin): the first collection moves the idle pooled buffers to sync.Pool's
// victim cache, the second frees them; Go's background scavenger then returns the pages to the OS. Without it
// a server that goes quiet after a burst of big requests keeps the memory until the runtime's periodic
// collection two minutes later. Collections are a second apart at least; they repeat while connections keep
// giving back memory (the rest of a burst of closes), and then the goroutine ends.
func (b *Budget) reclaim() {
	b.reclaimPending.Store(true)
	if !b.reclaiming.CompareAndSwap(false, true) {
		return // the running reclaimer sees the pending request
	}
	go func() {
		for {
			at := int64(math.MaxInt64)
			for b.reclaimPending.Swap(false) || b.used.Load() < at-reclaimMin/8 {
				at = b.used.Load()
				runtime.GC()
				runtime.GC()
				time.Sleep(time.Second)
			}
			b.reclaiming.Store(false)
			// A request made after the last look and before the Store would be lost: look once more.
			if !b.reclaimPending.Load() || !b.reclaiming.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}
