package memcache

import (
	"context"
	"log/slog"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/auth"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
	"anykv/internal/server"
)

// memcachedVersion is the memcached release whose behaviour anykv follows, reported first in `version`.
const memcachedVersion = "1.6.18"

// DefaultMaxItemSize is memcached's default item size limit (-I 1m), applied to value bytes.
const DefaultMaxItemSize = 1 << 20

// Options configure a Handler.
type Options struct {
	Table       string // keyspace table; "default" (the same table RESP database 0 and HTTP use)
	MaxItemSize int    // value bytes; default 1 MiB as memcached (-I)
	// Version is anykv's own version. `version` and stats report memcachedVersion + "-anykv-" + Version
	// ("1.6.18-anykv" when empty): clients such as libmemcached parse the leading memcached version to decide
	// what the server supports, and the suffix keeps anykv's version visible.
	Version string
	Logger  *slog.Logger
	// Metrics receives each request's latency and outcome under protocol "memcache" (nil: none). A request
	// counts as failed when its reply is ERROR, CLIENT_ERROR or SERVER_ERROR.
	Metrics *metrics.Metrics
	// Auth is the password policy (nil: no password). With a password, a connection must authenticate as
	// memcached -Y does, with a set whose data is "<user> <password>", before any other command (auth.go).
	Auth *auth.Policy
	// MaxQuery bounds the unparsed bytes one connection may hold (client-query-buffer-limit; 0: no bound
	// beyond the item size and the 2 MiB key-list line). The item size limit and the key-list line are cut
	// to fit it, so a request over it is refused as one over -I is: answered, and its data discarded unread.
	MaxQuery int
	// Budget bounds the read buffers of all connections together (maxmemory-clients); nil: no bound.
	Budget *membudget.Budget
	// RemoteEngine: the engine is a datastore behind a URL with no read cache in front, where every read is a
	// round trip: a get of several keys reads them as one batch (one round trip).
	RemoteEngine bool
}

// Handler serves the memcached text, meta and binary protocols over one table of a kv.Store. It implements
// server.Handler, server.Rejecter and server.Denier. Safe for concurrent use: each connection has its own state, and the
// handler shares only counters and the pending delayed flush_all.
type Handler struct {
	store *kv.Store
	// commandPerBatch: the engine applies batches of one item (or one slot) only, so pipelined requests run one
	// batch each (kv.Store.CommandPerBatch).
	commandPerBatch bool
	remote          bool // Options.RemoteEngine
	table           string
	maxItem         int
	// maxGetLine bounds a get/gets key-list line.
	maxGetLine int
	budget     *membudget.Budget
	version    string
	log        *slog.Logger
	started    time.Time
	auth       *auth.Policy

	conns     atomic.Pointer[server.Counts]
	stats     counters
	verbosity atomic.Uint32
	// obs holds each command's metrics observer, looked up once; all nil without Options.Metrics.
	obs     [cmdBin + 1]*metrics.Observer
	metered bool

	flushMu    sync.Mutex
	flushTimer stopper
	flushGen   uint64 // identifies the pending timer, so a late-firing old one cannot forget a new one
	// afterFunc runs f after d; time.AfterFunc outside tests.
	afterFunc func(d time.Duration, f func()) stopper
	// accesses answers mg's h and l flags.
	accesses *accesses
}

// stopper is the part of *time.Timer that a delayed flush_all needs.
type stopper interface{ Stop() bool }

var (
	_ server.Handler  = (*Handler)(nil)
	_ server.Rejecter = (*Handler)(nil)
	_ server.Denier   = (*Handler)(nil)
)

// New returns a handler for store. The item size limit is the smaller of opts.MaxItemSize and the store's
// value limit, so that a value memcached clients may send is one the store accepts.
func New(store *kv.Store, opts Options) *Handler {
	if opts.Table == "" {
		opts.Table = kv.DefaultTable
	}
	if opts.MaxItemSize <= 0 {
		opts.MaxItemSize = DefaultMaxItemSize
	}
	version := memcachedVersion + "-anykv"
	if opts.Version != "" {
		version += "-" + opts.Version
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		accesses:        newAccesses(),
		store:           store,
		commandPerBatch: store.CommandPerBatch(),
		remote:          opts.RemoteEngine,
		table:           opts.Table,
		maxItem:         min(opts.MaxItemSize, store.Limits().MaxValue),
		maxGetLine:      defaultMaxGetLine,
		budget:          opts.Budget,
		version:         version,
		log:             opts.Logger,
		started:         store.Time(),
		auth:            opts.Auth,
		afterFunc: func(d time.Duration, f func()) stopper {
			return time.AfterFunc(d, f)
		},
	}
	if q := opts.MaxQuery; q > 0 {
		// A storage request holds its line (at most maxLineLen), its data and "\r\n".
		h.maxItem = max(0, min(h.maxItem, q-maxLineLen-3))
		h.maxGetLine = max(maxLineLen, min(h.maxGetLine, q-2))
	}
	if opts.Metrics != nil {
		h.metered = true
		for cmd, name := range commandNames {
			if name != "" {
				h.obs[cmd] = opts.Metrics.Command("memcache", name)
			}
		}
	}
	return h
}

// commandNames are the metrics names of the commands; malformed requests count as "invalid".
var commandNames = [cmdBin + 1]string{
	cmdError: "invalid", cmdClose: "invalid", cmdGet: "get", cmdGets: "gets", cmdGat: "gat", cmdGats: "gats",
	cmdSet: "set", cmdAdd: "add", cmdReplace: "replace", cmdAppend: "append", cmdPrepend: "prepend",
	cmdCas: "cas", cmdIncr: "incr", cmdDecr: "decr", cmdDelete: "delete", cmdTouch: "touch",
	cmdFlushAll: "flush_all", cmdVersion: "version", cmdVerbosity: "verbosity", cmdQuit: "quit",
	cmdStats: "stats", cmdMg: "mg", cmdMs: "ms", cmdMd: "md", cmdMa: "ma", cmdMn: "mn", cmdMe: "me", cmdBin: "binary",
}

// SetConnCounts gives the handler the listener's connection figures for stats.
func (h *Handler) SetConnCounts(c *server.Counts) { h.conns.Store(c) }

// Reject tells a client over the connection limit so, as memcached does.
func (h *Handler) Reject(c net.Conn) {
	c.Write([]byte("SERVER_ERROR Too many open connections\r\n"))
}

// Deny tells a client from another host that protected mode refuses it; the server then closes the connection.
func (h *Handler) Deny(c net.Conn) {
	c.Write([]byte("SERVER_ERROR " + auth.ProtectedMode + "\r\n"))
}

// ServeConn serves one connection until the client leaves, sends quit, breaks the protocol beyond repair, or
// ctx ends; requests already read are answered first.
func (h *Handler) ServeConn(ctx context.Context, c net.Conn) {
	nc := newConn(h, c)
	nc.authed = !h.auth.Required()
	if nc.authed {
		server.Authenticated(ctx)
	}
	nc.serve(ctx)
}

// scheduleFlush arranges flush_all's delayed form: the table is flushed at `at` (unix ms). Like memcached,
// which keeps one "oldest live" time, a later flush_all replaces a pending one.
func (h *Handler) scheduleFlush(at, now int64) {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	h.replaceFlushLocked()
	if at <= now {
		return
	}
	gen := h.flushGen
	h.flushTimer = h.afterFunc(time.Duration(at-now)*time.Millisecond, func() {
		h.flushMu.Lock()
		if h.flushGen != gen { // replaced after it fired: the new flush_all decides
			h.flushMu.Unlock()
			return
		}
		h.flushTimer = nil
		h.flushMu.Unlock()
		res := h.store.Apply1(context.Background(), flushMutation(h.table))
		if res.Err != nil {
			h.log.Warn("memcache: delayed flush_all failed", "err", res.Err)
		}
	})
}

// replaceFlushLocked stops the pending delayed flush_all, if any, and starts a new generation (flushMu held).
func (h *Handler) replaceFlushLocked() {
	if h.flushTimer != nil {
		h.flushTimer.Stop()
		h.flushTimer = nil
	}
	h.flushGen++
}

// flushGeneration identifies the delayed flush_all pending (or none) as an immediate flush_all is read.
func (h *Handler) flushGeneration() uint64 {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	return h.flushGen
}

// cancelFlush drops a pending delayed flush_all once an immediate one is applied: the immediate one supersedes
// the delayed one pending when it was read (gen, from flushGeneration), not one another client asked for while
// it was being applied.
func (h *Handler) cancelFlush(gen uint64) {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	if h.flushGen == gen {
		h.replaceFlushLocked()
	}
}

// flushesAtOnce reports whether a delayed flush_all's exptime, already past, flushes now: a unix time since the
// server started, as memcached's (whose items then all carry a CAS below the one it takes), where a time before
// the start (memcached counts its start 62 s early) flushes nothing. A relative delay is never past.
func (h *Handler) flushesAtOnce(exptime, now int64) bool {
	return exptime > relativeMax && expiresAt(exptime, now) <= now && exptime*1000 > h.started.UnixMilli()-62_000
}

// relativeMax is memcached's REALTIME_MAXDELTA: exptimes up to 30 days are relative, larger ones unix times.
const relativeMax = 60 * 60 * 24 * 30

// expiresAt converts a memcached exptime (seconds) to anykv's absolute unix ms, now being the store's time:
// 0 never expires, a negative value is already expired, up to 30 days counts from now, beyond is a unix time.
func expiresAt(exptime, now int64) int64 {
	switch {
	case exptime == 0:
		return 0
	case exptime < 0:
		return expiredAt(now)
	case exptime <= relativeMax:
		at, _ := kv.ExpiresIn(now, exptime, time.Second) // at most 30 days: cannot overflow
		return at
	}
	if at, ok := kv.ExpiresAt(exptime, time.Second); ok {
		return at // may lie in the past: expired at once, as in memcached
	}
	return math.MaxInt64
}

// expiredAt is an expiry that has passed at now yet is not 0 ("never").
func expiredAt(now int64) int64 { return max(now, 1) }

// ttlLeft is the remaining time to live in whole seconds, rounded up, or -1 for an item that never expires.
func ttlLeft(expires, now int64) int64 {
	if expires == 0 {
		return -1
	}
	d := expires - now
	if d <= 0 {
		return 0
	}
	return (d + 999) / 1000
}

func threads() int { return runtime.GOMAXPROCS(0) }
