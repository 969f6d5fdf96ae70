package remote

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
)

// Group commit: while one group of batches is being read and committed, the Apply calls that arrive queue up,
// and the next group takes them all (up to GroupMuts mutations) into one read and one commit. Batches of a group
// are resolved in arrival order, each seeing what the earlier ones wrote, so the group is equivalent to applying
// them one after another at the moment of its commit, inside every caller's call: still linearizable. What it
// saves is the datastore round trips of every batch but one, and the conflicts that concurrent commits of the
// same front end would cause each other (on hot keys, and on etcd's version counter, which every commit
// checks). A conflict with another front end, or an unknown outcome, is the whole group's.

// errSolo is an attempt's signal that a batch of its group needs a view the group cannot give (a range read of
// a table an earlier batch of the group wrote): the group's batches are then applied one at a time.
var errSolo = errors.New("remote: batch must run alone")

// waiter is one Apply call: its batch, and its outcome once done is closed.
type waiter struct {
	ctx   context.Context
	b     *engine.Batch
	res   []engine.Result
	err   error
	done  chan struct{}
	taken bool // a group took it: its caller must wait for done before reusing the batch
}

// groupers holds a grouper per shard (one for an unsharded engine), made on first use.
type groupers struct {
	once sync.Once
	g    []grouper
}

// of returns shard i's grouper.
func (gs *groupers) of(e *Engine, i int) *grouper {
	gs.once.Do(func() { gs.g = make([]grouper, max(e.Shards, 1)) })
	return &gs.g[i]
}

// grouper is the queue of Apply calls waiting for the next group, and whether a goroutine serves it.
type grouper struct {
	mu    sync.Mutex
	queue []*waiter
	// serving: a goroutine serves the queue. One group is in flight at a time per shard: two or four were
	// slower on 2 cores (docs/benchmarks.md), and on etcd and Cassandra concurrent groups would only conflict on
	// the counter. Shards have counters of their own, so their groups run side by side.
	serving bool
}

// groupable reports whether b may share a group: a flush is applied alone.
func groupable(b *engine.Batch) bool {
	for i := range b.Muts {
		if b.Muts[i].Op == engine.OpFlush {
			return false
		}
	}
	return true
}

// valueBytes is the size of the values b's mutations carry.
func valueBytes(b *engine.Batch) int {
	n := 0
	for i := range b.Muts {
		n += len(b.Muts[i].Value)
	}
	return n
}

// enqueue queues w for the next group and waits for its outcome. A caller whose context ends while it is still
// queued leaves with the context's error and its batch is never applied; once a group has it, the caller waits
// for the group, so the batch is not reused while the group reads it.
func (e *Engine) enqueue(w *waiter, shard int) ([]engine.Result, error) {
	w.done = make(chan struct{})
	g := e.groups.of(e, shard)
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if !g.serving {
		g.serving = true
		go e.serve(shard)
	}
	g.mu.Unlock()
	select {
	case <-w.done:
		return w.res, w.err
	case <-w.ctx.Done():
	}
	g.mu.Lock()
	if !w.taken {
		g.queue = slices.DeleteFunc(g.queue, func(x *waiter) bool { return x == w })
		g.mu.Unlock()
		return nil, w.ctx.Err()
	}
	g.mu.Unlock()
	<-w.done
	return w.res, w.err
}

// serve runs groups of shard's queue until it is empty.
func (e *Engine) serve(shard int) {
	g := e.groups.of(e, shard)
	for {
		g.mu.Lock()
		var ws []*waiter
		muts, size := 0, 0
		for len(g.queue) > 0 {
			w := g.queue[0]
			n := valueBytes(w.b)
			if len(ws) > 0 && (muts+len(w.b.Muts) > e.GroupMuts || e.GroupBytes > 0 && size+n > e.GroupBytes) {
				break
			}
			g.queue[0] = nil
			g.queue = g.queue[1:]
			w.taken = true
			ws = append(ws, w)
			muts, size = muts+len(w.b.Muts), size+n
		}
		if len(ws) == 0 {
			g.serving, g.queue = false, nil
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		ctx, stop := groupContext(ws)
		if e.Shards > 1 {
			ctx = WithShard(ctx, shard)
		}
		e.run(ctx, ws)
		stop()
		for _, w := range ws {
			close(w.done)
		}
	}
}

// groupContext is the context a group runs under: it carries the first caller's values (the read level) and is
// cancelled once every caller's context has ended, not before: the others still want their batches applied.
func groupContext(ws []*waiter) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ws[0].ctx))
	left := int32(len(ws))
	stops := make([]func() bool, len(ws))
	for i, w := range ws {
		stops[i] = context.AfterFunc(w.ctx, func() {
			if atomic.AddInt32(&left, -1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
