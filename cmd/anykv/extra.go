package main

import (
	"flag"
	"log/slog"
	"time"

	"anykv/internal/kv"
	"anykv/internal/metrics"
	"anykv/internal/protocol/httpapi"
	"anykv/internal/protocol/memcache"
	"anykv/internal/server"
)

// extraConfig holds the listeners beside RESP: memcached and HTTP.
type extraConfig struct {
	memcacheAddr string
	memcacheItem int
	httpAddr     string
	httpBody     time.Duration
}

func (e *extraConfig) define(fs *flag.FlagSet, str func(*string, string, string, string), num func(*int, string, int, string)) {
	str(&e.memcacheAddr, "memcache", "127.0.0.1:11211", "memcached protocol (text and meta, TCP) listen address; empty disables it")
	num(&e.memcacheItem, "memcache-item-max", memcache.DefaultMaxItemSize, "largest value a memcached client may store, in bytes (memcached -I)")
	str(&e.httpAddr, "http", "127.0.0.1:8080", "HTTP/JSON API listen address (also /metrics and /healthz); empty disables it")
	fs.DurationVar(&e.httpBody, "http-body-timeout", server.DefaultBodyTimeout, "longest an HTTP request body may take to arrive, after its head (which gets 10s);\n"+
		"a slower request is answered 408 and its connection closed")
}

// listen starts the memcached and HTTP listeners; m collects every protocol's request figures.
func (e *extraConfig) listen(srv *server.Server, store *kv.Store, c *config, m *metrics.Metrics, log *slog.Logger) error {
	if e.memcacheAddr != "" {
		h := memcache.New(store, memcache.Options{Table: kv.DefaultTable, MaxItemSize: e.memcacheItem, Version: version, Logger: log,
			Metrics: m, Auth: c.auth})
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
