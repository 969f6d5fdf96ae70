package membudget

import (
	"context"
	"errors"
	"time"
)

// ReadForReply calls read for a value that a reply will carry (read returns it with its size) and, when it is
// ReplyHold bytes or more, reserves copies times that size in a: the value read and the copies the reply makes
// of it, which the caller releases (held) once the reply is written. Without room it lets go of the value, waits
// up to d for other clients' replies to go out (ReserveWait, evicting no one: they are readers too) and reads
// again; when only clients themselves waiting hold the room, it reads again uncounted (held 0), rather than each
// waiting for the others. Past d, on a client evicted meanwhile, or once ctx ends (the client gone), it returns
// ReserveWait's error and no value.
//
// When g is not nil, read makes its reads with a context carrying g (engine.WithValueGate): an engine asks g
// before it copies out a big value, and the room is reserved then, so that a value without room is never
// copied (a burst of reads of a big value no longer allocates every copy before most find no room).
//
// memcached's gets and the HTTP API's reads share it; RESP's plain reads, which reserve several values at once
// for one batch, keep their own (protocol/redis bigHolds).
func ReadForReply[T any](ctx context.Context, a *Account, g *ReplyGate, copies int, d time.Duration, read func() (T, int, error)) (v T, held int, err error) {
	return readForReply(ctx, a, nil, g, copies, d, read)
}

// ReadForReplyOpening is ReadForReply for a caller that opens its account on demand (an HTTP request's): open is
// called only once a read meets a value of ReplyHold bytes or more, so that reads of small values open none and
// stay off the budget's lock, as ReplyHold keeps them off its counter. open may return nil (no budget).
func ReadForReplyOpening[T any](ctx context.Context, open func() *Account, g *ReplyGate, copies int, d time.Duration, read func() (T, int, error)) (v T, held int, err error) {
	return readForReply(ctx, nil, open, g, copies, d, read)
}

func readForReply[T any](ctx context.Context, a *Account, open func() *Account, g *ReplyGate, copies int, d time.Duration, read func() (T, int, error)) (v T, held int, err error) {
	if g == nil {
		g = &ReplyGate{} // admits everything: the reads are counted once made, as without a gate
	}
	*g = ReplyGate{a: a, open: open, copies: copies, on: a != nil || open != nil}
	defer func() { g.on = false }()
	if !g.on {
		v, _, err = read()
		return v, 0, err
	}
	var zero T
	var deadline time.Time
	for {
		g.reserved, g.refused = 0, 0
		v, n, err := read()
		if err == nil {
			g.account(n) // a big value no engine asked about (one a cache shares) opens it here, Admit otherwise
		}
		if a = g.a; a == nil { // a small value or a failed read before any was opened, or open found no budget
			return v, 0, err
		}
		if g.refused == 0 {
			if err != nil || n < ReplyHold {
				a.Release(g.reserved + g.prepaid)
				return v, 0, err
			}
			if g.reserved > 0 { // reserved as the engine asked, before the copy
				return v, g.reserved, nil
			}
			// A value no engine copied (one a cache shares), or a read without a gate: reserved once read.
			want := copies * n
			if want <= g.prepaid || a.TryReserve(want-g.prepaid) == nil {
				a.Release(g.prepaid - want) // what a value smaller than the one waited for leaves (none if bigger)
				g.prepaid = 0
				return v, want, nil
			}
		}
		want := copies * max(n, g.refused)
		v = zero // hold nothing while waiting
		// Let go of all this read reserved: a wait's room, and what Admit took for a value the read then let go
		// of (an engine may ask twice in one read, e.g. a Get run again on the next store after ErrClosed).
		a.Release(g.prepaid + g.reserved)
		g.prepaid, g.reserved = 0, 0
		if deadline.IsZero() {
			deadline = time.Now().Add(d)
		}
		if err := a.ReserveWait(ctx, want, time.Until(deadline)); err != nil {
			if errors.Is(err, ErrWaitersHold) {
				g.uncounted = true
				g.reserved, g.refused = 0, 0
				v, _, err = read()
				return v, 0, err
			}
			return zero, 0, err
		}
		g.prepaid = want
	}
}

// ReplyGate is ReadForReply's engine.ValueGate (its Admit method), kept by a connection for all its reads so that
// the context carrying it is made once. Outside ReadForReply it admits everything.
type ReplyGate struct {
	a         *Account
	open      func() *Account // opens a when a big value first needs it (ReadForReplyOpening)
	on        bool            // inside ReadForReply
	copies    int
	prepaid   int  // reserved by a wait, for a value of the size read before it
	reserved  int  // reserved by Admit for the read in progress
	refused   int  // the size of a value Admit found no room for
	uncounted bool // reading again without reserving: only waiting clients hold the room
}

// errNoRoomYet is what a read Admit refused returns; ReadForReply waits for the room and reads again.
var errNoRoomYet = errors.New("membudget: no room for the value yet")

// Admit reserves the room of a value of n bytes about to be copied out for the read in progress, from what a
// wait reserved first; errNoRoomYet when there is none.
func (g *ReplyGate) Admit(n int) error {
	if !g.on || g.uncounted || n < ReplyHold {
		return nil
	}
	if g.account(n) == nil { // open found no budget
		return nil
	}
	want := g.copies * n
	if want > g.prepaid && g.a.TryReserve(want-g.prepaid) != nil {
		g.refused = n
		return errNoRoomYet
	}
	g.a.Release(g.prepaid - want)
	g.prepaid = 0
	g.reserved += want
	return nil
}

// account is the account a value of n bytes is reserved in, opened now (open) if the value is ReplyHold bytes or
// more and none is yet; nil while there is none.
func (g *ReplyGate) account(n int) *Account {
	if g.a == nil && g.open != nil && n >= ReplyHold {
		g.a = g.open()
	}
	return g.a
}
