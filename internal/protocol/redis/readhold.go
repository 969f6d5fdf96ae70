package redis

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/membudget"
)

// What a batch's reads hold until its replies are written counts against maxmemory-clients, the values a batch
// reads from the engine (HGETALL, LRANGE, SMEMBERS, a script's reads) as readDirect's big values do: twice the
// bytes read, for the results and the replies that copy them. 20 clients' HGETALL of a 128 MiB hash had the
// process at 10.5 GB with a budget of 1 GiB, and closed 11 of them when their replies found no room.

// readHold is a connection's Batch.Reserve: it reserves from the account as the batch's reads grow. It may run
// on the engine's goroutine while the connection waits in Apply, hence the atomics.
type readHold struct {
	acct     *membudget.Account
	reserved atomic.Int64 // reserved for the batch being applied, prepaid bytes included
	want     atomic.Int64 // the whole reservation the refused call asked for
}

func (h *readHold) reserve(held int) error {
	need, have := 2*int64(held), h.reserved.Load()
	if need <= have {
		return nil
	}
	if err := h.acct.TryReserve(int(need - have)); err != nil {
		h.want.Store(need)
		return err
	}
	h.reserved.Store(need)
	return nil
}

// reservingCtx is ctx carrying the connection's readHold, made once per base context (writeCtx's are few).
func (s *session) reservingCtx(ctx context.Context) context.Context {
	if s.reserveBase != ctx || s.reserveCtx == nil {
		if s.rh == nil {
			s.rh = &readHold{acct: s.acct}
		}
		s.reserveBase, s.reserveCtx = ctx, kv.Reserving(ctx, s.rh.reserve)
	}
	return s.reserveCtx
}

// applyReserving runs apply (one attempt of a batch under ctx) with what its reads hold reserved; when the budget
// refuses them, nothing of the batch was applied: it lets go, waits until the room it asked for is free (other
// clients' replies being written), holding nothing of the batch's reads, and tries again, for up to readWait. A
// wait that only other waiting clients could end (ErrWaitersHold: what the connection holds besides, a split
// batch's first reads, is room they wait for) runs the batch uncounted instead, as before. What the batch
// reserved stays in held.read until its replies are written (releaseResults). A pipeline's batch is not retried
// (pipelined).
func (s *session) applyReserving(ctx context.Context, apply func(context.Context) ([]engine.Result, error)) ([]engine.Result, error) {
	base := ctx
	ctx = s.reservingCtx(ctx)
	var deadline time.Time
	prepaid := int64(0)
	for {
		s.rh.reserved.Store(prepaid)
		res, err := apply(ctx)
		got := s.rh.reserved.Load()
		if !errors.Is(err, engine.ErrReadBudget) {
			s.held.read += int(got)
			return res, err
		}
		s.acct.Release(int(got))
		if errors.Is(err, membudget.ErrEvicted) {
			s.closing = true
			return nil, errReadBudget
		}
		if s.pipelined {
			// A pipeline's batch of several requests: flush answers them one at a time instead (the refusal is an
			// ErrBatchTooBig), so that only the requests whose reads need the room wait for it, the others applied
			// in their turn, rather than all of them waiting and, past readWait, all failing.
			return nil, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(readWait)
		}
		want := s.rh.want.Load()
		reserved, ok := s.waitForRead(int(want), time.Until(deadline))
		switch {
		case !ok:
			return nil, errReadBudget
		case reserved:
			prepaid = want
		default:
			ctx, prepaid = base, 0 // run uncounted
		}
	}
}

// waitForRead waits up to d for want bytes of room for what reads hold (ReserveWait). reserved: they are. ok
// without reserved: only clients themselves waiting hold the room (a split batch's first reads, a queued
// RESTORE's value, a request's buffer), so the reads run uncounted, as before they were counted, rather than
// each wait for the others. !ok: refused (the connection closing, if it was the one evicted).
func (s *session) waitForRead(want int, d time.Duration) (reserved, ok bool) {
	err := s.acct.ReserveWait(context.Background(), want, d) // the connection is not read meanwhile: a client gone is seen after
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, membudget.ErrWaitersHold):
		return false, true
	case errors.Is(err, membudget.ErrEvicted):
		s.closing = true
	}
	return false, false
}

// readWait bounds how long a connection waits for room in maxmemory-clients for the values it read, while other
// connections' replies are written; past it the reads answer errReadBudget.
const readWait = 30 * time.Second

// errReadBudget answers reads whose values found no room in maxmemory-clients within readWait.
var errReadBudget = errors.New("client memory: maxmemory-clients reached (values being sent to other clients); try again")
