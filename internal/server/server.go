// Package server owns listeners, connection accounting, connection limits and graceful shutdown. It holds no
// command logic: each listener hands its connections to a protocol's Handler.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/auth"
)

// Handler serves one accepted connection until the peer leaves or ctx is cancelled. When ctx is cancelled the
// server also expires the connection's read deadline, so a handler blocked in Read returns; the handler then
// finishes what it already read, writes the replies and returns. The server closes the connection afterwards.
type Handler interface {
	ServeConn(ctx context.Context, c net.Conn)
}

// Rejecter is a Handler that tells a client, in its protocol, that the connection limit was reached.
type Rejecter interface {
	Reject(c net.Conn)
}

// Denier is a Handler that tells a client, in its protocol, that the exposure policy refuses it: no password is
// set and the client is not on the loopback interface (see auth.ProtectedMode).
type Denier interface {
	Deny(c net.Conn)
}

// Server runs listeners. Create with New, add listeners, then Shutdown.
type Server struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	policy *auth.Policy
	// refusing bounds the goroutines that answer refused connections; past it they are closed unanswered.
	refusing chan struct{}

	mu        sync.Mutex
	listeners []net.Listener
	https     []*http.Server
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
	closing   bool

	// total counts the client connections of all listeners; past maxTotal (the open-file limit's room, see
	// TotalLimit; 0: none) every listener refuses more, as at its own limit.
	total, maxTotal atomic.Int64

	// pending lists the connections that have not authenticated while a password is required (pending.go).
	pending pendingConns
}

// Counts holds live figures for one listener: connections open now and ever served, connections refused at the
// limit (Rejected) and by the exposure policy (Denied), and unauthenticated ones closed at the limit to make room
// (Evicted, pending.go). Max is the limit itself (0: none), which Redis's CONFIG SET maxclients changes while the
// listener runs.
type Counts struct {
	Current, Total, Rejected, Denied, Evicted atomic.Int64
	Max                                       atomic.Int64
}

// New returns a server that logs to log. Until SetAuth says otherwise it serves loopback clients only.
func New(log *slog.Logger) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{log: log, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{}),
		refusing: make(chan struct{}, maxRefusing)}
	s.maxTotal.Store(int64(TotalLimit()))
	return s
}

// SetTotalLimit replaces the limit on the connections of all listeners together (0: none); New sets it from the
// open-file limit.
func (s *Server) SetTotalLimit(n int) { s.maxTotal.Store(int64(n)) }

// TotalLimit is the limit on the connections of all listeners together (0: none).
func (s *Server) TotalLimit() int { return int(s.maxTotal.Load()) }

// SetAuth sets the exposure policy every listener applies to the connections it accepts; call it before Listen.
// This is the one place where clients from other hosts are turned away when no password is set.
func (s *Server) SetAuth(p *auth.Policy) { s.policy = p }

// bind listens on addr, with a clear error when the address is taken.
func bind(name, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot listen on %s: %w (is another server using it? choose another address with its flag)", name, addr, err)
	}
	return ln, nil
}

// Listen binds addr now and serves each connection with h in its own goroutine, at most maxConns at once
// (0: unlimited). It returns the bound address (useful with port 0) and the listener's counters.
func (s *Server) Listen(name, addr string, h Handler, maxConns int) (net.Addr, *Counts, error) {
	ln, err := bind(name, addr)
	if err != nil {
		return nil, nil, err
	}
	return ln.Addr(), s.Serve(name, ln, h, maxConns), nil
}

// ListenTLS is Listen for TLS clients: connections are served over TLS with cfg (the handshake runs on the
// connection's first read or write, in its own goroutine). counts, when not nil, are those of another listener
// of the same protocol and handler (its plain listener): the two then share one connection limit and one set of
// figures, as Redis's port and tls-port do.
func (s *Server) ListenTLS(name, addr string, cfg *tls.Config, h Handler, maxConns int, counts *Counts) (net.Addr, *Counts, error) {
	ln, err := bind(name, addr)
	if err != nil {
		return nil, nil, err
	}
	if counts == nil {
		counts = &Counts{}
	}
	return ln.Addr(), s.serve(name+"+tls", tls.NewListener(ln, cfg), h, maxConns, counts), nil
}

// Serve is Listen on a listener the caller made; the server closes it at Shutdown.
func (s *Server) Serve(name string, ln net.Listener, h Handler, maxConns int) *Counts {
	return s.serve(name, ln, h, maxConns, &Counts{})
}

func (s *Server) serve(name string, ln net.Listener, h Handler, maxConns int, counts *Counts) *Counts {
	counts.Max.Store(int64(maxConns))
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(name, ln, h, counts)
	s.log.Info("listening", "protocol", name, "addr", ln.Addr().String())
	return counts
}

func (s *Server) accept(name string, ln net.Listener, h Handler, counts *Counts) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "protocol", name, "err", err)
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: do not spin
			continue
		}
		if !s.admit(c, h, counts, false) {
			continue
		}
		if !s.track(c) {
			c.Close()
			return
		}
		counts.Current.Add(1)
		counts.Total.Add(1)
		s.total.Add(1)
		ctx := s.ctx
		if s.policy != nil && s.policy.Required() {
			ctx = s.pending.add(ctx, c, counts) // until it authenticates
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			defer Authenticated(ctx) // gone: off the pending list
			// The slot is free before the client sees the connection close, so a client that reconnects at once
			// is not refused for a connection that is already gone.
			defer counts.Current.Add(-1)
			defer s.total.Add(-1)
			defer func() { // a bug in one connection's handling must not take the whole server down
				if r := recover(); r != nil {
					s.log.Error("connection handler panicked; connection closed", "protocol", name,
						"remote", c.RemoteAddr().String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				}
			}()
			h.ServeConn(ctx, c)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeGrace is how long Shutdown waits for handlers once it closed their connections (a variable for tests).
var closeGrace = 5 * time.Second

// Shutdown stops accepting, lets every connection finish the requests it already read, and waits for them
// until ctx ends; then it closes what is left, and waits at most closeGrace more for their handlers: one busy with
// work that no longer reads or writes its connection (a memcached get of a million keys once kept SIGTERM waiting
// for minutes) must not hold the process up. Its later operations on the store, closed next, fail with ErrClosed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for _, ln := range s.listeners {
		ln.Close()
	}
	https := s.https
	for c := range s.conns {
		c.SetReadDeadline(time.Now()) // wake handlers blocked in Read
	}
	s.mu.Unlock()
	s.cancel()
	for _, hs := range https {
		hs.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			s.log.Warn("handlers still running after their connections were closed; not waiting for them", "grace", closeGrace)
		}
		return ctx.Err()
	}
}
