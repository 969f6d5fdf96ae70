package redis

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/membudget"
	"anykv/internal/metrics"
	"anykv/internal/protocol/errmap"
	"anykv/internal/protocol/pipeline"
	"anykv/internal/protocol/resp"
	"anykv/internal/server"
)

// replyFunc writes one command's reply from the results of its mutations.
type replyFunc func(w *resp.Writer, res []engine.Result)

// pending is one command's reply waiting for its batch: it is written from the results of the mutations the
// command added, or is an error decided before the batch ran, or (inside EXEC) an immediate command to run in its
// place.
type pending struct {
	fn     replyFunc // nil with errMsg == "": "+OK" unless the result carries an error
	errMsg string
	status string // a fixed status reply decided before the batch ran (SELECT inside EXEC)
	imm    *command
	immDB  int // the database an immediate command runs in (the one selected where EXEC queued it)
	args   [][]byte
	obs    *metrics.Observer // the command's metrics (nil: none)
	start  time.Time         // when the command was read
	// cmd is the command answered (nil: unknown), for INFO commandstats and the slow log with args; rejected
	// marks a command refused before it ran (arity, NOAUTH, ...).
	cmd      *command
	rejected bool
	silent   bool // CLIENT REPLY OFF or SKIP: the reply is not sent

	// Keyspace notifications (notify.go): the command whose events to send, its database, and how many key
	// reads bracket its mutations on each side (among its mutations).
	note   *command
	db     int
	probes int
}

// watch is a key WATCHed with the version it had (0: absent).
type watch struct {
	table   string
	key     []byte
	version uint64
}

// session is one client connection's state. It is used only by the connection's goroutine.
type session struct {
	h        *Handler
	observed observations // replies answered together, counted at once
	conn     net.Conn
	id       int64
	gone     chan struct{} // closed once the connection has ended and left h.sessions (awaitLeft)
	parser   *resp.Parser
	lim      *resp.Limits       // the handler's limits the parser enforces
	acct     *membudget.Account // the parser's share of Options.Budget
	w        *resp.Writer
	created  time.Time

	db      int
	fd      int         // the socket's descriptor, for CLIENT LIST
	state   clientState // what CLIENT LIST shows to other connections (clientlist.go)
	name    string
	libName string
	libVer  string
	authed  bool
	// user is the ACL user the connection runs as (set under h.mu: CLIENT LIST reads it); nil in a script's
	// session that needs no checks. scriptCaller is, in a script's session, the connection that ran it (ACL LOG;
	// its RESTOREs reserve from that connection's account, restoreHolder).
	user         *aclUser
	scriptCaller *session
	closing      bool
	// monitoring: the connection ran MONITOR; its output goes through sub, and it may not touch the keyspace.
	monitoring bool
	// waited is how long the command running now waited blocked (BLPOP), which the latency monitor leaves out.
	waited  time.Duration
	lastCmd string

	// The batch being built from the commands of one read: their mutations and replies, in order.
	batch pipeline.Batch[pending]
	// direct and split hold the results of readDirect and runSplit, reused batch after batch (16 pipelined GETs
	// allocated 3 KiB of results, most of the collector's work under GET pipelines); flush clears them once the
	// replies are written, so that they keep no value alive.
	direct, split resultBuf
	gate          readGate        // readDirect's, kept so that its context is made once per read context
	gateBase      context.Context // the read context gateCtx was made from (readGateCtx)
	gateCtx       context.Context

	inMulti bool
	dirty   bool       // a command failed to queue: EXEC answers EXECABORT
	queued  [][][]byte // commands queued by MULTI, copied out of the parser's buffer
	// held is what the connection keeps between requests, reserved from acct (hold): the bytes of its queued
	// MULTI commands, of its WATCHed keys, and of its subscriptions' names; and, until the batch runs, of the
	// values its RESTOREs decoded (reserveRestore).
	held struct{ multi, watch, subs, restore, read int }
	// rh reserves what a batch's reads hold (readhold.go), through reserveCtx, made from reserveBase.
	rh          *readHold
	pipelined   bool // flush is running a batch of several requests, which it can answer one at a time
	reserveBase context.Context
	reserveCtx  context.Context
	watched     []watch
	watch       *kv.Watch // the same keys in the store's touched-key registry; nil: none watched
	// execWatch is the watch EXEC's batch runs under (run applies it with kv.Store.ApplyWatched).
	execWatch  *kv.Watch
	lower      [32]byte // scratch for lower-casing command names without allocating
	lastLookup *command // the command lookup found last, compared with before the table is hashed
	counted    counted  // command statistics not yet added to the shared counters (cmdstats.go)
	// scriptShown: the commands the script answered last ran, for monitors (feedMonitors), until it is accounted.
	scriptShown []keyEvent
	// txScripts: while EXEC compiles, what its queued SCRIPT LOAD and FLUSH did to the script cache, for the
	// commands after them (txscript.go); nil otherwise.
	txScripts *txScriptView

	// CLIENT UNBLOCK (blocking.go): while the connection waits in a blocking command, the channel another
	// connection's CLIENT UNBLOCK sends on, under unblockMu; unblockedErr: the wait ended with ERROR.
	// CLIENT REPLY (conn.go): replyOff (OFF), skipNext (SKIP: the next command's reply), silent (the command being
	// run answers nothing); outs counts the writes of replies (out), so that a command's reply is found in the
	// buffer even after a blocking command sent what came before it.
	replyOff, skipNext, silent bool
	outs                       int
	// runOut is the reply bytes written out so far for the commands of the current read (a pipeline, an EXEC),
	// which client-output-buffer-limit's normal class counts with those waiting (obufCheck).
	runOut     int
	obufClosed bool // the connection was closed at its output limit

	unblockMu    sync.Mutex
	unblockCh    chan bool
	unblockedErr bool
	obs          *metrics.Observer
	cur          *command // the command being compiled, and its arguments
	curArgs      [][]byte
	// keptArgs holds copies of the outer slices of the batch's commands' arguments (keepCur): the parser reuses
	// its slice for the next command of a pipeline (the bytes stay until the batch has run), and a pending reply
	// tells the slow log, MONITOR and keyspace events its command's arguments once the batch ran. curKept is
	// curArgs's kept copy, once made.
	keptArgs [][]byte
	curKept  [][]byte
	start    time.Time
	readAt   time.Time // when the bytes being parsed were read (set only when metrics are on)
	group    uint32    // the last guard group this session used (MSETNX)
	picks    int64     // repeated random picks the batch holds (roomForPicks)
	restored int       // bytes of the values the batch's RESTOREs decoded (roomForRestore)

	ctx      context.Context // ends when the server shuts down (blocking commands stop waiting)
	noBlock  bool            // set while EXEC runs: blocking commands answer at once, as in Redis
	popped   []byte          // the key popFirst last answered from (a queued pop reports it: runQueued)
	wokeBy   string          // in a blocking command's retry, the key (waitKey) whose wake it serves; "" if none
	passed   bool            // a blocking pop's try passed over its key, which held a type it does not take
	pushHeld int             // holds of the pusher a (P)SUBSCRIBE or MONITOR took, released once it is accounted
	reads    context.Context // READONLY's context for plain reads; nil: the server default (consistency.go)

	// In a script's redis.call: its batch, which KEYS, SCAN, RANDOMKEY and DBSIZE read the keys through
	// (command.inScript), and the cursors of the handler that runs it; nil on a connection.
	tx      *engine.Tx
	cursors *cursorTable
	// inScript: the session compiles a script's redis.call (SORT then sorts a set even BY a constant, as Redis
	// does for scripts).
	inScript bool

	// Pub/sub: once the connection subscribed, its output goes through sub (see pubsub.go).
	sub *pusher
	// subsMu guards the writes of channels, patterns and shards, which ACL SETUSER reads from another goroutine
	// (its own goroutine reads them without it).
	subsMu   sync.Mutex
	channels map[string]int // subscribed names, each with the bytes it holds (s.held.subs)
	patterns map[string]int
	shards   map[string]int // shard channels (SSUBSCRIBE)

	// Client-side caching (tracking.go): the connection's tracking state (nil until CLIENT TRACKING ON), and
	// where other goroutines leave its invalidations (tracking_push.go).
	trk *tracker
	box inbox
	// trackOwn holds the invalidations of the connection's own writes until their commands' replies are written
	// (emitOwn); inExec is set while EXEC compiles and answers its transaction (its tracked reads and own
	// invalidations then follow the transaction's order: trackExecKeys, replayExec).
	trackOwn []ownInval
	inExec   bool
}

func newSession(h *Handler, c net.Conn) *session {
	s := &session{
		h: h, conn: c, id: h.nextID.Add(1), created: h.store.Time(),
		lim: h.limits.Load(), w: resp.NewWriter(2),
		authed: !h.opts.Auth.RESPRequired(), ctx: context.Background(), user: h.acl.def,
		gone: make(chan struct{}),
	}
	s.parser = resp.NewParser(*s.lim)
	s.setAuthed(s.authed)
	s.w.OnError = h.onError
	s.acct = h.opts.Budget.Open(c.RemoteAddr().String(), membudget.EvictConn(c))
	s.parser.SetAccount(s.acct)
	s.fd = connFD(c)
	s.state.redir.Store(-1)
	s.publishState(true)
	return s
}

// setAuthed records whether the client has authenticated; until it has, the parser holds it to Redis's bounds
// for unauthenticated clients (10 arguments, 16 KiB bulks), so it cannot make the server buffer much.
func (s *session) setAuthed(on bool) {
	s.authed = on
	s.parser.SetUnauthenticated(!on)
	if on && s.ctx != nil {
		server.Authenticated(s.ctx) // its slot is its own now (the server's pending connections)
	}
}

// releaseBuffers gives the parser's big buffer back and closes the budget account; ServeConn defers it.
func (s *session) releaseBuffers() {
	s.parser.Release()
	s.acct.Close()
}

func (s *session) table() string { return table(s.db) }

// add appends a mutation to the batch being built.
func (s *session) add(m engine.Mutation) { s.batch.Add(m) }

// plan registers the reply of the command that just added its mutations.
func (s *session) plan(fn replyFunc) {
	args := s.keepCur()
	p := s.batch.PlanNext()
	p.fn, p.obs, p.start, p.cmd, p.args, p.silent = fn, s.obs, s.start, s.cur, args, s.silent
}

// fail registers an error reply for the command being compiled; it must add no mutation.
func (s *session) fail(msg string) {
	args := s.keepCur()
	s.batch.Plan(pending{errMsg: msg, obs: s.obs, start: s.start, cmd: s.cur, args: args, silent: s.silent})
}

// keepArgsMax is the most arguments keepCur copies; a command with more keeps the parser's slice (Detach), so
// that a million-argument command's slice is not held twice.
const keepArgsMax = 64

// keepCur returns the arguments of the command being compiled as they stay until its batch is answered: a copy
// of the parser's outer slice in keptArgs, which the batch's first command empties (a pending reply used the
// parser's slice, and the events, MONITOR lines and slow-log entries of a pipeline's commands all named the last
// command's arguments: TestPipelinedCommandsKeepTheirArgs).
func (s *session) keepCur() [][]byte {
	if s.curKept != nil || s.curArgs == nil {
		return s.curKept
	}
	if len(s.curArgs) > keepArgsMax {
		s.parser.Detach()
		s.curKept = s.curArgs
		return s.curKept
	}
	if s.batch.Len() == 0 { // the batches before were answered: nothing refers to their copies any more
		clear(s.keptArgs)
		if cap(s.keptArgs) > maxPending*8 {
			s.keptArgs = nil
		}
		s.keptArgs = s.keptArgs[:0]
	}
	n := len(s.keptArgs)
	s.keptArgs = append(s.keptArgs, s.curArgs...)
	s.curKept = s.keptArgs[n:len(s.keptArgs):len(s.keptArgs)]
	return s.curKept
}

// lookup finds the command named by args[0], case-insensitively.
func (s *session) lookup(name []byte) *command {
	if len(name) > len(s.lower) {
		return nil
	}
	b := s.lower[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	// A pipeline mostly repeats its command: compare with the last one found before hashing the name (the map
	// lookup was 2% of a GET pipeline's CPU).
	if c := s.lastLookup; c != nil && c.name == string(b) {
		return c
	}
	c := commands[string(b)]
	if c != nil && c.name == string(b) {
		s.lastLookup = c
	}
	return c
}

// dispatch runs or queues one command.
func (s *session) dispatch(args [][]byte) {
	s.obs, s.cur, s.curArgs, s.curKept = s.h.unknownCommand, nil, args, nil
	s.start = s.readAt
	s.silent, s.skipNext = s.replyOff || s.skipNext, false
	cmd := s.lookup(args[0])
	if s.trk != nil {
		s.trackCommand(cmd)
	}
	if cmd == nil {
		name := string(args[0])
		if name == "POST" || name == "Host:" || name == "post" || name == "host:" {
			// Someone sent HTTP to the RESP port (a cross-protocol attack, as Redis calls it): drop them.
			s.h.log.Warn("HTTP request on the Redis port: closing the connection", "remote", s.conn.RemoteAddr().String())
			s.closing = true
			return
		}
		s.reject(unknownCommand(args))
		return
	}
	s.lastCmd = cmd.name
	s.state.cmd.Store(fullName(cmd, args))
	s.obs, s.cur = s.h.observers[cmd.id], cmd // latency counts from when the command was read (s.start)
	if !s.authed && cmd.flags&flagNoAuth == 0 {
		s.reject("NOAUTH Authentication required.")
		return
	}
	if (cmd.arity > 0 && len(args) != cmd.arity) || (cmd.arity < 0 && len(args) < -cmd.arity) {
		s.reject("ERR wrong number of arguments for '" + cmd.name + "' command")
		return
	}
	if msg := subArityError(cmd, args); msg != "" {
		s.reject(msg)
		return
	}
	if s.user != nil && !s.user.get().full { // ACL: before the command runs or is queued (aclcheck.go)
		if msg := s.aclRefuse(cmd, args); msg != "" {
			if cmd.name == "exec" { // a refused EXEC discards the transaction, as Redis's execCommandAbort
				msg = "EXECABORT Transaction discarded because of: " + msg
				s.endMulti()
			}
			s.reject(msg)
			return
		}
	}
	if s.subscribedContext(cmd) {
		return
	}
	if cmd.name == "module" && moduleRefused(args) {
		s.reject(moduleRefusal)
		return
	}
	if s.monitoring && monitorRefuses(cmd) {
		s.reject("ERR Replica can't interact with the keyspace")
		return
	}
	if cmd.data != nil && s.keyTooBig(cmd, args) {
		return
	}
	if s.h.pause.active.Load() { // CLIENT PAUSE (pause.go); one atomic load otherwise
		s.waitPause(cmd, args)
	}
	if s.inMulti && cmd.flags&flagTx == 0 {
		if cmd.name == "save" || cmd.name == "shutdown" { // Redis 7's no-multi commands (MONITOR: cmdMonitor)
			s.reject("ERR Command not allowed inside a transaction")
			return
		}
		if len(s.queued) >= maxQueued {
			s.reject("ERR too many commands in this transaction (" + itoa(maxQueued) + ")")
			return
		}
		size := argsSize(args)
		if !s.hold(&s.held.multi, size+heldOverhead+24*len(args)) { // and a slice header per argument
			s.reject(errHeldMemory)
			return
		}
		s.queued = append(s.queued, copyArgs(args))
		s.state.multiMem.Add(int64(size))
		s.immediate(func() { s.w.SimpleString("QUEUED") })
		return
	}
	if s.trk != nil {
		s.trackRead(cmd, args) // before it reads: a write it does not see invalidates after it
	}
	switch {
	case cmd.data != nil && (cmd.immIf == nil || !cmd.immIf(args)):
		if !s.batch.Fits(3*len(args), s.h.store.PipelineBatch()) || s.h.commandPerBatch {
			// An engine of one-item batches would refuse pipelined commands on two keys merged into one batch.
			s.flush() // keep each engine batch within the store's limit; a command's own mutations stay together
		}
		s.compile(cmd, args)
	default:
		s.flush()
		before, outs := s.w.Len(), s.outs
		cmd.imm(s, args)
		if s.outs != outs { // it sent what came before it (a blocking command): its reply starts the buffer
			before = 0
		}
		out := s.w.Bytes()
		failed, took := len(out) > before && out[before] == '-', time.Since(s.start)
		if s.silent && !cmd.pushes {
			s.w.Truncate(before)
		}
		if len(s.trackOwn) > 0 { // after the reply of EXEC, EVAL, a blocking command
			s.emitOwn(nil, nil)
		}
		s.obs.Observe(took, failed)
		if hook := testHookAccounting.Load(); hook != nil {
			(*hook)(cmd.name)
		}
		s.account(cmd, args, took, false, failed)
		s.releasePushes() // a confirmation leaves once its command is accounted
		s.counted.flush()
	}
}

// compile adds a data command's mutations and reply to the batch, bracketed by key reads when its keyspace
// events need them.
func (s *session) compile(cmd *command, args [][]byte) {
	if !s.h.notifying() {
		cmd.data(s, args)
		return
	}
	muts, replies := len(s.batch.Muts()), s.batch.Len()
	cmd.data(s, args)
	s.probes(cmd, args, muts, replies)
}

// keyTooBig rejects a data command with a key argument over the store's key limit, before it joins a batch:
// such a key cannot exist, and it must not fail the other commands of the batch.
func (s *session) keyTooBig(cmd *command, args [][]byte) bool {
	max := s.h.store.Limits().MaxKey
	if cmd.movable != nil {
		for _, i := range cmd.movable(args) {
			if len(args[i]) > max {
				s.reject("ERR key exceeds maximum allowed size (" + itoa(int64(max)) + " bytes)")
				return true
			}
		}
		return false
	}
	for i, last, step := cmd.keySpan(args); i <= last; i += step { // no slice of keys: this runs per command
		if len(args[i]) > max {
			s.reject("ERR key exceeds maximum allowed size (" + itoa(int64(max)) + " bytes)")
			return true
		}
	}
	return false
}

// reject answers an error in order, for a command refused before it ran; inside MULTI it also dooms the
// transaction.
func (s *session) reject(msg string) {
	if s.inMulti {
		s.dirty = true
	}
	s.fail(msg)
	s.batch.Last().rejected = true
}

// errHeldMemory answers a MULTI, WATCH or SUBSCRIBE whose state would take the connections past their budget.
const errHeldMemory = "ERR client memory: maxmemory-clients reached (queued commands, watched keys and subscriptions count)"

// heldOverhead is what the server keeps per queued command, watched key or subscription beside its bytes.
const heldOverhead = 64

// hold reserves n more bytes of the budget (maxmemory-clients) for state the connection keeps between requests,
// counted in *held. Redis counts a client's MULTI queue, watched keys and subscriptions in its memory too;
// without this one connection could hold gigabytes in each. False when the budget refuses: the caller answers,
// and the connection closes if another took the room by evicting it.
func (s *session) hold(held *int, n int) bool {
	if err := s.acct.Reserve(n); err != nil {
		if errors.Is(err, membudget.ErrEvicted) {
			s.closing = true
		}
		return false
	}
	*held += n
	return true
}

// unhold gives back what *held reserved.
func (s *session) unhold(held *int) {
	s.acct.Release(*held)
	*held = 0
}

// releaseRestored gives back what the values a batch's RESTOREs decoded reserved, once it has run, and starts
// their count (roomForRestore) again.
func (s *session) releaseRestored() {
	s.unhold(&s.held.restore)
	s.restored = 0
}

// immediate writes a reply now, after the replies already pending.
func (s *session) immediate(write func()) {
	s.flush()
	if !s.silent {
		write()
	}
}

// argsSize is the bytes of a command's arguments.
func argsSize(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// flush runs the batch built so far and writes its replies in order.
func (s *session) flush() {
	if s.batch.Len() == 0 {
		return
	}
	defer s.releaseResults()
	defer s.releaseRestored() // once its replies are written, the batch no longer holds restored values
	s.picks = 0               // the batch's picks (roomForPicks) leave with it
	s.pipelined = s.batch.Len() > 1
	res, err := s.run(nil)
	s.pipelined = false
	if (errors.Is(err, engine.ErrBatchTooBig) && s.batch.Len() > 1) || (errors.Is(err, engine.ErrInvalid) && hasEval(s.batch.Muts())) {
		// The batch is this server's cut of a pipeline of independent commands: apply them one by one, so that
		// only a command too big by itself fails, and a script that wrote a key it did not declare runs again
		// (applyEval).
		answered := time.Now()
		s.batch.AnswerEach(s.applyOne, func(p *pending, own []engine.Result, muts []engine.Mutation, err error) {
			s.replyTo(p, own, muts, err, answered)
		})
		s.observed.flush()
		s.counted.flush()
		return
	}
	s.writeReplies(res, err)
	if len(s.trackOwn) > 0 { // any not matched to a reply
		s.emitOwn(nil, nil)
	}
}

// applyOne applies one request's mutations for flush's one-at-a-time answers: its plain reads directly, as run
// would.
func (s *session) applyOne(muts []engine.Mutation) ([]engine.Result, error) {
	s.trimRead() // the request before's replies are written, or buffered (under replyChunk)
	for i := range muts {
		if isEval(&muts[i]) {
			return s.applyEval(muts, i)
		}
	}
	if !plainReads(muts) || s.readsInOneTrip(muts) {
		return s.apply(muts)
	}
	if res, over := s.readDirect(muts); !over {
		return res, nil
	}
	return nil, engine.ErrBatchTooBig
}

// releaseResults clears the result buffers a batch used, once its replies are written.
func (s *session) releaseResults() {
	s.trimRead()
	s.direct.release()
	s.split.release()
}

// trimRead gives back what reads reserved past the replies buffered in s.w: the values read are dropped once
// their replies are built, and the replies keep their share until out writes them (ServeConn then gives it back).
// Given back whole before out, the room went to clients waiting for it, and out's reservation for the replies,
// which evicts, could then close one of them.
func (s *session) trimRead() {
	if keep := min(s.held.read, s.w.Len()); keep < s.held.read {
		s.acct.Release(s.held.read - keep)
		s.held.read = keep
	}
}

// resultBuf is a slice of results a connection reuses from batch to batch.
type resultBuf struct {
	buf  []engine.Result
	used int // the most handed out since release
}

// get returns n results to fill in, of which none may be kept past release.
func (b *resultBuf) get(n int) []engine.Result {
	if cap(b.buf) < n {
		b.buf = make([]engine.Result, n)
	}
	b.used = max(b.used, n)
	return b.buf[:n]
}

// release clears what get handed out, so that the buffer keeps no value alive; one grown past maxKeptResults
// by a big read (an MGET of 50,000 keys) is dropped rather than kept by an idle connection.
func (b *resultBuf) release() {
	if cap(b.buf) > maxKeptResults {
		b.buf, b.used = nil, 0
		return
	}
	clear(b.buf[:b.used])
	b.used = 0
}

// maxKeptResults bounds the results a connection keeps between batches (a batch of maxPending commands fits).
const maxKeptResults = maxPending

// run applies the pending mutations, after the guards, as one batch. A batch of plain reads skips the
// engine's write path and reads directly.
func (s *session) run(guards []engine.Mutation) ([]engine.Result, error) {
	own := s.batch.Muts()
	if len(own) == 0 && len(guards) == 0 {
		return nil, nil
	}
	if guards == nil && plainReads(own) && !s.readsInOneTrip(own) {
		res, over := s.readDirect(own)
		if over {
			return nil, engine.ErrBatchTooBig // nothing happened: flush answers the requests one at a time
		}
		return res, nil
	}
	if guards == nil && s.execWatch == nil && !s.h.notifying() && !s.h.opts.RemoteEngine {
		if res, err, ok := s.runSplit(own); ok {
			return res, err
		}
	}
	muts := own
	if guards != nil {
		muts = append(guards, own...)
	}
	res, err := s.apply(muts)
	if err == nil && guards != nil {
		res = res[len(guards):]
	}
	return res, err
}

// apply applies muts as one batch (under the transaction's WATCH during EXEC) and wakes the connections blocked
// on a list or sorted set it filled.
//
// The batch's scripts restore into it as it runs, reserving and counting what they decoded in this connection's
// held.restore and restored (roomForRestore): once the engine is done with the batch, committed or not, those
// values are the store's or garbage, so that is given back here. (A script runs only while its connection waits
// here.)
func (s *session) apply(muts []engine.Mutation) ([]engine.Result, error) {
	held, restored := s.held.restore, s.restored
	res, err := s.applyReserving(s.writeCtx(), func(ctx context.Context) ([]engine.Result, error) {
		// After each run (a refused one runs again after a wait, which must not hold what it restored, nor count
		// it twice) what its scripts restored is given back.
		defer func() {
			s.acct.Release(s.held.restore - held)
			s.held.restore, s.restored = held, restored
		}()
		if s.execWatch != nil {
			return s.h.store.ApplyWatched(ctx, s.execWatch, muts)
		}
		return s.h.store.Apply(ctx, muts)
	})
	if err == nil || errors.Is(err, engine.ErrUnknownOutcome) { // the batch may have landed: a waiter looks
		s.h.waiters.wake(muts, res, false)
	}
	return res, err
}

// hasEval reports whether muts hold a script's call.
func hasEval(muts []engine.Mutation) bool {
	for i := range muts {
		if isEval(&muts[i]) {
			return true
		}
	}
	return false
}

// writeReplies writes every pending reply and empties the batch; err is a batch-level failure that every
// mutating command reports.
func (s *session) writeReplies(res []engine.Result, err error) {
	answered := time.Now() // one clock read for the batch: its replies leave together
	s.batch.Answer(res, err, func(p *pending, own []engine.Result, muts []engine.Mutation, err error) {
		s.replyTo(p, own, muts, err, answered)
	})
	s.observed.flush()
	s.counted.flush()
}

// observations gathers the metrics of consecutive replies of one command that took as long (a pipeline's GETs,
// read together and answered together), so that they are recorded at once (metrics.Observer.ObserveN).
type observations struct {
	obs     *metrics.Observer
	took    time.Duration
	n, fail int
}

// add counts one reply, recording those gathered so far first if it is another command's or took otherwise.
func (o *observations) add(obs *metrics.Observer, took time.Duration, failed bool) {
	if o.n > 0 && (obs != o.obs || took != o.took) {
		o.flush()
	}
	o.obs, o.took, o.n = obs, took, o.n+1
	if failed {
		o.fail++
	}
}

// flush records the replies gathered.
func (o *observations) flush() {
	if o.n > 0 {
		o.obs.ObserveN(o.took, o.n, o.fail)
	}
	*o = observations{}
}

// replyTo writes one request's reply from its results, counts it, and publishes its keyspace events; answered
// is when its batch was answered.
func (s *session) replyTo(p *pending, own []engine.Result, muts []engine.Mutation, err error, answered time.Time) {
	before := s.w.Len()
	s.writeReply(p, own, err)
	out := s.w.Bytes()
	failed, took := len(out) > before && (out[before] == '-' || err != nil || replyHeldErrors(own)), answered.Sub(p.start)
	s.observed.add(p.obs, took, failed)
	s.account(p.cmd, p.args, took, p.rejected, failed)
	if p.note != nil && err == nil {
		s.publishNotes(p, own, muts, s.w.Bytes()[before:])
	}
	if p.silent {
		s.w.Truncate(before)
	}
	if len(s.trackOwn) > 0 {
		s.emitOwn(muts, own)
	}
	if s.w.Len() >= replyChunk && s.conn != nil { // a script's call (no connection) reads its replies back
		s.out() // a batch of large replies streams, as runParsed's do; a failed write shows at the next
	}
}

// writeReply writes one pending reply from the results of its own mutations.
func (s *session) writeReply(p *pending, own []engine.Result, err error) {
	switch {
	case p.errMsg != "":
		s.w.Error(p.errMsg)
	case p.status != "":
		s.w.SimpleString(p.status)
	case p.imm != nil && err != nil: // the transaction's batch failed, nothing of it applied: nor does this run
		s.w.Error(errText(err))
	case p.imm != nil:
		if db := s.db; p.immDB != db {
			s.setInfo(func() { s.db = p.immDB })
			defer s.setInfo(func() { s.db = db })
		}
		p.imm.imm(s, p.args)
	case err != nil:
		s.w.Error(errText(err))
	default:
		r := own[p.probes : len(own)-p.probes]
		if p.fn != nil {
			p.fn(s.w, r)
		} else if len(r) > 0 && r[0].Err != nil {
			s.w.Error(errText(r[0].Err))
		} else {
			s.w.SimpleString("OK")
		}
	}
}

// errText maps an engine or kv error to Redis's reply text, in one table.
func errText(err error) string { return errmap.Of(err).Redis }

// unknownCommand is Redis 7's reply to a command it does not know.
func unknownCommand(args [][]byte) string {
	msg := "ERR unknown command '" + clip(args[0]) + "', with args beginning with: "
	for _, a := range args[1:] {
		if len(msg) > 1024 {
			break
		}
		msg += "'" + clip(a) + "' "
	}
	return msg
}

func clip(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
