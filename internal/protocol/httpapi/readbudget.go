package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"anykv/internal/engine"
	"anykv/internal/membudget"
)

// A value of membudget.ReplyHold bytes or more that a reply carries (GET of an item, a page with values, Active
// Cloud DB's /get and /query) counts against maxmemory-clients from its read until the request ends (wrap closes
// its account), as RESP's and memcached's reads do: 30 clients' GET of one 60 MiB value over HTTP took 1.8 GB,
// none of it counted but while the reply was written. A read that finds no room lets go of the value and waits
// for other clients' replies to go out, evicting no one (they are readers too), then reads again.

// readWait bounds that wait; past it the request is answered errReadRoom.
const readWait = 30 * time.Second

// errReadRoom answers a read whose value found no room in maxmemory-clients within readWait.
var errReadRoom = newError(http.StatusServiceUnavailable, "unavailable",
	"maxmemory-clients reached: values being sent to other clients hold the client memory; try again")

// viewForReply is View of table/key for a reply written to w, with a big value's room reserved in the request's
// account (respWriter.prepaid, so that its write does not count it again). The read carries the writer's gate
// (engine.WithValueGate), so an engine reserves a big value's room before it copies the value out, and a value
// without room is never copied. A HEAD request reserves nothing. sends, when not nil, tells whether the reply
// carries the value of the item read (a conditional GET answered 304 or 412 does not): such a read is made first
// without the gate, which could only refuse or wait for room by the value's size, and reserves only when sent.
func (a *api) viewForReply(ctx context.Context, w http.ResponseWriter, table string, key []byte, sends func(engine.Item) bool) (engine.Item, error) {
	rw, _ := w.(*respWriter)
	if rw == nil || rw.hold == nil || rw.head {
		return a.store.View(ctx, table, key) // written as it is, never changed
	}
	var first engine.Item // a conditional read's first value, handed to ReadForReply when its reply carries it
	if sends != nil {
		it, err := a.store.View(ctx, table, key)
		if err != nil || len(it.Value) < membudget.ReplyHold || !sends(it) {
			return it, err
		}
		first = it
	}
	gctx := engine.WithValueGate(ctx, &rw.gate)
	// The request's account is opened only for a big value (rw.hold, once a read meets one): small reads stay off
	// the budget.
	it, held, err := membudget.ReadForReplyOpening(ctx, rw.hold, &rw.gate, 1, readWait, func() (engine.Item, int, error) {
		if first.Value != nil {
			v := first
			first = engine.Item{} // only v holds the value read above, which a wait lets go of
			return v, len(v.Value), nil
		}
		it, err := a.store.View(gctx, table, key)
		return it, len(it.Value), err
	})
	if errors.Is(err, membudget.ErrOverBudget) || errors.Is(err, membudget.ErrEvicted) {
		return engine.Item{}, errReadRoom
	}
	rw.prepaid += held
	return it, err
}
