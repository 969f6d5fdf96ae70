package server

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPOptions bound an HTTP listener against slow and numerous clients. Zero fields take the defaults.
type HTTPOptions struct {
	// MaxConns is the most connections open at once (0: unlimited). One more is answered at once with the
	// handler's Reject (503 Service Unavailable) and closed, never left waiting.
	MaxConns int
	// HeaderTimeout bounds reading a request's head (default 10 s).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, once its head has arrived (default 30 s: 64 MiB needs about
	// 2.2 MB/s).
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next request (default 2 min).
	IdleTimeout time.Duration
}

// Defaults of HTTPOptions.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultIdleTimeout   = 2 * time.Minute
)

// ListenHTTP binds addr now and serves h with net/http. Every accepted connection passes the exposure policy and
// the connection limit first, as on Listen; h may implement Denier and Rejecter to word those refusals (they are
// sent after the request's head is read, followed by Connection: close), else a plain-text reply is sent.
func (s *Server) ListenHTTP(name, addr string, h http.Handler, o HTTPOptions) (net.Addr, *Counts, error) {
	ln, err := bind(name, addr)
	if err != nil {
		return nil, nil, err
	}
	return ln.Addr(), s.ServeHTTP(name, ln, h, o), nil
}

// ListenHTTPTLS is ListenHTTP for HTTPS clients (HTTP/1.1 over TLS with cfg). counts, when not nil, are shared
// with the plain HTTP listener, as ListenTLS shares them.
func (s *Server) ListenHTTPTLS(name, addr string, cfg *tls.Config, h http.Handler, o HTTPOptions, counts *Counts) (net.Addr, *Counts, error) {
	ln, err := bind(name, addr)
	if err != nil {
		return nil, nil, err
	}
	if counts == nil {
		counts = &Counts{}
	}
	return ln.Addr(), s.serveHTTP(name+"+tls", tls.NewListener(ln, cfg), h, o, counts), nil
}

// ServeHTTP is ListenHTTP on a listener the caller made; the server closes it at Shutdown.
func (s *Server) ServeHTTP(name string, ln net.Listener, h http.Handler, o HTTPOptions) *Counts {
	return s.serveHTTP(name, ln, h, o, &Counts{})
}

func (s *Server) serveHTTP(name string, ln net.Listener, h http.Handler, o HTTPOptions, counts *Counts) *Counts {
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	counts.Max.Store(int64(o.MaxConns))
	gl := &guardListener{Listener: ln, s: s, h: h, counts: counts}
	// ReadTimeout runs from the start of each request, so the body gets BodyTimeout after a head that took the
	// longest allowed; the handler sees the expired deadline as a failed body read.
	hs := &http.Server{Handler: h, ReadHeaderTimeout: o.HeaderTimeout, ReadTimeout: o.HeaderTimeout + o.BodyTimeout,
		IdleTimeout: o.IdleTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.https = append(s.https, hs)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := hs.Serve(gl); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.log.Error("http server stopped", "protocol", name, "err", err)
		}
	}()
	s.log.Info("listening", "protocol", name, "addr", ln.Addr().String())
	return counts
}

// guardListener hands net/http only the connections the server admits; the others it answers and closes
// itself, so Accept never blocks on the connection limit.
type guardListener struct {
	net.Listener
	s      *Server
	h      http.Handler
	counts *Counts
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.s.admit(c, l.h, l.counts, true) {
			continue
		}
		l.counts.Current.Add(1)
		l.counts.Total.Add(1)
		l.s.total.Add(1)
		return &releaseConn{Conn: c, release: func() { l.counts.Current.Add(-1); l.s.total.Add(-1) }}, nil
	}
}

// releaseConn gives its slot back once, when net/http closes it.
type releaseConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
