package memcache

import (
	"errors"
	"strconv"

	"anykv/internal/engine"
	"anykv/internal/protocol/errmap"
)

// textWrite turns a text-protocol write (storage, incr/decr, delete, touch, gat, flush_all) or an in-order
// reply (version, verbosity) into pending mutations.
func (c *conn) textWrite(req *request) {
	switch req.cmd {
	case cmdSet, cmdAdd, cmdReplace:
		m := engine.Mutation{Op: engine.OpSet, Key: req.key, Value: req.data, Flags: req.flags,
			Expires: c.expires(req.exptime), Set: engine.SetArgs{Blind: true}} // Blind counts only without a condition
		if req.cmd == cmdAdd {
			m.Cond = engine.CondAbsent
		} else if req.cmd == cmdReplace {
			m.Cond = engine.CondPresent
		}
		c.queue(req, m)
	case cmdAppend, cmdPrepend: // flags and exptime are ignored, as in memcached
		op := engine.OpAppend
		if req.cmd == cmdPrepend {
			op = engine.OpPrepend
		}
		c.queue(req, engine.Mutation{Op: op, Key: req.key, Value: req.data, Edit: engine.EditArgs{MaxSize: c.h.maxItem}})
	case cmdCas:
		mut := casMutation(req.key, req.data, req.flags, c.expires(req.exptime), req.cas)
		c.queue(req, mut)
	case cmdIncr, cmdDecr:
		c.queue(req, engine.Mutation{Op: engine.OpIncr, Key: req.key, Incr: engine.IncrArgs{Unsigned: true, UDelta: req.cas, Decr: req.cmd == cmdDecr}})
	case cmdDelete:
		c.queue(req, engine.Mutation{Op: engine.OpDelete, Key: req.key})
	case cmdTouch:
		exp := c.expires(req.exptime)
		c.queue(req, engine.Mutation{Op: engine.OpExpire, Key: req.key, Expires: exp})
	case cmdGat, cmdGats:
		// Each key is a write whose result holds its item's value until the batch is answered, so a gat of many
		// keys is planned in parts of at most maxValueWrites keys, each answered (and its values sent) in turn.
		exp := c.expires(req.exptime)
		for keys := req.keys; !c.closing; { // a part's answer found the client gone: no more parts
			part := *req
			part.keys, keys = splitKeys(keys, maxValueWrites)
			k, _ := nextToken(keys)
			part.gatMore = len(k) > 0
			n := 0
			for k, rest := nextToken(part.keys); len(k) > 0; k, rest = nextToken(rest) {
				n++
			}
			c.reserve(n, n) // a part after the first applies and answers the one before it
			if c.gatFailed {
				// That part failed and ended the reply: the keys after it are not touched, as memcached's gat
				// stops at a failure, and the client, told of the failure, takes them for untouched.
				c.gatFailed = false
				break
			}
			for k, rest := nextToken(part.keys); len(k) > 0; k, rest = nextToken(rest) {
				c.add(engine.Mutation{Op: engine.OpGet, Key: k, Touch: true, Expires: exp})
			}
			c.plan(&part)
			if !part.gatMore {
				break
			}
		}
	case cmdFlushAll:
		c.queueFlushAll(req, req.exptime)
	case cmdVerbosity:
		c.h.verbosity.Store(uint32(min(req.cas, 2)))
		c.queue(req)
	default: // version
		c.queue(req)
	}
}

// casMutation is memcached's cas: store only over the item with that CAS unique. Unique 0 never matches
// (EXISTS if the key holds an item, NOT_FOUND otherwise), unlike the engine's version 0, which means
// "absent"; so it becomes a check that writes nothing.
func casMutation(key, value []byte, flags uint32, expires int64, cas uint64) engine.Mutation {
	if cas == 0 {
		return engine.Mutation{Op: engine.OpCheck, Key: key, Cond: engine.CondPresent}
	}
	return engine.Mutation{Op: engine.OpSet, Key: key, Value: value, Flags: flags, Expires: expires,
		Cond: engine.CondVersion, Version: cas}
}

// queueFlushAll queues a flush_all (text, or binary flush) of exptime. A delay schedules the flush (it replaces a
// pending one at once) and queues req to be answered; otherwise req flushes the table now and replaces a pending
// delayed flush once applied (textAnswer, binAnswer: one that failed replaced it too, and the client, told so,
// had neither flush), the one pending as it was read (flushGen).
func (c *conn) queueFlushAll(req *request, exptime int64) {
	if exptime > 0 && !c.h.flushesAtOnce(exptime, c.now) {
		c.flush() // an immediate flush_all before it is applied first, so it does not cancel this one
		c.h.scheduleFlush(expiresAt(exptime, c.now), c.now)
		c.queue(req)
		return
	}
	req.flushGen = c.h.flushGeneration()
	c.queue(req, flushMutation(c.h.table))
}

// flushMutation deletes every item of table (flush_all, now or when its delay ends).
func flushMutation(table string) engine.Mutation {
	return engine.Mutation{Op: engine.OpFlush, Table: table}
}

// casOutcome classifies the result of casMutation: stored, exists (bad value) or not found.
func casOutcome(cas uint64, err error) (stored, exists bool) {
	if cas == 0 {
		return false, err == nil
	}
	return err == nil, errors.Is(err, engine.ErrVersionMismatch)
}

// textAnswer writes the reply of a text-protocol write from its results.
func (c *conn) textAnswer(req *request, rs []engine.Result) {
	var reply string
	switch req.cmd {
	case cmdSet, cmdAdd, cmdReplace, cmdAppend, cmdPrepend:
		c.st[sCmdSet]++
		switch err := rs[0].Err; {
		case err == nil:
			c.st[sTotalItems]++
			reply = "STORED"
		case errors.Is(err, engine.ErrExists), errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrTooLarge):
			reply = "NOT_STORED"
		default:
			reply = c.serverError(err)
		}
	case cmdCas:
		c.st[sCmdSet]++
		stored, exists := casOutcome(req.cas, rs[0].Err)
		switch {
		case stored:
			c.st[sTotalItems]++
			c.st[sCasHits]++
			reply = "STORED"
		case exists:
			c.st[sCasBadval]++
			reply = "EXISTS"
		case errors.Is(rs[0].Err, engine.ErrNotFound):
			c.st[sCasMisses]++
			reply = "NOT_FOUND"
		default:
			reply = c.serverError(rs[0].Err)
		}
	case cmdIncr, cmdDecr:
		hits, misses := &c.st[sIncrHits], &c.st[sIncrMisses]
		if req.cmd == cmdDecr {
			hits, misses = &c.st[sDecrHits], &c.st[sDecrMisses]
		}
		switch err := rs[0].Err; {
		case err == nil:
			*hits++
			if !req.noreply {
				c.out = append(c.out, rs[0].New.Value...)
				c.out = append(c.out, '\r', '\n')
			}
			return
		case errors.Is(err, engine.ErrNotFound):
			*misses++
			reply = "NOT_FOUND"
		case errors.Is(err, engine.ErrNotInteger):
			reply = "CLIENT_ERROR cannot increment or decrement non-numeric value"
		default:
			reply = c.serverError(err)
		}
	case cmdDelete:
		switch err := rs[0].Err; {
		case err == nil:
			c.st[sDeleteHits]++
			reply = "DELETED"
		case errors.Is(err, engine.ErrNotFound):
			c.st[sDeleteMisses]++
			reply = "NOT_FOUND"
		default:
			reply = c.serverError(err)
		}
	case cmdTouch:
		c.st[sCmdTouch]++
		switch err := rs[0].Err; {
		case err == nil:
			c.st[sTouchHits]++
			reply = "TOUCHED"
		case errors.Is(err, engine.ErrNotFound):
			c.st[sTouchMisses]++
			reply = "NOT_FOUND"
		default:
			reply = c.serverError(err)
		}
	case cmdFlushAll:
		c.st[sCmdFlush]++
		if len(rs) > 0 { // applied now: a pending delayed flush_all is replaced (textWrite)
			c.h.cancelFlush(req.flushGen)
		}
		reply = "OK"
	case cmdVerbosity:
		reply = "OK"
	case cmdVersion:
		reply = "VERSION " + c.h.version
	}
	if !req.noreply {
		c.line(reply)
	}
}

// splitKeys returns the first n space-separated keys of keys, and what follows them.
func splitKeys(keys []byte, n int) (first, rest []byte) {
	rest = keys
	for ; n > 0; n-- {
		var k []byte
		if k, rest = nextToken(rest); len(k) == 0 {
			break
		}
	}
	return keys[:len(keys)-len(rest)], rest
}

// gatAnswer answers one part of a gat (textWrite): its found items, then END after the last part. A part
// that fails (err: its whole batch) answers the error, which ends the reply: gatFailed tells textWrite to plan
// none of the gat's later parts.
func (c *conn) gatAnswer(req *request, rs []engine.Result, err error) {
	if err != nil {
		c.line(c.serverError(err))
		c.gatFailed = req.gatMore
		return
	}
	start := len(c.out)
	i := 0
	for k, rest := nextToken(req.keys); len(k) > 0; k, rest = nextToken(rest) {
		res := &rs[i]
		i++
		c.st[sCmdTouch]++
		switch {
		case res.Err == nil:
			c.st[sTouchHits]++
			c.appendValue(k, &res.New, req.cmd == cmdGats)
			if start = min(start, c.spill()); c.closing {
				return // the client has gone (spill's write failed)
			}
		case errors.Is(res.Err, engine.ErrNotFound):
			c.st[sTouchMisses]++
		default:
			c.out = c.out[:start]
			c.line(c.serverError(res.Err))
			c.gatFailed = req.gatMore
			return
		}
	}
	if !req.gatMore {
		c.out = append(c.out, "END\r\n"...)
	}
}

// get answers get and gets from the store, after any pending writes of this connection were applied.
func (c *conn) get(req *request) {
	start := len(c.out)
	withCas := req.cmd == cmdGets
	rs, err := c.getBatch(req.keys)
	if err != nil {
		c.line(c.serverError(err))
		return
	}
	i := 0
	for k, rest := nextToken(req.keys); len(k) > 0; k, rest = nextToken(rest) {
		c.st[sCmdGet]++
		var it engine.Item
		var err error
		if rs != nil {
			it, err = rs[i].New, rs[i].Err
			i++
		} else {
			it, err = c.viewForReply(k)
		}
		switch {
		case err == nil:
			c.st[sGetHits]++
			c.appendValue(k, &it, withCas)
			if start = min(start, c.spill()); c.closing {
				return // the client has gone: the keys left are not read (a line of a million keys of a big item)
			}
		case errors.Is(err, engine.ErrNotFound):
			c.st[sGetMisses]++
		default:
			c.out = c.out[:start]
			c.line(c.serverError(err))
			return
		}
	}
	c.out = append(c.out, "END\r\n"...)
}

// getBatch reads the keys of a multi-key get as one batch when the engine is a datastore behind a URL with no
// read cache (Options.RemoteEngine): one round trip for all, where a Get per key would be one each. It returns
// nil results when the keys are to be read one by one.
func (c *conn) getBatch(keys []byte) ([]engine.Result, error) {
	if !c.h.remote || c.h.commandPerBatch {
		return nil, nil
	}
	if !c.h.store.ReadsLinearizable(c.ctx) {
		return nil, nil // a batch's reads are linearizable: a weaker level (--consistency) reads key by key
	}
	var muts []engine.Mutation
	for k, rest := nextToken(keys); len(k) > 0; k, rest = nextToken(rest) {
		muts = append(muts, engine.Mutation{Op: engine.OpGet, Table: c.h.table, Key: k})
	}
	if len(muts) < 2 {
		return nil, nil
	}
	return c.h.store.Apply(c.ctx, muts)
}

// appendValue writes "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n".
func (c *conn) appendValue(key []byte, it *engine.Item, withCas bool) {
	b := append(c.out, "VALUE "...)
	b = append(b, key...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(it.Flags), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(it.Value)), 10)
	if withCas {
		b = append(b, ' ')
		b = strconv.AppendUint(b, it.Version, 10)
	}
	b = append(b, '\r', '\n')
	b = append(b, it.Value...)
	c.out = append(b, '\r', '\n')
}

// serverError is the reply for a failure of the store itself (any error but the misses and failed conditions
// each command answers in its own words), counted in the server_errors statistic. A line break in the error's
// text would end the reply line early, so it becomes a space.
func (c *conn) serverError(err error) string {
	c.st[sServerErrors]++
	return errmap.Of(err).Memcache
}
