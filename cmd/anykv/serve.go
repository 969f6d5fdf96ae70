package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/auth"
	"anykv/internal/cache"
	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/engine/pebblestore"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/dial"
	"anykv/internal/gctune"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
	"anykv/internal/protocol/redis"
	"anykv/internal/server"
)

// config is everything `anykv serve` can be told.
type config struct {
	dir, engine, fsync       string
	minFree                  string // --min-free-space, parsed by pebblestore.ParseMinFree
	respAddr                 string
	password                 string
	aclFile                  string
	maxClients               int
	maxKey, maxValue         int
	maxBulk, maxArgs, maxInl int
	cacheBytes               int64
	databases                int
	logLevel, logFormat      string
	shutdownTimeout          time.Duration
	pprofAddr                string
	readCache                int64
	writerCache              int64
	queryCache               int64
	exclusive                bool   // no other process writes the datastore: caches stay on over a URL
	consistency              string // --consistency: the read level of requests that ask for none
	backupDir                string
	// shutdown is closed by the Redis SHUTDOWN command: the server then stops as on SIGTERM.
	shutdown chan struct{}
	// backup writes a checkpoint of the pebble engine (nil for other engines): SAVE, BGSAVE, BACKUP.
	backup              func(ctx context.Context, dir string) error
	listeners           listenerConfig
	queryLimit          int
	recover, openVerify bool
	verifyInterval      time.Duration
	engineTimeout       time.Duration // bound of each request to the datastore behind --engine URL
	maxmemClients       int64
	notifyEvents        string            // notify-keyspace-events: Redis's class letters
	configFile          string            // --config: redis.conf-style settings, rewritten by CONFIG REWRITE
	slowerThan, slowLen int64             // slowlog-log-slower-than (µs), slowlog-max-len
	busyThreshold       int64             // busy-reply-threshold (ms): how long a Lua script may run
	idleTimeout         int64             // timeout (s): a Redis client idle this long is closed (0: never)
	latencyThreshold    int64             // latency-monitor-threshold (ms): LATENCY records commands this slow (0: off)
	streamNode          int64             // stream-node-max-entries: the node size of XADD's and XTRIM's "~" trims
	latencyTracking     string            // latency-tracking (yes, no): per-command latency histograms
	latencyPercentiles  string            // latency-tracking-info-percentiles: those INFO latencystats shows
	trackingMaxKeys     int64             // tracking-table-max-keys: client-side caching's bound on keys tracked
	acllogMaxLen        int64             // acllog-max-len: entries ACL LOG keeps
	obufLimits          string            // client-output-buffer-limit: the classes' output limits, as Redis's
	rewriter            *configRewriter   // nil without --config
	allCounts           countsSet         // every listener's figures: CONFIG SET maxclients changes their limit
	budget              *membudget.Budget // request buffers of all RESP and memcached connections
	// auth is the password policy built from password, shared by the server and every protocol.
	auth *auth.Policy
	// fs is the pebble engine's file system; nil is the real disk (the disk-full test injects a small one).
	fs vfs.FS
}

// newServeFlags defines the serve flags; each takes its default from ANYKV_<NAME> when set.
func newServeFlags(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("anykv serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	str := func(p *string, name, def, help string) {
		fs.StringVar(p, name, envString(name, def), help+envNote(name))
	}
	num := func(p *int, name string, def int, help string) {
		fs.IntVar(p, name, envInt(name, def), help+envNote(name))
	}
	str(&c.dir, "dir", "anykv-data", "directory of the pebble engine's data")
	str(&c.engine, "engine", "pebble", "storage engine: pebble (durable, on disk), memory (RAM only, lost on exit), or a datastore URL:\n"+
		"postgres://user:pw@host:port/db, mysql://user:pw@host:port/db (or mariadb://), redis://host:port/db, etcd://host:port,\n"+
		"cassandra://host:port/keyspace[?partition=P], memcached://host:port (batches of one key only)\n"+
		"(see docs/engines.md)")
	str(&c.fsync, "fsync", "always", "pebble durability: always (a write is acknowledged once on disk; concurrent writes share fsyncs),\n"+
		"interval (fsync at most every second, as Redis's everysec: kill -9 loses nothing acknowledged, a power loss ~1 s),\n"+
		"never (no fsync of its own: a crash, even kill -9, can lose recent acknowledged writes)")
	str(&c.minFree, "min-free-space", pebblestore.DefaultMinFree.String(), "pebble free-space reserve, bytes (1GiB, 500MB) or a share of the file system (5%):\n"+
		"below it writes are refused (Redis MISCONF, memcached SERVER_ERROR out of space, HTTP 507) and reads go on;\n"+
		"writes resume by themselves once space is freed, and the server also starts read-only on a full disk (0: no reserve)")
	str(&c.respAddr, "resp", "127.0.0.1:6379", "Redis protocol (RESP2/RESP3) listen address; empty disables it")
	str(&c.password, "requirepass", "", "password every client must give: RESP AUTH or HELLO AUTH, memcached a first set command whose data is\n"+
		"\"<user> <password>\", HTTP \"Authorization: Bearer <password>\" (also /metrics, /v1/openapi.json, --pprof).\n"+
		"Without it only loopback clients are served, on every listener (protected mode); see docs/security.md")
	str(&c.aclFile, "aclfile", "", "Redis ACL users file (\"user <name> <rules>\" lines): read at start (an error stops the server),\n"+
		"written by ACL SAVE, read again by ACL LOAD; RESP clients authenticate as its users, memcached and HTTP\n"+
		"clients as its default user (only while that user may do everything); see docs/security.md")
	num(&c.maxClients, "maxclients", 10000, "most connections per protocol")
	num(&c.maxKey, "max-key-size", kv.DefaultMaxKey, "largest key in bytes")
	num(&c.maxValue, "max-value-size", kv.DefaultMaxValue, "largest value in bytes, also after APPEND or SETRANGE")
	num(&c.maxBulk, "proto-max-bulk-len", kv.DefaultMaxValue+(1<<20), "largest RESP bulk argument in bytes")
	num(&c.maxArgs, "max-args", 1024*1024, "most arguments in one RESP command")
	num(&c.maxInl, "max-inline", 64<<10, "longest RESP inline command line in bytes")
	num(&c.queryLimit, "client-query-buffer-limit", 0, "largest request one RESP or memcached connection may hold unread, in bytes;\n"+
		"a RESP client over it gets an error and is closed, a memcached request over it is refused as too large (0: twice --proto-max-bulk-len)")
	fs.Int64Var(&c.maxmemClients, "maxmemory-clients", int64(envInt("maxmemory-clients", 1<<30)), "bytes of request buffers all RESP and memcached connections and HTTP request bodies may hold together;\n"+
		"when a buffer cannot grow, the client with the largest is closed with an error (0: unlimited)"+envNote("maxmemory-clients"))
	num(&c.databases, "databases", 16, "number of Redis databases (SELECT 0..N-1); database 0 is table \"default\", N is \"dbN\"")
	fs.Int64Var(&c.cacheBytes, "cache-size", int64(envInt("cache-size", pebblestore.DefaultCacheBytes)), "pebble block cache in bytes"+envNote("cache-size"))
	fs.Int64Var(&c.readCache, "read-cache", int64(envInt("read-cache", 256<<20)), "bytes of recently read and written items kept in memory in front of the pebble engine, and up to a quarter\n"+
		"more for answers of collection reads (LRANGE, HGET, ZRANGE, ...) (0: off)"+envNote("read-cache"))
	fs.Int64Var(&c.writerCache, "writer-cache", int64(envInt("writer-cache", pebblestore.DefaultWriterCacheBytes)), "bytes of items the pebble engine's writer keeps to resolve writes without reading the disk (0: off)"+envNote("writer-cache"))
	fs.Int64Var(&c.queryCache, "query-cache", int64(envInt("query-cache", 64<<20)), "bytes of query answers (scan pages, counts, DBSIZE) kept until a write to their table (0: off;\n"+
		"off over a datastore URL, which other front ends may write, unless --exclusive)"+envNote("query-cache"))
	fs.BoolVar(&c.exclusive, "exclusive", envBool("exclusive"), "this anykv is the only writer of the datastore behind --engine URL: keep the read and query\n"+
		"caches on over it (wrong answers if anything else writes the datastore)"+envNote("exclusive"))
	str(&c.consistency, "consistency", "linearizable", "read level of requests that ask for none: linearizable (every read sees every write acknowledged\n"+
		"before it) or serializable (a read may be served stale, by any etcd member, without a quorum round); RESP READONLY\n"+
		"and HTTP ?consistency= choose per connection or request; memcached uses this (see docs/scale.md)")
	str(&c.backupDir, "backup-dir", "", "where SAVE and BGSAVE write their copies of the data (default: --dir with \"-backups\" appended)")
	str(&c.notifyEvents, "notify-keyspace-events", "", "Redis keyspace notifications to publish, in Redis's letters (e.g. KEA: every event on both\n"+
		"channel kinds; empty: none); CONFIG SET notify-keyspace-events changes it while running")
	str(&c.configFile, "config", "", "a config file of \"name value\" lines as redis.conf, with these flags' names (e.g. maxclients 100,\n"+
		"requirepass \"a b\", fsync interval); flags on the command line win over it; CONFIG REWRITE writes the settings in force back into it")
	fs.Int64Var(&c.slowerThan, "slowlog-log-slower-than", int64(envInt("slowlog-log-slower-than", 10000)), "SLOWLOG records commands that took at least this many microseconds (negative: none)"+envNote("slowlog-log-slower-than"))
	fs.Int64Var(&c.slowLen, "slowlog-max-len", int64(envInt("slowlog-max-len", 128)), "most commands SLOWLOG keeps"+envNote("slowlog-max-len"))
	fs.Int64Var(&c.busyThreshold, "busy-reply-threshold", int64(envInt("busy-reply-threshold", 5000)), "milliseconds a Lua script may run before it is stopped (Redis's busy-reply-threshold, lua-time-limit; 0: never)"+envNote("busy-reply-threshold"))
	fs.Int64Var(&c.idleTimeout, "timeout", int64(envInt("timeout", 0)), "seconds a Redis client may stay idle before it is closed (Redis's timeout; 0: never; subscribers, monitors and blocked clients are not closed)"+envNote("timeout"))
	fs.Int64Var(&c.latencyThreshold, "latency-monitor-threshold", int64(envInt("latency-monitor-threshold", 0)), "LATENCY records the commands that took at least this many milliseconds (Redis's latency monitor; 0: off)"+envNote("latency-monitor-threshold"))
	fs.Int64Var(&c.streamNode, "stream-node-max-entries", int64(envInt("stream-node-max-entries", 100)), "XADD's and XTRIM's MAXLEN ~ and MINID ~ trim streams only in whole nodes of this many entries (Redis's stream-node-max-entries; 0: 100)"+envNote("stream-node-max-entries"))
	str(&c.latencyTracking, "latency-tracking", "yes", "keep a latency histogram per command for INFO latencystats and LATENCY HISTOGRAM (Redis's latency-tracking: yes or no)")
	str(&c.latencyPercentiles, "latency-tracking-info-percentiles", "50 99 99.9", "the percentiles INFO latencystats shows, apart by spaces (Redis's latency-tracking-info-percentiles)")
	fs.Int64Var(&c.trackingMaxKeys, "tracking-table-max-keys", int64(envInt("tracking-table-max-keys", 1000000)), "most keys client-side caching (CLIENT TRACKING) remembers; past it the oldest are invalidated (0: no bound)"+envNote("tracking-table-max-keys"))
	str(&c.obufLimits, "client-output-buffer-limit", "", "output limits per class of client, as Redis's: groups of class (normal, replica, pubsub), hard limit,\n"+
		"soft limit and soft seconds, e.g. \"pubsub 64mb 16mb 90\" (default: normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60)")
	fs.Int64Var(&c.acllogMaxLen, "acllog-max-len", int64(envInt("acllog-max-len", 128)), "most entries ACL LOG keeps"+envNote("acllog-max-len"))
	str(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	str(&c.logFormat, "log-format", "text", "log format: text or json")
	str(&c.pprofAddr, "pprof", "", "serve Go's net/http/pprof profiles on this address (for profiling; off by default)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for connections to finish (then it closes them, and waits 5 s more at most)")
	fs.DurationVar(&c.engineTimeout, "engine-timeout", remote.DefaultTimeout, "longest a request to the datastore behind --engine URL may go unanswered (each read,\n"+
		"each try of a batch's read and commit, and each round trip of a scan, table list or expiry sweep: a page, not the whole scan)\n"+
		"before it fails with an error; a commit cut off so is reported as of unknown outcome (negative: no bound)")
	fs.BoolVar(&c.recover, "recover", false, "open a damaged pebble store anyway (it is refused otherwise) and log every file dropped and what was\n"+
		"lost; run 'anykv verify DIR' first, and keep a copy of the directory (see docs/durability.md)")
	fs.BoolVar(&c.openVerify, "verify-at-open", true, "check every sstable block checksum when the pebble store opens (~0.2 s per 150 MB)")
	fs.DurationVar(&c.verifyInterval, "verify-interval", time.Hour, "how often the pebble engine checks every sstable block checksum in the background,\n"+
		"reported in INFO (engine_verify_*) and /metrics (0: never)")
	c.listeners.define(fs, str, num)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: anykv serve [flags]\n\nRuns the anykv server. Flags (environment variable in brackets):\n\n")
		fs.PrintDefaults()
	}
	return fs
}

// envName maps a flag name to its environment variable: max-key-size → ANYKV_MAX_KEY_SIZE.
func envName(flag string) string {
	return "ANYKV_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func envNote(flag string) string { return " [" + envName(flag) + "]" }

func envString(flag, def string) string {
	if v, ok := os.LookupEnv(envName(flag)); ok {
		return v
	}
	return def
}

func envInt(flag string, def int) int {
	if v, ok := os.LookupEnv(envName(flag)); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// envBool reads a boolean flag's variable as strconv.ParseBool does (1, true, ...); unset or unreadable is false.
func envBool(flag string) bool {
	b, _ := strconv.ParseBool(os.Getenv(envName(flag)))
	return b
}

func newLogger(c *config, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	o := &slog.HandlerOptions{Level: lvl}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", c.logFormat)
}

// openEngine opens the configured engine.
func openEngine(c *config, log *slog.Logger) (engine.Engine, error) {
	if dial.IsURL(c.engine) { // no read cache unless exclusive: other front ends may write the datastore
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		e, err := dial.Open(ctx, c.engine)
		if t, ok := e.(interface{ SetTimeout(time.Duration) }); ok && c.engineTimeout != 0 {
			t.SetTimeout(c.engineTimeout)
		}
		if w, ok := e.(interface{ Warning() string }); ok && w.Warning() != "" {
			log.Warn(w.Warning()) // e.g. memcached evicting, and so losing, items
		}
		if err != nil || !c.exclusive || c.readCache <= 0 {
			return e, err
		}
		return cache.New(e, c.readCache), nil
	}
	switch c.engine {
	case "memory":
		return memstore.New(), nil
	case "pebble":
		var mode pebblestore.SyncMode
		switch c.fsync {
		case "always":
			mode = pebblestore.SyncAlways
		case "interval":
			mode = pebblestore.SyncInterval
		case "never":
			mode = pebblestore.SyncNever
		default:
			return nil, fmt.Errorf("--fsync must be always, interval or never, not %q", c.fsync)
		}
		minFree, err := pebblestore.ParseMinFree(c.minFree)
		if err != nil {
			return nil, fmt.Errorf("--min-free-space: %w", err)
		}
		ps, err := pebblestore.OpenServing(pebblestore.Options{Dir: c.dir, Sync: mode, CacheBytes: c.cacheBytes, Logger: log, WriterCacheBytes: cmp.Or(c.writerCache, -1),
			MinFreeSpace: minFree, FS: c.fs, Recover: c.recover, SkipOpenVerify: !c.openVerify, VerifyInterval: c.verifyInterval})
		if err != nil {
			return nil, err
		}
		c.backup = ps.Checkpoint
		if c.backupDir == "" {
			c.backupDir = filepath.Clean(c.dir) + "-backups"
		}
		// Absolute, since BACKUP's directories are (a remote client's must lie under it), and SAVE's names are
		// then the same whatever the working directory later.
		if abs, err := filepath.Abs(c.backupDir); err == nil {
			c.backupDir = abs
		}
		if c.readCache <= 0 {
			return ps, nil
		}
		return cache.New(ps, c.readCache), nil
	}
	return nil, fmt.Errorf("--engine must be pebble, memory or a datastore URL (postgres://, mysql://, mariadb://, redis://, etcd://, cassandra://, memcached://), not %q", c.engine)
}

// settings are what CONFIG GET and INFO report about this process.
func (c *config) settings() map[string]string {
	appendonly, appendfsync := "no", "no"
	if c.engine == "pebble" {
		appendonly = "yes"
		appendfsync = map[string]string{"always": "always", "interval": "everysec", "never": "no"}[c.fsync]
	}
	_, port, _ := net.SplitHostPort(c.respAddr)
	return map[string]string{
		"engine": dial.Redact(c.engine), "fsync": c.fsync, "dir": c.dir, "bind": c.respAddr, "port": port,
		"maxclients": strconv.Itoa(c.maxClients), "appendonly": appendonly, "appendfsync": appendfsync,
		"consistency": c.consistency,
	}
}

// startSettings are the Redis run-time settings the handler takes at start as CONFIG SET would set them.
func (c *config) startSettings() map[string]string {
	return map[string]string{"slowlog-log-slower-than": strconv.FormatInt(c.slowerThan, 10),
		"slowlog-max-len": strconv.FormatInt(c.slowLen, 10), "busy-reply-threshold": strconv.FormatInt(c.busyThreshold, 10),
		"timeout": strconv.FormatInt(c.idleTimeout, 10), "latency-monitor-threshold": strconv.FormatInt(c.latencyThreshold, 10),
		"stream-node-max-entries": strconv.FormatInt(c.streamNode, 10), "latency-tracking": c.latencyTracking,
		"latency-tracking-info-percentiles": c.latencyPercentiles,
		"tracking-table-max-keys":           strconv.FormatInt(c.trackingMaxKeys, 10),
		"acllog-max-len":                    strconv.FormatInt(c.acllogMaxLen, 10),
		"client-output-buffer-limit":        c.obufLimits}
}

// countsSet is every listener's connection figures, so CONFIG SET maxclients reaches them all.
type countsSet struct {
	mu   sync.Mutex
	list []*server.Counts
}

func (s *countsSet) add(c *server.Counts) {
	s.mu.Lock()
	s.list = append(s.list, c)
	s.mu.Unlock()
}

// setMax changes every listener's connection limit.
func (s *countsSet) setMax(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.list {
		c.Max.Store(int64(n))
	}
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c config
	fs := newServeFlags(&c, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "anykv serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if c.configFile != "" {
		if abs, err := filepath.Abs(c.configFile); err == nil {
			c.configFile = abs // INFO shows it absolute, as Redis does
		}
		if err := applyConfigFile(fs, c.configFile); err != nil {
			fmt.Fprintln(stderr, "anykv serve: --config:", err)
			return 2
		}
		c.rewriter = newConfigRewriter(fs, c.configFile)
	}
	if err := redis.CheckStartSettings(c.startSettings()); err != nil {
		fmt.Fprintln(stderr, "anykv serve:", err)
		return 2
	}
	if _, err := redis.ParseNotifyEvents(c.notifyEvents); err != nil {
		fmt.Fprintln(stderr, "anykv serve: --notify-keyspace-events:", err)
		return 2
	}
	log, err := newLogger(&c, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "anykv serve:", err)
		return 2
	}
	slog.SetDefault(log) // what packages without a logger of their own log (engine.Resolve's recovered panics) keeps --log-format
	if err := runServer(ctx, &c, log); err != nil {
		log.Error("anykv stopped", "err", err)
		fmt.Fprintln(stderr, "anykv serve:", err)
		if errors.Is(err, pebblestore.ErrDamaged) {
			fmt.Fprintf(stderr, "The store in %s is damaged: the server did not start. Run `anykv verify %s` for a full check.\n%s",
				c.dir, c.dir, damageAdvice)
		}
		return 1
	}
	return 0
}

// runServer opens the engine, starts the listeners, and on ctx's end shuts down gracefully.
func runServer(ctx context.Context, c *config, log *slog.Logger) error {
	started := time.Now()
	gctune.Start() // a floor under the collector's heap goal (internal/gctune)
	level, err := engine.ParseConsistency(c.consistency)
	if err != nil {
		return fmt.Errorf("--consistency: %w", err)
	}
	c.consistency = level.String() // as CONFIG GET shows it
	eng, err := openEngine(c, log)
	if err != nil {
		return err
	}
	if err := engine.CheckConsistency(eng, dial.Redact(c.engine), level); err != nil {
		eng.Close()
		return fmt.Errorf("--consistency: %w", err)
	}
	kopts := kv.Options{Limits: kv.Limits{MaxKey: c.maxKey, MaxValue: c.maxValue}, Logger: log, QueryCacheBytes: c.queryCache,
		Consistency: level, EngineName: dial.Redact(c.engine)}
	switch {
	case dial.IsURL(c.engine) && c.exclusive:
		kopts.SweepInterval = 5 * time.Second // a sweep step reads over the network: less often
		log.Info("read and query caches are on over the datastore URL (--exclusive): nothing else may write it")
	case dial.IsURL(c.engine):
		kopts.SweepInterval = 5 * time.Second
		// Other front ends may write the datastore, and the caches would not hear of it.
		kopts.QueryCacheBytes = 0
		log.Info("read and query caches are off over a datastore URL: other anykv front ends may write it (--exclusive keeps them)")
	}
	store := kv.New(eng, kopts)
	log.Info("engine open", "engine", dial.Redact(c.engine), "dir", c.dir, "fsync", c.fsync, "consistency", level.String(),
		"took", time.Since(started).String())
	srv := server.New(log)
	if n := srv.TotalLimit(); n > 0 && n < 3*c.maxClients {
		log.Info("client connections of all protocols together are limited by the open-file limit (ulimit -n)",
			"max", n, "maxclients", c.maxClients)
	}
	c.auth = auth.New(c.password)
	srv.SetAuth(c.auth)
	fail := func(err error) error {
		srv.Shutdown(context.Background())
		store.Close()
		return err
	}
	m := metrics.New(store)
	if c.queryLimit <= 0 {
		c.queryLimit = 2 * c.maxBulk
	}
	c.budget = membudget.New(c.maxmemClients, log)
	c.shutdown = make(chan struct{})
	if err := startListeners(srv, store, c, m, log); err != nil {
		return fail(err)
	}
	log.Info("anykv ready", "version", version, "took", time.Since(started).String())
	select {
	case <-ctx.Done():
	case <-c.shutdown:
		log.Info("SHUTDOWN asked by a client")
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("connections still open at the shutdown timeout were closed", "err", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing the engine: %w", err)
	}
	log.Info("anykv stopped cleanly")
	return nil
}
