package memcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"anykv/internal/engine"
)

// Running the binary protocol's commands (binary.go parses them). Writes join the connection's pending batch
// like text commands and are answered in order; gets, stats and SASL first apply what is pending.

// handleBinary runs one binary request.
func (c *conn) handleBinary(req *request) {
	h := &req.bin
	// The parser refuses the requests of a client that has not authenticated (nextBinary, p.unauthed), before a
	// too-large store's own answer too: that answer drops the stored item, a write only an authenticated
	// client may cause. This checks it again.
	if !c.authed && !authFree(h.base) && !h.close {
		h.status, h.close, req.tooLarge = stAuthError, true, cmdNone
	}
	if h.status == stAuthError && !authFree(h.base) {
		c.st[sAuthErrors]++
	}
	if h.close {
		c.closing = true // memcached closes the connection once the refusal is answered
	}
	if h.status != stOK {
		if req.tooLarge != cmdNone {
			c.st[sStoreTooLarge]++
			c.queue(req, engine.Mutation{Op: engine.OpDelete, Key: req.key})
			return
		}
		c.queue(req)
		return
	}
	direct := h.base == opGet || h.base == opStat || h.base == opQuit || h.base >= opSASLList && h.base <= opSASLStep
	if c.h.metered && direct { // answered at once rather than through the batch
		c.flush()
		before := len(c.out)
		defer func() { c.observe(cmdBin, time.Since(c.readAt), before) }()
	}
	switch h.base {
	case opGet:
		c.flush()
		c.binGet(req)
	case opStat:
		c.flush()
		c.h.stats.add(&c.st)
		c.binStats(req)
	case opSASLList, opSASLAuth, opSASLStep:
		c.flush()
		c.binSASL(req)
	case opQuit:
		c.flush()
		if !h.quiet {
			c.out = appendBinResponse(c.out, h, stOK, 0, nil, nil, nil)
		}
		c.closing = true
	default:
		c.binWrite(req)
	}
}

// authFree reports whether an unauthenticated client may send the opcode (memcached's rule with SASL).
func authFree(base byte) bool {
	return base == opSASLList || base == opSASLAuth || base == opSASLStep || base == opVersion
}

// binWrite turns a binary write into pending mutations (or none, for a request answered in order only).
func (c *conn) binWrite(req *request) {
	h := &req.bin
	var m engine.Mutation
	switch h.base {
	case opSet, opAdd, opReplace:
		flags, exp := binary.BigEndian.Uint32(req.extras), int64(binary.BigEndian.Uint32(req.extras[4:]))
		m = engine.Mutation{Op: engine.OpSet, Key: req.key, Value: req.data, Flags: flags, Expires: c.expires(exp),
			Set: engine.SetArgs{Blind: true}}
		switch {
		case h.cas != 0: // any store with a CAS is a compare-and-swap, add included (memcached 1.6)
			m.Cond, m.Version = engine.CondVersion, h.cas
		case h.base == opAdd:
			m.Cond = engine.CondAbsent
		case h.base == opReplace:
			m.Cond = engine.CondPresent
		}
	case opAppend, opPrepend:
		m = engine.Mutation{Op: engine.OpAppend, Key: req.key, Value: req.data, Edit: engine.EditArgs{MaxSize: c.h.maxItem}}
		if h.base == opPrepend {
			m.Op = engine.OpPrepend
		}
		if h.cas != 0 {
			m.Cond, m.Version = engine.CondVersion, h.cas
		}
	case opDelete:
		m = engine.Mutation{Op: engine.OpDelete, Key: req.key}
		if h.cas != 0 {
			m.Cond, m.Version = engine.CondVersion, h.cas
		}
	case opIncr, opDecr:
		e := req.extras
		m = engine.Mutation{Op: engine.OpIncr, Key: req.key, Incr: engine.IncrArgs{Unsigned: true,
			UDelta: binary.BigEndian.Uint64(e), Decr: h.base == opDecr}}
		if exp := binary.BigEndian.Uint32(e[16:]); exp != 0xffffffff { // all ones: do not create
			m.Incr.Create, m.Incr.Initial, m.Expires = true, binary.BigEndian.Uint64(e[8:]), c.expires(int64(exp))
		}
		if h.cas != 0 {
			m.Cond, m.Version = engine.CondVersion, h.cas
		}
	case opTouch:
		m = engine.Mutation{Op: engine.OpExpire, Key: req.key, Expires: c.expires(int64(binary.BigEndian.Uint32(req.extras)))}
	case opGAT:
		m = engine.Mutation{Op: engine.OpGet, Key: req.key, Touch: true, Expires: c.expires(int64(binary.BigEndian.Uint32(req.extras)))}
	case opFlush:
		exp := int64(0)
		if len(req.extras) == 4 {
			exp = int64(binary.BigEndian.Uint32(req.extras))
		}
		c.queueFlushAll(req, exp)
		return
	default: // noop, version
		c.queue(req)
		return
	}
	c.queue(req, m)
}

// binAnswer writes the response of a pending binary request from its results (err: the whole batch failed).
// Quiet requests are answered only when they fail.
func (c *conn) binAnswer(req *request, rs []engine.Result, err error) {
	h := &req.bin
	switch {
	case err != nil:
		c.binError(h, stInternal, c.serverError(err))
		return
	case h.status != stOK:
		c.binError(h, h.status, statusText[h.status])
		return
	}
	var res engine.Result
	if len(rs) > 0 {
		res = rs[0]
	}
	var status uint16 = stOK
	switch h.base {
	case opSet, opAdd, opReplace, opAppend, opPrepend:
		c.st[sCmdSet]++
		status = c.storeStatus(h, res.Err)
	case opDelete:
		status = c.countedStatus(res.Err, sDeleteHits, sDeleteMisses)
	case opIncr, opDecr:
		hits, misses := sIncrHits, sIncrMisses
		if h.base == opDecr {
			hits, misses = sDecrHits, sDecrMisses
		}
		if status = c.countedStatus(incrErr(res), hits, misses); status == stOK {
			if h.quiet {
				return
			}
			n, _ := strconv.ParseUint(string(res.New.Value), 10, 64)
			c.out = appendBinResponse(c.out, h, stOK, res.New.Version, nil, nil, binary.BigEndian.AppendUint64(nil, n))
			return
		}
	case opTouch: // answered with the item's flags, as memcached does
		c.st[sCmdTouch]++
		if status = c.countedStatus(res.Err, sTouchHits, sTouchMisses); status == stOK && !h.quiet {
			it := res.New
			if !res.NewFound { // a time already past deleted it: memcached answers with the item it expired
				it = res.Old
			}
			c.out = appendBinResponse(c.out, h, stOK, it.Version, binary.BigEndian.AppendUint32(nil, it.Flags), nil, nil)
			return
		}
	case opGAT:
		c.st[sCmdTouch]++
		c.binValue(req, res.New, c.countedStatus(res.Err, sTouchHits, sTouchMisses), res.Err)
		return
	case opFlush:
		c.st[sCmdFlush]++
		if res.Err != nil {
			status = stInternal
		} else if len(rs) > 0 { // applied now: a pending delayed flush is replaced
			c.h.cancelFlush(req.flushGen)
		}
	case opVersion:
		c.out = appendBinResponse(c.out, h, stOK, 0, nil, nil, []byte(c.h.version))
		return
	}
	switch {
	case status == stInternal:
		c.binError(h, status, c.serverError(res.Err))
	case status != stOK:
		c.binError(h, status, statusText[status])
	case !h.quiet:
		c.out = appendBinResponse(c.out, h, stOK, res.New.Version, nil, nil, nil)
	}
}

// storeStatus classifies a storage result and counts it.
func (c *conn) storeStatus(h *binHeader, err error) uint16 {
	switch {
	case err == nil:
		c.st[sTotalItems]++
		if h.cas != 0 {
			c.st[sCasHits]++
		}
		return stOK
	case errors.Is(err, engine.ErrVersionMismatch):
		c.st[sCasBadval]++
		return stExists
	case errors.Is(err, engine.ErrExists):
		return stExists
	case errors.Is(err, engine.ErrNotFound):
		if h.cas != 0 {
			c.st[sCasMisses]++
		}
		if h.base == opAppend || h.base == opPrepend {
			return stNotStored
		}
		return stNotFound
	case errors.Is(err, engine.ErrTooLarge): // append or prepend past the item limit
		return stNotStored
	}
	return stInternal
}

// countedStatus classifies the result of a delete, incr/decr, touch or gat, counting a hit or a miss.
func (c *conn) countedStatus(err error, hit, miss stat) uint16 {
	switch {
	case err == nil:
		c.st[hit]++
		return stOK
	case errors.Is(err, engine.ErrNotFound):
		c.st[miss]++
		return stNotFound
	case errors.Is(err, engine.ErrVersionMismatch):
		return stExists
	case errors.Is(err, engine.ErrNotInteger):
		return stNonNumeric
	}
	return stInternal
}

// incrErr is the failure of an incr or decr (binary or ma) in memcached's order of checks: an empty value is
// non-numeric before the CAS is compared (do_add_delta), so a mismatching CAS on an empty value answers
// non-numeric, as memcached 1.6.18 does; the engine compares the CAS first.
func incrErr(res engine.Result) error {
	if errors.Is(res.Err, engine.ErrVersionMismatch) && res.OldFound && len(res.Old.Value) == 0 {
		return engine.ErrNotInteger
	}
	return res.Err
}

// binGet answers get, getq, getk and getkq from the store.
func (c *conn) binGet(req *request) {
	c.st[sCmdGet]++
	it, err := c.viewForReply(req.key)
	status := c.countedStatus(err, sGetHits, sGetMisses)
	c.binValue(req, it, status, err)
}

// binValue writes a get or gat response: flags, the key for the K variants, the value and its CAS. A miss is
// silent for the quiet variants; a K variant's miss carries the key, as memcached's does.
func (c *conn) binValue(req *request, it engine.Item, status uint16, err error) {
	h := &req.bin
	var key []byte
	if h.withK {
		key = req.key
	}
	switch status {
	case stOK:
		c.out = appendBinResponse(c.out, h, stOK, it.Version, binary.BigEndian.AppendUint32(nil, it.Flags), key, it.Value)
		c.spill()
	case stNotFound:
		if h.quiet {
			return
		}
		if h.withK {
			c.out = appendBinResponse(c.out, h, stNotFound, 0, nil, key, nil)
			return
		}
		c.binError(h, stNotFound, statusText[stNotFound])
	default:
		c.binError(h, stInternal, c.serverError(err))
	}
}

// binError writes a failure response whose body is the error text.
func (c *conn) binError(h *binHeader, status uint16, text string) {
	c.out = appendBinResponse(c.out, h, status, 0, nil, nil, []byte(text))
}

// binStats answers stat: one response per statistic (key: name, value: figure), then an empty one. The
// figures are those of the text protocol's stats, stats settings and stats reset.
func (c *conn) binStats(req *request) {
	h := &req.bin
	start := len(c.out)
	switch string(req.key) {
	case "":
		c.generalStats()
	case "settings":
		c.settingsStats()
	case "reset":
		c.h.stats.reset()
	case "items", "slabs", "sizes", "conns":
	default:
		c.binError(h, stNotFound, statusText[stNotFound])
		return
	}
	text := append([]byte(nil), c.out[start:]...)
	c.out = c.out[:start]
	for line := range bytes.Lines(text) {
		rest, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r\n")), []byte("STAT "))
		if !ok {
			continue
		}
		name, value, _ := bytes.Cut(rest, []byte{' '})
		c.out = appendBinResponse(c.out, h, stOK, 0, nil, name, value)
	}
	c.out = appendBinResponse(c.out, h, stOK, 0, nil, nil, nil)
}

// binSASL answers the SASL commands. With a password, PLAIN is the one mechanism: its data is
// "[authzid]\0user\0password", any user is accepted (anykv has one password), and success authenticates the
// connection. Without a password there is no SASL, as memcached without -S: the commands are unknown.
func (c *conn) binSASL(req *request) {
	h := &req.bin
	if !c.h.auth.Required() {
		c.binError(h, stUnknownCommand, statusText[stUnknownCommand])
		return
	}
	switch h.base {
	case opSASLList:
		c.out = appendBinResponse(c.out, h, stOK, 0, nil, nil, []byte("PLAIN"))
		return
	case opSASLAuth:
		c.st[sAuthCmds]++
		parts := bytes.Split(req.data, []byte{0})
		if string(req.key) == "PLAIN" && len(parts) == 3 && len(parts[1]) > 0 && c.h.auth.Check(parts[2]) {
			c.authenticated()
			c.out = appendBinResponse(c.out, h, stOK, 0, nil, nil, []byte("Authenticated"))
			return
		}
	}
	c.st[sAuthErrors]++
	c.binError(h, stAuthError, statusText[stAuthError])
}
