// Package redis serves the Redis command set over RESP2/RESP3 on top of the kv command layer: it turns
// commands into engine mutations, runs them (a pipeline's consecutive commands as one batch), and writes
// Redis's own replies and error texts. Wire encoding lives in package resp; sockets and limits in package server.
package redis

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/auth"
	"anykv/internal/engine"
	"anykv/internal/gctune"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
	"anykv/internal/protocol/resp"
	"anykv/internal/pubsub"
	"anykv/internal/readyield"
	"anykv/internal/server"
)

// Version is the Redis version anykv reports (INFO redis_version, HELLO): the one whose commands it follows.
const Version = "7.2.4"

// Options configure the Redis protocol handler.
type Options struct {
	// Auth is the password policy: when it requires a password, AUTH (or HELLO AUTH) must give it before
	// other commands. nil: no password. Which clients may connect at all is the server's part of the policy.
	Auth *auth.Policy
	// Databases is how many SELECTable databases exist (default 16). Database 0 is table "default", N is "dbN".
	Databases int
	// Limits bound each request (bulk length, arguments, inline line, the connection's query buffer).
	Limits resp.Limits
	// RemoteEngine: the engine is a datastore behind a URL with no read cache in front, where every read is a
	// round trip of its own, so a pipeline's reads stay in its batch (one read round trip for all) instead of
	// being answered one by one (split.go, session.readsInOneTrip).
	RemoteEngine bool
	// Budget bounds the request buffers of all connections together (maxmemory-clients); nil: no bound.
	Budget *membudget.Budget
	// AnykvVersion is reported in INFO.
	AnykvVersion string
	// Settings are extra name/value pairs CONFIG GET and INFO report (engine, fsync, dir, ...).
	Settings map[string]string
	Logger   *slog.Logger
	// Metrics receives each command's latency and outcome; nil records nothing.
	Metrics *metrics.Metrics
	// Backup writes a consistent copy of the data into a new directory (SAVE, BGSAVE, BACKUP); nil: the engine
	// cannot, and those commands say so. BackupDir is where SAVE and BGSAVE put their copies.
	Backup    func(ctx context.Context, dir string) error
	BackupDir string
	// Shutdown stops the server as SIGTERM does (SHUTDOWN); nil: SHUTDOWN answers an error.
	Shutdown func()
	// SetMaxClients applies CONFIG SET maxclients to every listener (nil: this handler's listener only).
	SetMaxClients func(n int)
	// Rewrite writes the config file with the settings in force, given those CONFIG SET changed since start
	// (CONFIG REWRITE); nil: the server runs without a config file. ConfigFile is its path, for INFO.
	Rewrite    func(changed map[string]string) error
	ConfigFile string
	// Start holds start values of run-time settings with no field of their own (see CheckStartSettings).
	Start map[string]string
	// ACLFile is Redis's aclfile: the users ACL SAVE writes and ACL LOAD reads (LoadACLFile at start); "": none.
	ACLFile string
	// NotifyKeyspaceEvents is the initial notify-keyspace-events value (Redis's class letters; "" sends none).
	// CONFIG SET changes it while running.
	NotifyKeyspaceEvents string
}

// Handler serves Redis connections. It implements server.Handler, server.Rejecter and server.Denier.
type Handler struct {
	store *kv.Store
	// commandPerBatch: the engine applies batches of one item (or one slot) only, so pipelined commands run one
	// batch each (kv.Store.CommandPerBatch).
	commandPerBatch bool
	opts            Options
	log             *slog.Logger
	started         time.Time
	runID, replID   string // INFO's run_id and master_replid: 40 random hex digits each, as Redis draws them at start
	// startupHeap is the Go heap when the handler was made (MEMORY STATS startup.allocated).
	startupHeap uint64
	nextID      atomic.Int64
	conns       atomic.Pointer[server.Counts] // set once the listener is up (SetConnCounts); nil before
	cursors     cursorTable
	collCursors cursorTable // HSCAN, SSCAN and ZSCAN's, apart: paging a big collection never evicts a SCAN's
	track       trackTable  // client-side caching's tracking table (tracking_table.go)
	broker      *pubsub.Broker
	shards      *pubsub.Broker // shard channels (SSUBSCRIBE, SPUBLISH): a namespace of their own, as in Redis
	waiters     waiters        // connections blocked in BLPOP and the like
	monitors    monitorSet     // connections in MONITOR mode (monitor.go)
	pause       pauseState     // CLIENT PAUSE (pause.go)
	scripts     scriptCache
	funcs       funcRegistry // FUNCTION LOAD's libraries (functions.go)
	saves       saves
	// notifyFlags are the keyspace event classes and channel kinds being sent (notify.go).
	notifyFlags atomic.Int32
	// sink, in a script's handler, collects the keyspace events of the script's commands, which the connection
	// that ran the script publishes once the batch is durable (scriptNotes).
	sink *[]keyEvent
	// scriptHost numbers the handler in the arguments of its scripts, which count their PUBLISHes' receivers on
	// its brokers (scriptpub.go).
	scriptHost int64
	// Command and error statistics (cmdstats.go) and the slow log (slowlog.go).
	cmdStats       []cmdStats // by slot (statSlot: a command's id, or its subcommand's slot)
	errs           errorStats
	slowlog        slowlog
	unknownCommand *metrics.Observer // the metrics of commands anykv does not know

	stats struct {
		commands, rejected, connections atomic.Int64
		// since holds the counters kept elsewhere (the listener's connections, the store's hits, misses and
		// expiries) as CONFIG RESETSTAT found them: INFO stats shows what they counted since.
		since atomic.Pointer[statsBase]
	}
	mu       sync.Mutex
	sessions map[int64]*session // for CLIENT LIST
	// limits are the request limits in force (CONFIG SET proto-max-bulk-len, client-query-buffer-limit); cfgMu
	// orders their changes and guards changed, the values CONFIG SET applied (config.go).
	limits  atomic.Pointer[resp.Limits]
	cfgMu   sync.Mutex
	changed map[string]string
	// observers holds each command's metrics by command.id, looked up once here rather than per request.
	observers []*metrics.Observer
	// idleTimeout is CONFIG SET timeout, in seconds (0: none); sweeping is set while the goroutine that closes
	// idle clients runs (idle.go).
	idleTimeout atomic.Int64
	sweeping    atomic.Bool
	latency     latencyMonitor             // LATENCY and latency-monitor-threshold (latency.go)
	tracking    latencyTracking            // latency-tracking and its percentiles (latencyhist.go)
	obuf        atomic.Pointer[obufLimits] // client-output-buffer-limit (obuf.go); nil: Redis's default
	// streamNode is stream-node-max-entries: the node size that XADD's and XTRIM's "~" trims by (streams.go).
	streamNode atomic.Int64
	acl        *aclRegistry // ACL users (acl.go)
}

// New returns a handler over store.
func New(store *kv.Store, opts Options) *Handler {
	if opts.Databases <= 0 {
		opts.Databases = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.Auth == nil {
		opts.Auth = auth.New("") // no password, until CONFIG SET requirepass gives one
	}
	h := &Handler{store: store, opts: opts, log: opts.Logger, started: time.Now(), sessions: map[int64]*session{},
		runID: randomHex(20), replID: randomHex(20),
		observers: make([]*metrics.Observer, commandIDs), commandPerBatch: store.CommandPerBatch()}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.startupHeap = ms.HeapAlloc - gctune.Held() // without the collector's ballast, as memFigures
	h.cmdStats = make([]cmdStats, len(statSlots()))
	h.initACL()
	for _, c := range commands {
		h.observers[c.id] = opts.Metrics.Command("resp", c.name) // nil-safe: a nil Metrics gives nil observers
	}
	h.unknownCommand = opts.Metrics.Command("resp", "unknown")
	lim := resp.NewParser(opts.Limits).Limits() // with the defaults filled in, as CONFIG GET shows them
	h.limits.Store(&lim)
	h.slowlog.slowerThan.Store(defaultSlowerThan)
	h.slowlog.maxLen.Store(defaultSlowlogLen)
	h.cursors.init()
	h.collCursors.init()
	h.broker, h.shards = pubsub.New(), pubsub.New()
	registerScriptHost(h)
	if f, err := ParseNotifyEvents(opts.NotifyKeyspaceEvents); err == nil { // the flag was checked by the caller
		h.notifyFlags.Store(int32(f))
	}
	h.track.maxKeys.Store(defaultTrackingMaxKeys)
	h.streamNode.Store(defaultStreamNode)
	h.applyStart()
	store.OnExpired(h.expired)
	store.OnWrites(h.otherProtocolWrote)
	return h
}

// otherProtocolWrote is the store's OnWrites hook for the batches of memcached and HTTP clients: their keyspace
// events (othersWrote), and the blocked XREADGROUPs on the keys they wrote woken, as a RESP batch wakes them
// (waiters.wake), so that a stream a memcached set replaced, or a touch with a time in the past deleted, answers
// its readers as Redis does rather than leaving them blocked. The wake waits for the readers' tries, so it runs on
// a goroutine of its own with its own copy of the keys (the hook must not block, and the caller reuses them).
func (h *Handler) otherProtocolWrote(muts []engine.Mutation, res []engine.Result) {
	h.othersWrote(muts, res)
	if h.waiters.groups.Load() == 0 {
		return
	}
	own := make([]engine.Mutation, len(muts))
	for i := range muts {
		own[i] = engine.Mutation{Op: muts[i].Op, Table: muts[i].Table, Key: bytes.Clone(muts[i].Key), Touch: muts[i].Touch,
			Target: engine.Target{Table: muts[i].Target.Table, Key: bytes.Clone(muts[i].Target.Key)}}
	}
	go h.waiters.wake(own, nil, false)
}

// SetConnCounts lets INFO report the listener's connection figures.
// It may be called while connections are already being served.
func (h *Handler) SetConnCounts(c *server.Counts) { h.conns.Store(c) }

// Reject tells a client over the connection limit, as Redis does.
func (h *Handler) Reject(c net.Conn) {
	h.stats.rejected.Add(1)
	c.Write([]byte("-ERR max number of clients reached\r\n"))
}

// table names the table behind database n.
func table(n int) string {
	if n == 0 {
		return kv.DefaultTable
	}
	return "db" + itoa(int64(n))
}

// Deny tells a client that protected mode refuses it, in Redis's words.
func (h *Handler) Deny(c net.Conn) {
	c.Write([]byte("-" + protectedModeText + "\r\n"))
}

const protectedModeText = "DENIED Redis is running in protected mode because protected mode is enabled and no " +
	"password is set for the default user. In this mode connections are only accepted from the loopback " +
	"interface. If you want to connect from external computers to anykv you may set a password with " +
	"--requirepass (ANYKV_REQUIREPASS), or bind to loopback only (the default)."

// ServeConn implements server.Handler: read what the client sent, run every complete command in it, write all
// replies in one write, repeat.
func (h *Handler) ServeConn(ctx context.Context, c net.Conn) {
	s := newSession(h, c)
	s.ctx = ctx
	if s.authed { // no password is required
		server.Authenticated(ctx)
	}
	defer s.releaseBuffers()
	h.stats.connections.Add(1)
	h.mu.Lock()
	h.sessions[s.id] = s
	h.mu.Unlock()
	defer func() {
		s.state.ending.Store(true)
		s.unwatch()
		s.releaseRestored() // (runParsed runs every batch before the connection closes)
		s.endMonitor()
		s.trackOff()
		s.closeInbox()
		s.endPubSub()
		h.mu.Lock()
		delete(h.sessions, s.id)
		h.mu.Unlock()
		close(s.gone)
	}()
	readStart := readyield.Now()
	for ctx.Err() == nil {
		s.state.reading.Store(true)
		if f := testHookBeforeRead.Load(); f != nil {
			(*f)(s.id)
		}
		n, err := s.parser.Fill(c)
		s.state.reading.Store(false)
		s.readAt = time.Now()
		if h.idleTimeout.Load() > 0 {
			s.state.lastRead.Store(h.store.Time().UnixNano())
		}
		readyield.Read(readStart, readyield.At(s.readAt), n)
		if l := h.limits.Load(); l != s.lim { // CONFIG SET changed the request limits: they apply from this read
			s.parser.SetLimits(*l)
			s.lim = l
		}
		if s.trk != nil && s.trk.on {
			s.trackBusy()
		}
		s.runOut = 0
		s.acct.Serving(true) // running what it read: not idle, however long a command takes (membudget's idleEvict)
		closing, ran := s.runParsed()
		s.acct.Serving(false)
		yielded := false
		if ran > 1 && s.w.Len() > 0 && s.sub == nil { // (a pusher writes a subscriber's or monitor's output)
			// A pipeline's replies wait for the other connections that are ready to run, so that the replies of
			// a round leave back to back, as Redis writes them after its event loop's pass: a write that wakes
			// a sleeping client costs this VM an IPI, and one wake-up then serves many replies (GET at pipeline
			// 16: +12%, docs/benchmarks.md). One command's reply is not held: at pipeline 1 it cost durable SETs.
			runtime.Gosched()
			yielded = true
		}
		if werr := s.out(); werr != nil {
			return
		}
		// Every reply is written: what reads held for them goes back (runParsed kept it for the replies out wrote;
		// an idle connection held an EXEC's or MIGRATE's until its next batch).
		s.unhold(&s.held.read)
		if s.trk != nil {
			s.trackIdle()
		}
		if closing {
			return
		}
		readStart = readyield.Now()
		if err == nil && !yielded && readyield.Yield(readStart) { // the next request is likely on its way
			runtime.Gosched()
			readStart = readyield.Now()
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !isTimeout(err) && err.Error() != "EOF" {
				h.log.Debug("connection read failed", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// runParsed executes every complete command the parser holds and reports whether the connection must close and
// how many commands it ran.
func (s *session) runParsed() (closing bool, ran int) {
	for ; ; ran++ {
		args, err := s.parser.Next()
		if err != nil {
			s.flush()
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				s.w.Error(pe.Msg)
			}
			if pe == resp.ErrQueryBufferLimit {
				s.h.log.Warn("closing a client whose request outgrew client-query-buffer-limit",
					"remote", s.conn.RemoteAddr().String(), "limit", s.parser.Limits().MaxQuery)
			}
			return true, ran
		}
		if args == nil {
			s.flush()
			s.publishState(true)
			return s.closing, ran
		}
		s.h.stats.commands.Add(1)
		s.dispatch(args)
		if s.closing {
			s.flush()
			return true, ran
		}
		// Bound what one read can make the connection hold: a batch of at most maxPending commands, and replies
		// written out once they pass replyChunk, so a huge pipeline of large GETs streams instead of piling up.
		if s.batch.Len() >= maxPending {
			s.flush()
		}
		if s.w.Len() >= replyChunk {
			if err := s.out(); err != nil {
				return true, ran
			}
		}
		// The command is done: what reads reserved covers at most its replies not yet written (an EXEC's, or a
		// batch's that replyTo or the out above wrote), not held through the commands after it.
		s.trimRead()
	}
}

// Per-connection bounds of runParsed and of transactions.
const (
	maxPending = 1024    // commands compiled into one batch before it runs
	replyChunk = 1 << 20 // reply bytes buffered before they are written out
	maxQueued  = 100000  // commands one MULTI may queue
	maxWatched = 100000  // keys one connection may WATCH
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
