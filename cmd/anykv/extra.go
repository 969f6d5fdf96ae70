package main

import (
	"flag"
	"log/slog"

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
}

func (e *extraConfig) define(fs *flag.FlagSet, str func(*string, string, string, string), num func(*int, string, int, string)) {
	str(&e.memcacheAddr, "memcache", "127.0.0.1:11211", "memcached protocol (text and meta, TCP) listen address; empty disables it")
	num(&e.memcacheItem, "memcache-item-max", memcache.DefaultMaxItemSize, "largest value a memcached client may store, in bytes (memcached -I)")
	str(&e.httpAddr, "http", "127.0.0.1:8080", "HTTP/JSON API listen address (also /metrics and /healthz); empty disables it")
}

// listen starts the memcached and HTTP listeners; m collects every protocol's request figures.
func (e *extraConfig) listen(srv *server.Server, store *kv.Store, c *config, m *metrics.Metrics, log *slog.Logger) error {
	if e.memcacheAddr != "" {
		h := memcache.New(store, memcache.Options{Table: "default", MaxItemSize: e.memcacheItem, Version: version, Logger: log,
			Metrics: m, MaxQuery: c.queryLimit, Budget: c.budget})
		_, counts, err := srv.Listen("memcache", e.memcacheAddr, h, c.maxClients)
		if err != nil {
			return err
		}
		h.SetConnCounts(counts)
	}
	if e.httpAddr != "" {
		h := httpapi.New(store, httpapi.Options{Password: c.password, Logger: log, Metrics: m, Version: version})
		if _, err := srv.ListenHTTP("http", e.httpAddr, h, c.maxClients); err != nil {
			return err
		}
	}
	return nil
}
