package server

import (
	"container/list"
	"context"
	"net"
	"sync"
)

// Connections that have not authenticated yet. While a password is required, a client that connects and never
// authenticates could hold a connection slot for as long as it likes, and enough of them kept every other client
// out at --maxclients (or at the open-file limit) without knowing the password. So such connections are listed,
// oldest first, from accept until their handler reports the client authenticated (Authenticated); a connection
// arriving at a full limit closes the oldest of them and takes its place, rather than being refused. A client that
// knows the password authenticates in its first round trip, so to crowd it out an attacker would have to open
// as many connections as the limit within that round trip.

// pendingConns lists the unauthenticated connections of a server, oldest first.
type pendingConns struct {
	mu sync.Mutex
	l  list.List // of *gate
}

// gate is one connection's entry; elem is nil once it left the list.
type gate struct {
	p      *pendingConns
	c      net.Conn
	counts *Counts
	elem   *list.Element
}

type gateKey struct{}

// add lists c, of the listener counted by counts, and returns the context its handler serves it with.
func (p *pendingConns) add(ctx context.Context, c net.Conn, counts *Counts) context.Context {
	g := &gate{p: p, c: c, counts: counts}
	p.mu.Lock()
	g.elem = p.l.PushBack(g)
	p.mu.Unlock()
	return context.WithValue(ctx, gateKey{}, g)
}

// remove takes g off the list (authenticated, or closed); it is a no-op the second time.
func (g *gate) remove() {
	g.p.mu.Lock()
	if g.elem != nil {
		g.p.l.Remove(g.elem)
		g.elem = nil
	}
	g.p.mu.Unlock()
}

// evict closes the oldest unauthenticated connection of the listener counted by counts (of any listener when
// anyListener) and reports whether there was one. Its slot is freed when its handler returns, soon after; a
// handler may take a while (a wrong password waits in the server-wide pacer), so the caller evicts only while the
// connections open, evicted ones included, stay under twice the limit: past that a newcomer is refused, and an
// attacker cannot grow the server's goroutines beyond it.
func (p *pendingConns) evict(counts *Counts, anyListener bool) bool {
	p.mu.Lock()
	var victim *gate
	for e := p.l.Front(); e != nil; e = e.Next() {
		if g := e.Value.(*gate); anyListener || g.counts == counts {
			victim = g
			break
		}
	}
	if victim != nil {
		p.l.Remove(victim.elem)
		victim.elem = nil
	}
	p.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.counts.Evicted.Add(1)
	go victim.c.Close() // a TLS connection's Close may wait up to 5 s to send close_notify: not on the accept loop
	return true
}

// Authenticated tells the server that the client of the connection served with ctx has authenticated (or needs
// no password): from then on it keeps its slot whoever else connects. Handlers call it when AUTH succeeds.
func Authenticated(ctx context.Context) {
	if g, ok := ctx.Value(gateKey{}).(*gate); ok {
		g.remove()
	}
}
