package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/protocol/resp"
)

// Immediate commands queued in a transaction. KEYS, SCAN, RANDOMKEY, DBSIZE and XREAD, and the pops of the first
// key that has something (LMPOP, ZMPOP and the blocking pops), are immediate commands: on a connection they go
// to the store themselves, a pop once per key it tries. Queued in MULTI they run in their place inside the
// transaction's batch, as in Redis: they see the writes queued before them and none queued after, a pop is
// atomic with the rest, and a blocking command answers at once. Each becomes a call of an engine function that
// runs the command over the batch's view (session.tx), as a script's calls do; BLMOVE and BRPOPLPUSH become the
// LMOVE and RPOPLPUSH they are when nothing waits.

func init() {
	engine.RegisterReadFunc(txReadFunc, runQueued)
	engine.RegisterFunc(txPopFunc, runQueued)
}

// The engine functions of queued immediate commands. Their arguments: the handler and connection (as a
// script's: scriptHost), the database, the protocol (2 or 3), "n" if keyspace events are wanted (else ""), and
// the command. txPopFunc's mutation names the keys it may write: the first as its key, the others in Call.Keys.
const (
	txReadFunc = "redis.txread" // KEYS SCAN RANDOMKEY DBSIZE XREAD
	txPopFunc  = "redis.txpop"  // LMPOP ZMPOP BLMPOP BZMPOP BLPOP BRPOP BZPOPMIN BZPOPMAX
)

// queuedInPlace reports whether queued immediate command c runs in its place inside the transaction's batch
// (txQueued) rather than after it. An engine that takes one item (or one slot) per batch could not run these in
// one: there they all stay after it. So do those after a queued HELLO (hello): it runs after the batch, and the
// reply of one run inside it is written in the protocol of before, where the HELLO may change it.
func (s *session) queuedInPlace(c *command, hello bool) bool {
	switch c.name {
	case "keys", "scan", "randomkey", "dbsize", "xread", "lmpop", "zmpop", "blmpop", "bzmpop", "blpop", "brpop",
		"bzpopmin", "bzpopmax", "blmove", "brpoplpush":
		return !hello && !s.h.store.CommandPerBatch()
	}
	return false
}

// txQueued compiles a queued immediate command (queuedInPlace) into the transaction's batch.
func (s *session) txQueued(c *command, args [][]byte) {
	switch c.name {
	case "blmove", "brpoplpush":
		s.txMove(args)
		return
	}
	host := strconv.FormatInt(s.h.scriptHost, 10) + "/" + strconv.FormatInt(s.id, 10)
	notify := ""
	if s.h.notifying() {
		notify = "n"
	}
	fargs := make([][]byte, 0, 4+len(args))
	fargs = append(fargs, []byte(host), []byte(strconv.Itoa(s.db)), []byte(strconv.Itoa(s.w.Proto())), []byte(notify))
	fargs = append(fargs, copyArgs(args)...)
	m := engine.Mutation{Op: engine.OpCall, Table: s.table(), Call: engine.CallArgs{Name: txReadFunc, Args: fargs}}
	if keys := c.keys(args); c.flags&flagWrite != 0 && len(keys) > 0 { // none: a bad numkeys, answered before any pop
		keys = copyArgs(keys)
		m.Call.Name, m.Key, m.Call.Keys = txPopFunc, keys[0], keys[1:]
	}
	s.add(m)
	h := s.h
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if res[0].Err != nil {
			w.Error(errText(res[0].Err))
			return
		}
		if v := res[0].New.Value; len(v) > 2 && v[0] == '-' {
			w.Error(string(v[1 : len(v)-2])) // as an error reply, so that INFO errorstats counts it
		} else {
			w.Raw(v)
		}
		h.scriptNotes(res) // the pop's keyspace events, once the batch is durable
	})
}

// txMove compiles BLMOVE or BRPOPLPUSH queued in a transaction as the LMOVE or RPOPLPUSH it is when nothing
// waits (a null reply for an empty source), after the checks of its own arguments, in Redis's order.
func (s *session) txMove(args [][]byte) {
	name, n := "rpoplpush", 3
	if eq(args[0], "blmove") {
		name, n = "lmove", 5
	}
	move := append([][]byte{[]byte(name)}, args[1:n]...)
	sidesOK := true
	if name == "lmove" {
		_, from := leftOrRight(args[3])
		_, to := leftOrRight(args[4])
		sidesOK = from && to
	}
	if _, msg := parseTimeout(args[len(args)-1]); msg != "" && sidesOK { // a bad side: LMOVE's syntax error first
		s.fail(msg) // a failed call of BLMOVE or BRPOPLPUSH in INFO commandstats, as in Redis
		return
	}
	s.compile(commands[name], move)
}

// runQueued is txReadFunc and txPopFunc: it runs the command on a session that works through tx, with the
// connection's SCAN cursors, and returns the command's reply as the result's value, its keyspace events (when
// wanted) in Extra, as a script's.
func runQueued(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 5 {
		return engine.Result{}, fmt.Errorf("%w: a queued command's call needs 5 arguments", engine.ErrInvalid)
	}
	host, caller, _ := scriptHost(args[0])
	db, errDB := strconv.Atoi(string(args[1]))
	proto, errProto := strconv.Atoi(string(args[2]))
	cmd := commands[lower(args[4])]
	switch {
	case host == nil:
		return engine.Result{}, fmt.Errorf("%w: the server that queued the command is gone", engine.ErrInvalid)
	case errDB != nil || errProto != nil || cmd == nil || cmd.imm == nil:
		return engine.Result{}, fmt.Errorf("%w: a queued command's call has bad arguments", engine.ErrInvalid)
	}
	h := batchHandler(tx, host.store.Limits(), host.opts.Databases, host.limits.Load())
	var events []keyEvent
	if string(args[3]) == "n" {
		h.collectEvents(&events) // sent by the connection once the batch is durable (txQueued)
	}
	s := &session{h: h, w: resp.NewWriter(proto), db: db, id: caller, authed: true, ctx: context.Background(),
		tx: tx, cursors: &host.cursors, noBlock: true}
	cmd.imm(s, args[4:])
	res := engine.Result{New: engine.Item{Value: s.w.Bytes()}}
	if cmd.flags&flagWrite != 0 { // a pop wrote the key it answered from, if any, and none of the others it names
		res.WroteAll = true
		if s.popped != nil {
			res.Wrote = [][]byte{s.popped}
		}
	}
	if len(events) > 0 {
		res.Extra = events
	}
	return res, nil
}

// batchHandler is the handler commands run on inside an engine batch (a script's calls, a transaction's queued
// immediate commands): its store knows only the limits and the batch's time, and every read and write goes through
// tx; respLimits are the request limits the commands bound their work by.
func batchHandler(tx *engine.Tx, limits kv.Limits, databases int, respLimits *resp.Limits) *Handler {
	h := &Handler{store: kv.New(nil, kv.Options{Limits: limits, SweepInterval: -1,
		Clock: func() time.Time { return time.UnixMilli(tx.Now()) }}), opts: Options{Databases: databases}}
	h.limits.Store(respLimits)
	return h
}

// collectEvents makes h keep every keyspace event its commands send in *into, to be sent by the connection's
// handler once the batch is durable (which filters them by its own notify-keyspace-events).
func (h *Handler) collectEvents(into *[]keyEvent) {
	h.sink = into
	h.notifyFlags.Store(notifyAll | notifyNew | notifyKeyspace | notifyKeyevent)
}
