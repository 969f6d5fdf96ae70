package memcache

import (
	"errors"
	"strconv"

	"anykv/internal/engine"
)

// mgWrite handles mg with N (vivify), T (touch) or R (recache), and mg of a stale item: one function call
// (stampede.go) creates the stub, applies the TTL and hands out the win in one atomic step.
func (c *conn) mgWrite(req *request) {
	c.queue(req, c.stampedeCall(fnMg, req))
}

func (c *conn) mgAnswer(req *request, rs []engine.Result) {
	res := &rs[len(rs)-1]
	switch {
	case res.Err == nil:
		c.mgReplyRead(req, &res.New, res.Old.Version, res.Old.Flags)
	case errors.Is(res.Err, engine.ErrNotFound):
		c.mgReply(req, nil, false, 0)
	default:
		c.line(c.serverError(res.Err))
	}
}

// metaGet answers mg without N, T or R from the store. A stale item whose win has not been handed out is
// answered through mgWrite instead, since handing it out is a write.
func (c *conn) metaGet(req *request) {
	view := c.viewForReply
	if !req.meta.value {
		view = c.view // the reply carries none of the value (flags, size, CAS only): nothing to reserve
	}
	it, err := view(req.key)
	var bits []byte
	if err == nil {
		bits, err = c.h.store.Annotation(c.ctx, c.h.table, req.key, it, c.h.store.Now())
	}
	switch {
	case err == nil && len(bits) == 1 && bits[0]&bitWon == 0 && bits[0]&bitStale != 0:
		c.mgWrite(req)
		c.flush()
	case err == nil:
		var reply uint32
		if len(bits) == 1 && bits[0]&bitWon != 0 {
			reply = replyZ
			if bits[0]&bitStale != 0 {
				reply |= replyX
			}
		}
		c.mgReply(req, &it, true, reply)
	case errors.Is(err, engine.ErrNotFound):
		c.mgReply(req, nil, false, 0)
	default:
		c.line(c.serverError(err))
	}
}

// mgReply writes "VA <size> <flags>*\r\n<data>\r\n", "HD <flags>*\r\n" or "EN\r\n", with the return flags in
// the order the client sent them, then the stampede flags of reply (W, Z, X). q hides only EN, as in memcached
// 1.6.
func (c *conn) mgReply(req *request, it *engine.Item, found bool, reply uint32) {
	var read uint64
	if found {
		read = it.Version
	}
	c.mgReplyRead(req, it, read, reply)
}

// mgReplyRead is mgReply of a found item (nil: a miss) that the mg found at version read, which its T may have
// rewritten since (it.Version is then new): h and l answer for the item found, as memcached's touch keeps them.
func (c *conn) mgReplyRead(req *request, it *engine.Item, read uint64, reply uint32) {
	found := it != nil
	m := &req.meta
	c.st[sCmdMeta]++
	if m.hasTTL {
		c.st[sCmdTouch]++
		if found {
			c.st[sTouchHits]++
		} else {
			c.st[sTouchMisses]++
		}
	} else {
		c.st[sCmdGet]++
		if found {
			c.st[sGetHits]++
		} else {
			c.st[sGetMisses]++
		}
	}
	if !found {
		if req.noreply {
			return
		}
		c.out = append(c.out, "EN"...)
		c.echoFlags(req)
		c.out = append(c.out, '\r', '\n')
		return
	}
	if m.value {
		c.out = append(c.out, "VA "...)
		c.out = strconv.AppendInt(c.out, int64(len(it.Value)), 10)
	} else {
		c.out = append(c.out, "HD"...)
	}
	now := c.h.store.Now()
	var before bool
	var ago int64
	switch {
	case m.noBump && (m.hitBefore || m.lastAccess):
		before, ago = c.h.accesses.peek(req.key, read, now/1000) // u: no bump, so not a fetch to remember
	case m.hitBefore || m.lastAccess:
		before, ago = c.h.accesses.fetch(req.key, read, it.Version, now/1000)
	}
	for t, rest := nextToken(m.rest); len(t) > 0; t, rest = nextToken(rest) {
		switch t[0] {
		case 'h':
			if before {
				c.out = append(c.out, " h1"...)
			} else {
				c.out = append(c.out, " h0"...)
			}
		case 'l':
			c.out = append(c.out, " l"...)
			c.out = strconv.AppendInt(c.out, ago, 10)
		case 's':
			c.out = append(c.out, " s"...)
			c.out = strconv.AppendInt(c.out, int64(len(it.Value)), 10)
		case 't':
			c.out = append(c.out, " t"...)
			c.out = strconv.AppendInt(c.out, ttlLeft(it.Expires, now), 10)
		case 'c':
			c.out = append(c.out, " c"...)
			c.out = strconv.AppendUint(c.out, it.Version, 10)
		case 'f':
			c.out = append(c.out, " f"...)
			c.out = strconv.AppendUint(c.out, uint64(it.Flags), 10)
		case 'O', 'k':
			c.echoFlag(req, t)
		}
	}
	c.appendStampede(reply)
	c.out = append(c.out, '\r', '\n')
	if m.value {
		c.out = append(c.out, it.Value...)
		c.out = append(c.out, '\r', '\n')
		c.spill() // a pipeline of mg on large items streams, as get does
	}
}

// echoFlags appends the O(paque) and k(ey) flags, which every meta reply returns.
func (c *conn) echoFlags(req *request) {
	for t, rest := nextToken(req.meta.rest); len(t) > 0; t, rest = nextToken(rest) {
		c.echoFlag(req, t)
	}
}

func (c *conn) echoFlag(req *request, t []byte) {
	switch t[0] {
	case 'O':
		c.out = append(c.out, ' ')
		c.out = append(c.out, t...)
	case 'k':
		c.out = append(c.out, " k"...)
		c.out = append(c.out, req.meta.keyTok...)
		if req.meta.binary {
			c.out = append(c.out, " b"...)
		}
	}
}

// msWrite turns ms into one mutation; its M mode picks set, add, replace, append or prepend, and C makes set
// and replace a cas (append and prepend check it too; add ignores it, as memcached does).
func (c *conn) msWrite(req *request) {
	m := &req.meta
	mut := engine.Mutation{Op: engine.OpSet, Key: req.key, Value: req.data, Flags: m.flags,
		Expires: c.expires(m.ttl)}
	switch m.mode {
	case 'E':
		mut.Cond = engine.CondAbsent
	case 'A', 'P':
		mut = engine.Mutation{Op: engine.OpAppend, Key: req.key, Value: req.data, Edit: engine.EditArgs{MaxSize: c.h.maxItem}}
		if m.mode == 'P' {
			mut.Op = engine.OpPrepend
		}
		if m.hasCas && m.cas != 0 {
			mut.Cond, mut.Version = engine.CondVersion, m.cas
		}
	default: // S, R
		if m.hasCas && m.stale {
			c.queue(req, c.stampedeCall(fnMsStale, req))
			return
		}
		if m.hasCas {
			mut = casMutation(req.key, req.data, m.flags, mut.Expires, m.cas)
		} else if m.mode == 'R' {
			mut.Cond = engine.CondPresent
		}
	}
	c.queue(req, mut)
}

func (c *conn) msAnswer(req *request, res engine.Result) {
	m := &req.meta
	c.st[sCmdMeta]++
	c.st[sCmdSet]++
	casMode := m.hasCas && m.casMode()
	var code string
	stored := false
	switch err := res.Err; {
	case casMode && m.stale: // msStaleFunc: the cas itself, or an older one storing a stale item
		switch {
		case err == nil:
			stored, code = true, "HD"
		case errors.Is(err, engine.ErrVersionMismatch):
			c.st[sCasBadval]++
			code = "EX"
		case errors.Is(err, engine.ErrNotFound):
			c.st[sCasMisses]++
			code = "NF"
		}
	case casMode:
		ok, exists := casOutcome(m.cas, err)
		switch {
		case ok:
			c.st[sCasHits]++
			stored, code = true, "HD"
		case exists:
			c.st[sCasBadval]++
			code = "EX"
		case errors.Is(err, engine.ErrNotFound):
			c.st[sCasMisses]++
			code = "NF"
		}
	case err == nil:
		stored, code = true, "HD"
	case errors.Is(err, engine.ErrVersionMismatch):
		code = "EX"
	case errors.Is(err, engine.ErrExists), errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrTooLarge):
		code = "NS"
	}
	if code == "" {
		c.line(c.serverError(res.Err))
		return
	}
	if stored {
		c.st[sTotalItems]++
		if req.noreply {
			return
		}
	}
	c.out = append(c.out, code...)
	for t, rest := nextToken(m.rest); len(t) > 0; t, rest = nextToken(rest) {
		switch t[0] {
		case 'O', 'k':
			c.echoFlag(req, t)
		case 'c':
			c.out = append(c.out, " c"...)
			if stored {
				c.out = strconv.AppendUint(c.out, res.New.Version, 10)
			} else {
				c.out = append(c.out, '0')
			}
		}
	}
	c.out = append(c.out, '\r', '\n')
}

// mdWrite turns md into a delete, conditional on C when given (C0 never matches a live item); md I marks the
// item stale instead (stampede.go).
func (c *conn) mdWrite(req *request) {
	m := &req.meta
	if m.stale {
		c.queue(req, c.stampedeCall(fnStale, req))
		return
	}
	mut := engine.Mutation{Op: engine.OpDelete, Key: req.key}
	if m.hasCas {
		mut.Cond, mut.Version = engine.CondVersion, m.cas
	}
	c.queue(req, mut)
}

func (c *conn) mdAnswer(req *request, res engine.Result) {
	c.st[sCmdMeta]++
	var code string
	switch err := res.Err; {
	case err == nil:
		c.st[sDeleteHits]++
		if req.noreply {
			return
		}
		code = "HD"
	case errors.Is(err, engine.ErrNotFound):
		c.st[sDeleteMisses]++
		code = "NF"
	case errors.Is(err, engine.ErrVersionMismatch):
		c.st[sDeleteMisses]++
		code = "EX"
	default:
		c.line(c.serverError(err))
		return
	}
	c.out = append(c.out, code...)
	c.echoFlags(req)
	c.out = append(c.out, '\r', '\n')
}

// maWrite turns ma into an unsigned increment or decrement (N creates the item at J). T sets the expiry on
// success only: the increment carries it (Touch), so a failed increment leaves the TTL alone.
func (c *conn) maWrite(req *request) {
	m := &req.meta
	inc := engine.Mutation{Op: engine.OpIncr, Key: req.key, Incr: engine.IncrArgs{Unsigned: true, UDelta: m.delta, Decr: m.mode == 'D' || m.mode == 'd' || m.mode == '-'}}
	if m.hasViv {
		inc.Incr.Create, inc.Incr.Initial, inc.Expires = true, m.init, c.expires(m.viv)
	}
	if m.hasCas && m.cas != 0 {
		inc.Cond, inc.Version = engine.CondVersion, m.cas
	}
	if m.hasTTL {
		inc.Touch, inc.Expires = true, c.expires(m.ttl) // also the expiry of an item N creates
	}
	c.queue(req, inc)
}

func (c *conn) maAnswer(req *request, res engine.Result) {
	m := &req.meta
	c.st[sCmdMeta]++
	hits, misses := &c.st[sIncrHits], &c.st[sIncrMisses]
	if m.mode == 'D' || m.mode == 'd' || m.mode == '-' {
		hits, misses = &c.st[sDecrHits], &c.st[sDecrMisses]
	}
	switch err := incrErr(res); {
	case err == nil:
		if res.OldFound {
			*hits++
		} else {
			c.st[sTotalItems]++
		}
		if req.noreply { // q hides success, VA included, as in memcached 1.6
			return
		}
	case errors.Is(err, engine.ErrNotFound):
		*misses++
		c.out = append(c.out, "NF"...)
	case errors.Is(err, engine.ErrVersionMismatch):
		c.out = append(c.out, "EX"...)
	case errors.Is(err, engine.ErrNotInteger):
		c.line("CLIENT_ERROR cannot increment or decrement non-numeric value")
		return
	default:
		c.line(c.serverError(err))
		return
	}
	if res.Err != nil {
		c.echoFlags(req)
		c.out = append(c.out, '\r', '\n')
		return
	}
	it := &res.New
	if m.value {
		c.out = append(c.out, "VA "...)
		c.out = strconv.AppendInt(c.out, int64(len(it.Value)), 10)
	} else {
		c.out = append(c.out, "HD"...)
	}
	for t, rest := nextToken(m.rest); len(t) > 0; t, rest = nextToken(rest) {
		switch t[0] {
		case 'c':
			c.out = append(c.out, " c"...)
			c.out = strconv.AppendUint(c.out, it.Version, 10)
		case 't':
			c.out = append(c.out, " t"...)
			c.out = strconv.AppendInt(c.out, ttlLeft(it.Expires, c.h.store.Now()), 10)
		case 'O', 'k':
			c.echoFlag(req, t)
		}
	}
	c.out = append(c.out, '\r', '\n')
	if m.value {
		c.out = append(c.out, it.Value...)
		c.out = append(c.out, '\r', '\n')
	}
}

// metaDebug answers me: "ME <key> exp=<> la=<> cas=<> fetch=<> cls=<> size=<>", or EN. la and fetch are what
// mg's l and h would answer (accesses.peek: me is no fetch); anykv has no slab class: cls is 1, and size counts
// key and value bytes.
func (c *conn) metaDebug(req *request) {
	c.st[sCmdMeta]++
	it, err := c.h.store.Get(c.ctx, c.h.table, req.key)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		c.line("EN")
		return
	case err != nil:
		c.line(c.serverError(err))
		return
	}
	c.out = append(c.out, "ME "...)
	c.out = append(c.out, req.meta.keyTok...)
	c.out = append(c.out, " exp="...)
	// memcached prints current_time - exptime: the negated time left, or -1 for no expiry.
	exp := int64(-1)
	if it.Expires != 0 {
		exp = -ttlLeft(it.Expires, c.h.store.Now())
	}
	c.out = strconv.AppendInt(c.out, exp, 10)
	fetched, ago := c.h.accesses.peek(req.key, it.Version, c.h.store.Now()/1000)
	c.out = append(c.out, " la="...)
	c.out = strconv.AppendInt(c.out, ago, 10)
	c.out = append(c.out, " cas="...)
	c.out = strconv.AppendUint(c.out, it.Version, 10)
	if fetched {
		c.out = append(c.out, " fetch=yes cls=1 size="...)
	} else {
		c.out = append(c.out, " fetch=no cls=1 size="...)
	}
	c.out = strconv.AppendInt(c.out, int64(len(req.key)+len(it.Value)), 10)
	c.out = append(c.out, '\r', '\n')
}
