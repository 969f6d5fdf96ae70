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
// memcached's gets and the HTTP API's reads share it; RESP's plain reads, which reserve several values at once
// for one batch, keep their own (protocol/redis bigHolds).
func ReadForReply[T any](ctx context.Context, a *Account, copies int, d time.Duration, read func() (T, int, error)) (v T, held int, err error) {
	v, n, err := read()
	if a == nil || err != nil || n < ReplyHold {
		return v, 0, err
	}
	var zero T
	var deadline time.Time
	prepaid := 0 // reserved by a wait, for a value of the size read before it
	for {
		want := copies * n
		if want <= prepaid || a.TryReserve(want-prepaid) == nil {
			a.Release(prepaid - want) // what a value smaller than the one waited for leaves (none if bigger)
			return v, want, nil
		}
		v = zero // hold nothing while waiting
		a.Release(prepaid)
		if deadline.IsZero() {
			deadline = time.Now().Add(d)
		}
		if err := a.ReserveWait(ctx, want, time.Until(deadline)); err != nil {
			if errors.Is(err, ErrWaitersHold) {
				v, _, err = read()
				return v, 0, err
			}
			return zero, 0, err
		}
		prepaid = want
		if v, n, err = read(); err != nil || n < ReplyHold {
			a.Release(prepaid)
			return v, 0, err
		}
	}
}
