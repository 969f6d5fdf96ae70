package memcache

import (
	"errors"
	"time"

	"anykv/internal/engine"
	"anykv/internal/membudget"
)

// A value of membudget.ReplyHold bytes or more that a get reads counts against maxmemory-clients, twice (the
// value read and its copy in the replies), from the read until the replies holding it are written (send), as
// RESP's reads do: 20 clients' get of four 60 MiB items peaked at 2.9 GB for a 1 GiB budget, and 2 of them were
// closed when their replies found no room. A read that finds none lets go of the value and waits for other
// clients' replies to go out, evicting no one (they are readers too), then reads again.

// readWait bounds that wait; past it the get answers errNoRoom.
const readWait = 30 * time.Second

// errNoRoom: the value found no room in maxmemory-clients within readWait.
var errNoRoom = errors.New("client memory: maxmemory-clients reached (values being sent to other clients); try again")

// view is View of key, for a reply that carries none of its value.
func (c *conn) view(key []byte) (engine.Item, error) { return c.h.store.View(c.ctx, c.h.table, key) }

// viewForReply is View of key for a reply, with a big value's room reserved in outHeld (released by send).
func (c *conn) viewForReply(key []byte) (engine.Item, error) {
	it, held, err := membudget.ReadForReply(c.ctx, c.acct, &c.gate, 2, readWait, func() (engine.Item, int, error) {
		it, err := c.h.store.View(c.gateCtx, c.h.table, key) // copied into the reply at once
		return it, len(it.Value), err
	})
	switch {
	case errors.Is(err, membudget.ErrEvicted):
		c.closing = true
		return it, errNoRoom
	case errors.Is(err, membudget.ErrOverBudget):
		return it, errNoRoom
	}
	c.outHeld += held
	return it, err
}
