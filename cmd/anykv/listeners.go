package main

import (
	"flag"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // profiles on --pprof only: DefaultServeMux is served nowhere else
	"time"

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
}

func (e *listenerConfig) define(fs *flag.FlagSet, str func(*string, string, string, string), num func(*int, string, int, string)) {
	str(&e.memcacheAddr, "memcache", "127.0.0.1:11211", "memcached protocol (text and meta, TCP) listen address; empty disables it")
	num(&e.memcacheItem, "memcache-item-max", memcache.DefaultMaxItemSize, "largest value a memcached client may store, in bytes (memcached -I)")
	str(&e.httpAddr, "http", "127.0.0.1:8080", "HTTP/JSON API listen address (also /metrics and /healthz); empty disables it")
	fs.DurationVar(&e.httpBody, "http-body-timeout", server.DefaultBodyTimeout, "longest an HTTP request body may take to arrive, after its head (which gets 10s);\n"+
		"a slower request is answered 408 and its connection closed")
}

// startListeners starts every listener the configuration asks for: RESP, pprof, memcached and HTTP. m collects
// every protocol's request figures.
func startListeners(srv *server.Server, store *kv.Store, c *config, m *metrics.Metrics, log *slog.Logger) error {
	if c.respAddr != "" {
		h := redis.New(store, redis.Options{Metrics: m,
			Auth: c.auth, Databases: c.databases, AnykvVersion: version, Settings: c.settings(), Logger: log,
			Limits: resp.Limits{MaxBulk: c.maxBulk, MaxArgs: c.maxArgs, MaxInline: c.maxInl, MaxQuery: c.queryLimit},
			Budget: c.budget, NotifyKeyspaceEvents: c.notifyEvents,
		})
		_, counts, err := srv.Listen("resp", c.respAddr, h, c.maxClients)
		if err != nil {
			return err
		}
		h.SetConnCounts(counts)
		m.Connections("resp", connFigures(counts))
	}
	if c.pprofAddr != "" {
		if _, _, err := srv.ListenHTTP("pprof", c.pprofAddr, c.auth.RequireBearer(http.DefaultServeMux), server.HTTPOptions{MaxConns: 4}); err != nil {
			return err
		}
	}
	e := &c.listeners
	if e.memcacheAddr != "" {
		h := memcache.New(store, memcache.Options{Table: kv.DefaultTable, MaxItemSize: e.memcacheItem, Version: version, Logger: log,
			Metrics: m, Auth: c.auth, MaxQuery: c.queryLimit, Budget: c.budget})
		_, counts, err := srv.Listen("memcache", e.memcacheAddr, h, c.maxClients)
		if err != nil {
			return err
		}
		h.SetConnCounts(counts)
		m.Connections("memcache", connFigures(counts))
	}
	if e.httpAddr != "" {
		h := httpapi.New(store, httpapi.Options{Auth: c.auth, Logger: log, Metrics: m, Version: version})
		_, counts, err := srv.ListenHTTP("http", e.httpAddr, h, server.HTTPOptions{MaxConns: c.maxClients, BodyTimeout: e.httpBody})
		if err != nil {
			return err
		}
		m.Connections("http", connFigures(counts))
	}
	return nil
}

// connFigures lets /metrics read a listener's connection counters.
func connFigures(c *server.Counts) metrics.ConnFigures {
	return metrics.ConnFigures{Current: c.Current.Load, Total: c.Total.Load, Rejected: c.Rejected.Load, Denied: c.Denied.Load}
}
