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
	it, err := c.h.store.View(c.ctx, c.h.table, key) // copied into the reply at once
	if err != nil || len(it.Value) < membudget.ReplyHold {
		return it, err
	}
	var deadline time.Time
	prepaid := 0
	for {
		n := 2 * len(it.Value)
		if n <= prepaid || c.acct.TryReserve(n-prepaid) == nil {
			c.acct.Release(prepaid - n) // what a value smaller than the one waited for leaves (none if bigger)
			c.outHeld += n
			return it, nil
		}
		it = engine.Item{} // hold nothing while waiting
		c.acct.Release(prepaid)
		if deadline.IsZero() {
			deadline = time.Now().Add(readWait)
		}
		if err := c.acct.ReserveWait(n, time.Until(deadline)); err != nil {
			if errors.Is(err, membudget.ErrWaitersHold) {
				// Only clients themselves waiting hold the room (this one's earlier values among them): read
				// uncounted, the reply counted as it is written, rather than each wait for the others.
				return c.h.store.View(c.ctx, c.h.table, key)
			}
			if errors.Is(err, membudget.ErrEvicted) {
				c.closing = true
			}
			return engine.Item{}, errNoRoom
		}
		prepaid = n
		if it, err = c.h.store.View(c.ctx, c.h.table, key); err != nil || len(it.Value) < membudget.ReplyHold {
			c.acct.Release(prepaid)
			return it, err
		}
	}
}
