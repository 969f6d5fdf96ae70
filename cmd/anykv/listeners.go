package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // profiles on --pprof only: DefaultServeMux is served nowhere else
	"runtime"
	"sync"
	"time"

	"anykv/internal/engine/remote/dial"
	"anykv/internal/kv"
	"anykv/internal/metrics"
	"anykv/internal/protocol/httpapi"
	"anykv/internal/protocol/memcache"
	"anykv/internal/protocol/redis"
	"anykv/internal/protocol/resp"
	"anykv/internal/server"
)

// listenerConfig holds the flags of the memcached and HTTP listeners (RESP's are in config, as Redis names them).
type listenerConfig struct {
	memcacheAddr string
	memcacheItem int
	httpAddr     string
	httpBody     time.Duration
	// TLS listeners beside the plain ones (Redis's tls-port), sharing their handlers and connection limits.
	respTLS, memcacheTLS, httpTLS string
	tlsFiles                      server.TLSFiles
	tls                           *tls.Config // loaded from tlsFiles when a TLS listener is asked for
}

func (e *listenerConfig) define(fs *flag.FlagSet, str func(*string, string, string, string), num func(*int, string, int, string)) {
	str(&e.memcacheAddr, "memcache", "127.0.0.1:11211", "memcached protocol (text and meta, TCP) listen address; empty disables it")
	num(&e.memcacheItem, "memcache-item-max", memcache.DefaultMaxItemSize, "largest value a memcached client may store, in bytes (memcached -I)")
	str(&e.httpAddr, "http", "127.0.0.1:8080", "HTTP/JSON API listen address (also /metrics and /healthz); empty disables it")
	fs.DurationVar(&e.httpBody, "http-body-timeout", server.DefaultBodyTimeout, "longest an HTTP request body may take to arrive, after its head (which gets 10s);\n"+
		"a slower request is answered 408 and its connection closed")
	str(&e.respTLS, "resp-tls", "", "Redis protocol over TLS listen address (as Redis's tls-port); empty disables it")
	str(&e.memcacheTLS, "memcache-tls", "", "memcached protocol over TLS listen address; empty disables it")
	str(&e.httpTLS, "http-tls", "", "HTTPS listen address for the HTTP/JSON API; empty disables it")
	str(&e.tlsFiles.Cert, "tls-cert", "", "PEM certificate chain of the TLS listeners")
	str(&e.tlsFiles.Key, "tls-key", "", "PEM private key of the TLS listeners")
	str(&e.tlsFiles.CA, "tls-ca", "", "PEM CA certificates: when set, TLS clients must present a certificate signed by one of them")
}

// loadTLS reads the TLS files when a TLS listener is asked for.
func (e *listenerConfig) loadTLS() error {
	if e.respTLS == "" && e.memcacheTLS == "" && e.httpTLS == "" {
		return nil
	}
	cfg, err := e.tlsFiles.Config()
	e.tls = cfg
	return err
}

// startListeners starts every listener the configuration asks for: pprof, memcached, HTTP, then RESP. m collects
// every protocol's request figures.
func startListeners(srv *server.Server, store *kv.Store, c *config, m *metrics.Metrics, log *slog.Logger) error {
	e := &c.listeners
	if err := e.loadTLS(); err != nil {
		return err
	}
	// The RESP handler is made, and --aclfile read, before any listener opens: the file may restrict the default
	// user, whose rules memcached, HTTP and pprof clients act under, and a listener opened first served them under
	// --requirepass alone until it was read (TestACLFileReadBeforeAnyListener).
	if c.aclFile != "" && c.respAddr == "" && e.respTLS == "" {
		return fmt.Errorf("--aclfile needs the RESP listener (--resp or --resp-tls): its users are the RESP server's")
	}
	var rh *redis.Handler
	if c.respAddr != "" || e.respTLS != "" {
		ro := redis.Options{Metrics: m,
			Auth: c.auth, Databases: c.databases, AnykvVersion: version, Settings: c.settings(), Logger: log,
			Limits: resp.Limits{MaxBulk: c.maxBulk, MaxArgs: c.maxArgs, MaxInline: c.maxInl, MaxQuery: c.queryLimit},
			Budget: c.budget, Backup: c.backup, BackupDir: c.backupDir, NotifyKeyspaceEvents: c.notifyEvents,
			Shutdown: sync.OnceFunc(func() { close(c.shutdown) }),
			Start:    c.startSettings(), SetMaxClients: c.allCounts.setMax, ConfigFile: c.configFile,
			RemoteEngine: dial.IsURL(c.engine) && !c.exclusive, // with --exclusive the read cache answers reads
		}
		if c.rewriter != nil {
			ro.Rewrite = c.rewriter.rewrite
		}
		ro.ACLFile = c.aclFile
		rh = redis.New(store, ro)
		if c.aclFile != "" {
			if err := rh.LoadACLFile(); err != nil {
				return fmt.Errorf("--aclfile: %v", err)
			}
		}
	}
	if c.pprofAddr != "" {
		// Contention profiles too (/debug/pprof/mutex and /block): one mutex contention event in 100, and
		// blocking of 10 µs or more. They cost a little, and only when profiling was asked for.
		runtime.SetMutexProfileFraction(100)
		runtime.SetBlockProfileRate(10_000)
		if _, _, err := srv.ListenHTTP("pprof", c.pprofAddr, httpapi.GuardBrowsers(c.auth.RequireBearer(http.DefaultServeMux), c.auth.Required), server.HTTPOptions{MaxConns: 4}); err != nil {
			return err
		}
	}
	if e.memcacheAddr != "" || e.memcacheTLS != "" {
		h := memcache.New(store, memcache.Options{Table: kv.DefaultTable, MaxItemSize: e.memcacheItem, Version: version, Logger: log,
			Metrics: m, Auth: c.auth, MaxQuery: c.queryLimit, Budget: c.budget, RemoteEngine: dial.IsURL(c.engine) && !c.exclusive})
		counts, err := listenBoth(srv, "memcache", e.memcacheAddr, e.memcacheTLS, e.tls, h, c.maxClients)
		if err != nil {
			return err
		}
		h.SetConnCounts(counts)
		c.allCounts.add(counts)
		m.Connections("memcache", connFigures(counts))
	}
	if e.httpAddr != "" || e.httpTLS != "" {
		h := httpapi.New(store, httpapi.Options{Auth: c.auth, Logger: log, Metrics: m, Version: version, Budget: c.budget})
		o := server.HTTPOptions{MaxConns: c.maxClients, BodyTimeout: e.httpBody}
		var counts *server.Counts
		var err error
		if e.httpAddr != "" {
			if _, counts, err = srv.ListenHTTP("http", e.httpAddr, h, o); err != nil {
				return err
			}
		}
		if e.httpTLS != "" {
			if _, counts, err = srv.ListenHTTPTLS("http", e.httpTLS, e.tls, h, o, counts); err != nil {
				return err
			}
		}
		c.allCounts.add(counts)
		m.Connections("http", connFigures(counts))
	}
	// RESP binds last: a client (or a test) that finds it accepting knows every other listener is bound too.
	if rh != nil {
		h := rh
		counts, err := listenBoth(srv, "resp", c.respAddr, e.respTLS, e.tls, h, c.maxClients)
		if err != nil {
			return err
		}
		h.SetConnCounts(counts)
		c.allCounts.add(counts)
		m.Connections("resp", connFigures(counts))
	}
	return nil
}

// listenBoth starts a protocol's plain listener (addr) and TLS listener (tlsAddr), each when its address is set,
// serving the same handler with one connection limit and one set of figures.
func listenBoth(srv *server.Server, name, addr, tlsAddr string, cfg *tls.Config, h server.Handler, maxConns int) (*server.Counts, error) {
	var counts *server.Counts
	var err error
	if addr != "" {
		if _, counts, err = srv.Listen(name, addr, h, maxConns); err != nil {
			return nil, err
		}
	}
	if tlsAddr != "" {
		if _, counts, err = srv.ListenTLS(name, tlsAddr, cfg, h, maxConns, counts); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// connFigures lets /metrics read a listener's connection counters.
func connFigures(c *server.Counts) metrics.ConnFigures {
	return metrics.ConnFigures{Current: c.Current.Load, Total: c.Total.Load, Rejected: c.Rejected.Load, Denied: c.Denied.Load,
		Evicted: c.Evicted.Load}
}
