package memcache

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"time"

	"anykv/internal/engine"
	"anykv/internal/membudget"
	"anykv/internal/protocol/pipeline"
	"anykv/internal/readyield"
)

const (
	readBufSize = 16 << 10 // a connection's read buffer; grows for large values and key lists only
	minRead     = 4 << 10  // the least free space worth a read while a request still lacks more
	maxOutHold  = 1 << 20  // replies beyond this are written before the read buffer is finished
	maxPipeline = 1024     // writes applied as one batch at most
	// maxValueWrites bounds the writes of one batch whose results carry their item's value (gat and binary GAT
	// keys, mg with T, N or R): the values are held until the batch is answered, so this many at most, as get
	// streams its values one by one.
	maxValueWrites = 16
)

// conn is one client connection. The loop reads what the socket has, parses every complete request in it,
// gathers consecutive writes into one kv.Store.Apply (one engine batch, so one fsync for a whole pipeline; the
// batching is internal/protocol/pipeline's, shared with the Redis front end), answers everything in request
// order, and sends all replies of the round in one Write.
//
// Buffer ownership: requests and pending mutations point into buf (and the parser's arena); buf is only
// compacted or grown after flush has applied and answered all of them.
type conn struct {
	h   *Handler
	nc  net.Conn
	ctx context.Context // never cancelled: requests already read are finished during shutdown
	p   *parser
	// gate admits the big values viewForReply reads before the engine copies them; gateCtx is ctx carrying it.
	gate    membudget.ReplyGate
	gateCtx context.Context

	buf  []byte
	r, w int // unparsed input is buf[r:w]
	out  []byte
	// outHeld is what big values copied into out reserved from acct (viewForReply), released once out is sent.
	outHeld int
	// small is the connection's own read buffer. While a request does not fit it, buf is a big one from
	// acct's pools (big is true), given back once the unparsed input fits small again.
	small []byte
	big   bool
	acct  *membudget.Account

	batch   pipeline.Batch[pending] // the pending writes and the requests awaiting their replies, in order
	st      localCounters
	closing bool
	// valueWrites counts the pending batch's writes that answer with a value (maxValueWrites); gatFailed: a
	// part of a gat failed and ended its reply, so its later parts are neither applied nor answered (textWrite).
	valueWrites int
	gatFailed   bool
	authed      bool      // the password was given, or none is required
	sniffed     bool      // the first byte has been seen: it tells the binary protocol from the text one
	bin         bool      // the connection speaks the binary protocol (binary.go, binconn.go)
	now         int64     // the store's time when the round began, for converting exptimes
	readAt      time.Time // when the round's bytes were read (metered only): its requests' latency counts from it
}

// pending is a request whose reply waits for the batch (it may own no mutation: a request that needs no write
// but must be answered in order).
type pending struct {
	req   request
	start time.Time // when the request was read, for metrics (zero without them)
}

func newConn(h *Handler, nc net.Conn) *conn {
	small := make([]byte, readBufSize)
	return &conn{
		h:     h,
		nc:    nc,
		p:     newParser(h.store.Limits().MaxKey, h.maxItem, h.maxGetLine),
		buf:   small,
		small: small,
		out:   make([]byte, 0, readBufSize),
		acct:  h.budget.Open(nc.RemoteAddr().String(), membudget.EvictConn(nc)),
	}
}

// detached carries ctx's values without its cancellation, as context.WithoutCancel does; that one's Value
// allocates on every call (its value receiver becomes an interface), and every read of a request asks for one.
type detached struct{ context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }

func (c *conn) serve(ctx context.Context) {
	c.ctx = &detached{ctx}
	c.gateCtx = engine.WithValueGate(c.ctx, &c.gate)
	defer c.h.stats.add(&c.st)
	defer c.releaseBuffers()
	readStart := readyield.Now()
	for {
		yielded := false
		n, err := c.nc.Read(c.buf[c.w:])
		readyield.Read(readStart, readyield.Now(), n)
		c.w += n
		c.st[sBytesRead] += int64(n)
		if n > 0 {
			if c.big {
				c.acct.Progress(n) // a big request coming in slowly but steadily is not idle (membudget's idleEvict)
			}
			c.now = c.h.store.Now()
			if c.h.metered {
				c.readAt = time.Now()
			}
			c.acct.Serving(true) // running what it read: not idle, however long a request takes (membudget's idleEvict)
			handled := c.process()
			c.acct.Serving(false)
			if handled > 1 && len(c.out) > 0 {
				runtime.Gosched() // replies of a pipeline leave with the round's others, as RESP's do (ServeConn)
				yielded = true
			}
		}
		if err != nil && c.acct.Evicted() {
			c.line(errOutOfMemory) // evicted to make room for another client's request
			c.closing = true
		}
		if !c.send() || c.closing || err != nil {
			return
		}
		c.h.stats.add(&c.st)
		if !c.compact() {
			c.line(errOutOfMemory)
			c.send()
			return
		}
		readStart = readyield.Now()
		if !yielded && readyield.Yield(readStart) { // the next request is likely on its way
			runtime.Gosched()
			readStart = readyield.Now()
		}
	}
}

// errOutOfMemory is memcached's reply when it cannot grow a connection's read buffer; anykv sends it when the
// request buffers of all connections reached --maxmemory-clients and this connection's is the largest, or it
// was evicted to make room for another's, and then closes the connection as memcached does.
const errOutOfMemory = "SERVER_ERROR out of memory reading request"

// releaseBuffers gives a big read buffer back (dropping what it held) and closes the budget account; serve
// defers it.
func (c *conn) releaseBuffers() {
	if c.big {
		c.acct.Drop(c.buf)
		c.buf, c.big = c.small, false
		c.r, c.w = 0, 0
	}
	c.acct.Close()
}

// process handles every complete request in the buffer, then applies what is still pending; it returns how
// many requests it handled.
func (c *conn) process() (handled int) {
	if !c.sniffed && c.w > c.r { // memcached tells the protocols apart by a connection's first byte
		c.sniffed, c.bin = true, c.buf[c.r] == binaryRequestMagic
	}
	for !c.closing {
		if c.authed && !c.h.auth.DefaultUnrestricted() {
			// ACL rules restricted or disabled the default user since this client authenticated (or was let in
			// without a password): it is refused from now on, as a new client is (docs/security.md, ACL users).
			c.authed = false
		}
		if !c.authed && !c.bin {
			if !c.authenticate() {
				break
			}
			continue
		}
		var req request
		var n int
		var st status
		if c.bin {
			c.p.unauthed = !c.authed
			n, st = c.p.nextBinary(c.buf[c.r:c.w], &req)
		} else {
			n, st = c.p.next(c.buf[c.r:c.w], &req)
		}
		if st == needMore {
			break
		}
		c.r += n
		if st == skipped {
			continue
		}
		handled++
		if req.cmd == cmdBin {
			c.handleBinary(&req)
		} else {
			c.handle(&req)
		}
		if len(c.out) > maxOutHold {
			c.flush()
			if !c.send() {
				c.closing = true
			}
		}
	}
	c.flush()
	// Only now may the arena's decoded keys be overwritten: every request of the round is answered. A flush
	// inside the round (a full batch, a read, an engine of one-item batches) runs while the request that caused
	// it, whose key may lie in the arena, is still to join the next batch.
	c.p.reset()
	return handled
}

// send writes the replies gathered so far; false if the connection failed.
func (c *conn) send() bool {
	if len(c.out) == 0 {
		return true
	}
	// A big reply counts while a client that does not read holds it up, but for the values reserved already.
	held, err := c.acct.HoldReply(len(c.out) - c.outHeld)
	if err != nil {
		c.out = c.out[:0]
		c.acct.Release(c.outHeld)
		c.outHeld = 0
		return false // memcached closes a client whose output it cannot hold
	}
	n, err := c.acct.WriteReply(c.nc, c.out) // its progress keeps the connection from looking idle
	c.acct.Release(held + c.outHeld)
	c.outHeld = 0
	c.st[sBytesWritten] += int64(n)
	if cap(c.out) > 4*maxOutHold {
		c.out = make([]byte, 0, readBufSize)
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}

// compact moves unparsed input to the front of buf and makes room for what the pending request needs: it
// grows buf as the request's bytes arrive (at most doubling it per read, and never past what the request
// line declared), and goes back to the small buffer once what is held fits it. It reports false when the
// budget of all connections refuses the growth.
func (c *conn) compact() bool {
	held := c.w - c.r
	target := held // the buffer size the pending request needs, as far as known
	if c.p.need > 0 {
		target = c.p.need // already checked against the item size limit
	} else if held == len(c.buf) {
		target = min(2*len(c.buf), c.p.maxGetLine+2) // a long key list
	}
	var nb []byte
	switch {
	case c.big && target <= len(c.small):
		nb = c.small
	case target > len(c.buf) && len(c.buf)-held < minRead:
		size := min(target, max(membudget.NextSize(len(c.buf)), held+minRead))
		var err error
		if c.big {
			nb, err = c.acct.Grow(c.buf, size) // outgrown mid-request: its bytes pass to the new buffer
		} else {
			nb, err = c.acct.Alloc(size)
		}
		if err != nil {
			return false
		}
	case c.r == c.w:
		c.r, c.w = 0, 0
		return true
	case c.r > 0:
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
		return true
	default:
		return true
	}
	copy(nb, c.buf[c.r:c.w])
	if c.big && len(nb) == len(c.small) {
		c.acct.Free(c.buf) // the big request is done: pool its buffer for the next
	}
	c.buf, c.big = nb, len(nb) > len(c.small)
	c.r, c.w = 0, held
	return true
}

// queue adds a request with its mutations to the pending batch; it is answered when the batch is applied.
func (c *conn) queue(req *request, muts ...engine.Mutation) {
	values := 0
	for i := range muts {
		if m := &muts[i]; (m.Op == engine.OpGet && m.Touch) || (m.Op == engine.OpCall && m.Call.Name == fnMg) {
			values++
		}
	}
	c.reserve(len(muts), values)
	for _, m := range muts {
		c.add(m)
	}
	c.plan(req)
}

// reserve applies the pending batch first if n more mutations, values of them answering with a value, would
// take it past its bounds.
func (c *conn) reserve(n, values int) {
	// An engine of one-item batches would refuse pipelined requests on two keys merged into one batch.
	if !c.batch.Fits(n, min(maxPipeline, c.h.store.PipelineBatch())) || c.h.commandPerBatch ||
		(c.valueWrites > 0 && c.valueWrites+values > maxValueWrites) {
		c.flush()
	}
	c.valueWrites += values
}

// plan registers a request that owns the mutations added since the previous one.
func (c *conn) plan(req *request) {
	c.batch.Plan(pending{req: *req, start: c.readAt})
}

// expires converts an exptime of the request being handled to an absolute expiry. An item written already
// expired is absent to the rest of its batch too (engine.Resolve judges liveness there as everywhere).
func (c *conn) expires(exptime int64) int64 {
	return expiresAt(exptime, c.now)
}

// add appends a mutation of the request being queued.
func (c *conn) add(m engine.Mutation) {
	if m.Table == "" {
		m.Table = c.h.table
	}
	c.batch.Add(m)
}

// flush applies the pending batch and writes every pending reply in order. Reads call it first, so they see
// the writes sent before them on this connection.
func (c *conn) flush() {
	c.valueWrites = 0
	if c.batch.Len() == 0 {
		return
	}
	var results []engine.Result
	var err error
	if muts := c.batch.Muts(); len(muts) > 0 {
		results, err = c.h.store.Apply(c.ctx, muts)
		c.st[sBatches]++
	}
	var answered time.Time // one clock read for the batch: its replies leave together
	if c.h.metered {
		answered = time.Now()
	}
	answer := func(op *pending, rs []engine.Result, muts []engine.Mutation, err error) {
		before := len(c.out)
		if len(muts) == 0 { // nothing of it was in the batch
			err = nil
		}
		c.answer(&op.req, rs, err)
		if c.h.metered {
			c.observe(op.req.cmd, answered.Sub(op.start), before)
		}
	}
	if errors.Is(err, engine.ErrBatchTooBig) && c.batch.Len() > 1 {
		// This server's cut of a pipeline of independent requests: one by one, so only one too big by itself fails.
		c.batch.AnswerEach(func(m []engine.Mutation) ([]engine.Result, error) {
			c.st[sBatches]++
			return c.h.store.Apply(c.ctx, m)
		}, answer)
		return
	}
	c.batch.Answer(results, err, answer)
}

// handle runs one request: a write joins the pending batch, a read first flushes it.
func (c *conn) handle(req *request) {
	if c.h.metered && isRead(req) {
		c.flush()
		before := len(c.out)
		defer func() { c.observe(req.cmd, time.Since(c.readAt), before) }()
	}
	switch req.cmd {
	case cmdError:
		if req.tooLarge != cmdNone {
			c.st[sStoreTooLarge]++
		}
		if req.tooLarge == cmdSet || req.tooLarge == cmdMs {
			// memcached drops the old item when a set is refused for its size.
			c.queue(req, engine.Mutation{Op: engine.OpDelete, Key: req.key})
		} else {
			c.queue(req)
		}
	case cmdClose:
		c.flush()
		if req.err != "" { // else an HTTP request line, which memcached leaves unanswered
			c.line(req.err)
		}
		c.closing = true
	case cmdQuit:
		c.flush()
		c.closing = true
	case cmdGet, cmdGets:
		c.flush()
		c.get(req)
	case cmdStats:
		c.flush()
		c.h.stats.add(&c.st)
		c.statsCmd(req)
	case cmdMe:
		c.flush()
		c.metaDebug(req)
	case cmdMg:
		if req.meta.writes() {
			c.mgWrite(req)
			return
		}
		c.flush()
		c.metaGet(req)
	case cmdMs:
		c.msWrite(req)
	case cmdMd:
		c.mdWrite(req)
	case cmdMa:
		c.maWrite(req)
	default:
		c.textWrite(req)
	}
}

// answer writes the reply of a pending request from its results (err: the whole batch failed).
func (c *conn) answer(req *request, rs []engine.Result, err error) {
	if req.cmd == cmdBin {
		c.binAnswer(req, rs, err)
		return
	}
	if req.cmd == cmdGat || req.cmd == cmdGats {
		c.gatAnswer(req, rs, err) // a part of a gat: one error ends the whole reply
		return
	}
	if err != nil {
		reply := c.serverError(err)
		if !req.noreply || req.meta.isMeta {
			c.line(reply)
		}
		return
	}
	switch req.cmd {
	case cmdError:
		if !req.noreply {
			c.line(req.err)
		}
	case cmdMg:
		c.mgAnswer(req, rs)
	case cmdMs:
		c.msAnswer(req, rs[0])
	case cmdMd:
		c.mdAnswer(req, rs[0])
	case cmdMa:
		c.maAnswer(req, rs[len(rs)-1])
	case cmdMn:
		c.line("MN")
	default:
		c.textAnswer(req, rs)
	}
}

// spill writes the replies gathered so far when they pass maxOutHold, so that a get of many large values
// does not hold them all in memory. It returns the new length of out.
func (c *conn) spill() int {
	if len(c.out) > maxOutHold && !c.send() {
		c.closing = true
	}
	return len(c.out)
}

// isRead reports whether a request is answered at once rather than through the batch.
func isRead(req *request) bool {
	switch req.cmd {
	case cmdGet, cmdGets, cmdStats, cmdMe, cmdClose, cmdQuit:
		return true
	case cmdMg:
		return !req.meta.writes()
	}
	return false
}

// observe records a request's latency (from when its bytes were read) and whether its reply, written from
// out[before:], is an error (for a binary request, a status binFailure counts).
// out may have been sent (and emptied) meanwhile; such a reply counts as a success.
func (c *conn) observe(cmd command, took time.Duration, before int) {
	failed := false
	if before < len(c.out) {
		r := c.out[before:]
		if cmd == cmdBin {
			failed = len(r) >= binaryHeaderLen && binFailure(binary.BigEndian.Uint16(r[6:]))
		} else {
			failed = hasPrefix(r, "ERROR") || hasPrefix(r, "CLIENT_ERROR") || hasPrefix(r, "SERVER_ERROR")
		}
	}
	c.h.obs[cmd].Observe(took, failed)
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// line appends one reply line.
func (c *conn) line(s string) {
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}
