package redis

import (
	"context"
	"errors"

	"anykv/internal/engine"
)

func init() {
	register(
		&command{name: "multi", arity: 1, flags: flagTx | flagFast, imm: cmdMulti, summary: "Starts a transaction."},
		&command{name: "exec", arity: 1, flags: flagTx, imm: cmdExec, summary: "Executes all commands in a transaction."},
		&command{name: "discard", arity: 1, flags: flagTx | flagFast, imm: cmdDiscard, summary: "Discards a transaction."},
		&command{name: "watch", arity: -2, flags: flagTx | flagFast, firstKey: 1, lastKey: -1, step: 1, imm: cmdWatch, summary: "Monitors changes to keys to determine the execution of a transaction."},
		&command{name: "unwatch", arity: 1, flags: flagFast, imm: cmdUnwatch, summary: "Forgets about watched keys of a transaction."},
	)
}

func cmdMulti(s *session, args [][]byte) {
	if s.inMulti {
		s.w.Error("ERR MULTI calls can not be nested")
		return
	}
	s.inMulti, s.dirty, s.queued = true, false, nil
	s.w.SimpleString("OK")
}

func (s *session) endMulti() {
	s.inMulti, s.dirty, s.queued = false, false, nil
	s.unwatch()
	s.state.multiMem.Store(0)
	s.unhold(&s.held.multi)
}

// unwatch forgets the watched keys and unregisters them from the store's touched-key registry.
func (s *session) unwatch() {
	s.watch.Release()
	s.watch, s.watched = nil, nil
	s.unhold(&s.held.watch)
}

func cmdDiscard(s *session, args [][]byte) {
	if !s.inMulti {
		s.w.Error("ERR DISCARD without MULTI")
		return
	}
	s.endMulti()
	s.w.SimpleString("OK")
}

// cmdExec runs the queued commands as one atomic batch, guarded by the WATCHed keys: if any was written since
// WATCH (the store's touched-key registry) or its version changed, nothing runs and the reply is a null array,
// as in Redis.
func cmdExec(s *session, args [][]byte) {
	if !s.inMulti {
		s.w.Error("ERR EXEC without MULTI")
		return
	}
	queued, watched, dirty, wk := s.queued, s.watched, s.dirty, s.watch
	s.watch = nil // released below, once the batch ran: writes until then must still abort it
	defer wk.Release()
	s.endMulti()
	s.noBlock = true // blocking commands in the transaction answer at once
	defer func() { s.noBlock = false }()
	if dirty {
		s.w.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	s.picks = 0               // the transaction is a batch of its own (roomForPicks)
	defer s.releaseRestored() // the values its RESTOREs decoded, once it ran (or failed)
	s.inExec = true           // its tracked reads register in its order (trackExecKeys), its own invalidations wait
	defer func() { s.inExec = false }()
	hello := false // a HELLO was queued: it may change the protocol of the replies after it (queuedInPlace)
	s.txScripts = &txScriptView{}
	defer func() { s.txScripts = nil }()
	// The database before the transaction: a queued SELECT takes effect below, as the transaction compiles, and
	// is undone if it does not run (aborted, or failed whole), as Redis never runs the commands of such an EXEC.
	db := s.db
	for _, a := range queued {
		c := s.lookup(a[0])
		hello = hello || c.name == "hello"
		if msg := s.aclRecheck(c, a); msg != "" { // the user's rules may have changed since it was queued
			s.batch.Plan(pending{errMsg: msg, silent: s.silent})
			continue
		}
		if c.name == "select" { // it changes where the commands after it write, so it takes effect now
			if msg := s.selectDB(a[1]); msg != "" {
				s.batch.Plan(pending{errMsg: msg, silent: s.silent})
			} else {
				s.batch.Plan(pending{status: "OK", silent: s.silent})
			}
			continue
		}
		s.cur, s.curArgs, s.curKept = c, a, nil // each queued command counts in INFO commandstats under its own name
		if s.trk != nil {
			s.trackRead(c, a)
		}
		if c.name == "script" && s.txScript(a) { // SCRIPT LOAD, EXISTS, FLUSH: seen by the commands after them
			continue
		}
		// In the batch: data commands (XREADGROUP's BLOCK too: in a transaction it does not wait), but DEBUG's
		// other subcommands than OBJECT, which run after the batch as other immediate commands.
		if (c.data != nil && !(c.name == "debug" && c.immIf(a))) || c.tx != nil {
			before := len(s.batch.Muts())
			if c.tx != nil { // its transaction form (EVAL: the script may write any key, and shares the time limit)
				c.tx(s, a)
			} else {
				s.compile(c, a)
			}
			muts := s.batch.Muts()
			for i := before; i < len(muts); i++ {
				if muts[i].Group == 0 {
					muts[i].Guard = false // only WATCH guards may abort a whole transaction
				}
			}
		} else if s.queuedInPlace(c, hello) { // KEYS, SCAN, LMPOP, BLPOP, ...: in its place, through the batch (tximm.go)
			s.txQueued(c, a)
		} else {
			// Run after the batch, when its reply is written (INFO, CLIENT, ...), in the database selected where it
			// was queued.
			s.batch.Plan(pending{imm: c, immDB: s.db, args: a, cmd: c, start: s.start, silent: s.silent})
		}
	}
	guards := make([]engine.Mutation, 0, len(watched))
	for _, wt := range watched {
		guards = append(guards, engine.Mutation{Op: engine.OpCheck, Table: wt.table, Key: wt.key,
			Cond: engine.CondVersion, Version: wt.version, Guard: true})
	}
	s.execWatch = wk
	if s.trk != nil && s.trk.exec != nil {
		s.trk.exec.off = len(guards)
		defer s.h.trackExecDone(s.trk)
	}
	res, err := s.run(guards)
	s.execWatch = nil
	if err == nil {
		s.txScripts.apply(s.h)
	}
	if err != nil && s.db != db {
		s.setInfo(func() { s.db = db })
	}
	if errors.Is(err, engine.ErrAborted) {
		s.batch.Reset()
		s.w.NullArray()
		return
	}
	if err != nil {
		// The transaction's batch failed whole: one error for EXEC, never an array, whose elements are each
		// command's own outcome (a Redis client takes an error there for that command's, the others applied). An
		// array of this error in every place was answered, and a client that read EXEC's reply as the
		// transaction's took one of unknown outcome as run: over an etcd cluster losing a member, transactions
		// were lost that a kill test counted as acknowledged. Nothing applied: Redis's EXECABORT with the reason.
		s.batch.Reset()
		if errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrCrossSlot) {
			// An unknown outcome may have been applied (not discarded); CROSSSLOT is Redis Cluster's own answer
			// to an EXEC whose keys span slots.
			s.w.Error(errText(err))
		} else {
			s.w.Error("EXECABORT Transaction discarded because of: " + errText(err))
		}
		return
	}
	s.w.ArrayHeader(len(queued))
	s.writeReplies(res, err) // the invalidations of its own keys follow the whole reply (dispatch writes them)
}

func cmdWatch(s *session, args [][]byte) {
	if s.inMulti {
		s.fail("ERR WATCH inside MULTI is not allowed")
		s.flush()
		return
	}
	if len(s.watched)+len(args)-1 > maxWatched {
		s.w.Error("ERR too many watched keys (" + itoa(maxWatched) + ")")
		return
	}
	size := 0
	for _, k := range args[1:] {
		size += len(k) + heldOverhead
	}
	if !s.hold(&s.held.watch, size) {
		s.w.Error(errHeldMemory)
		return
	}
	if s.watch == nil {
		s.watch = s.h.store.NewWatch()
	}
	for _, k := range args[1:] {
		s.watch.Add(s.table(), k) // first: a write after this either shows in the version read or marks the watch
		var v uint64
		it, err := s.h.store.PeekAnyAt(context.Background(), s.table(), k, s.h.store.Now())
		switch {
		case err == nil:
			v = it.Version
		case !errors.Is(err, engine.ErrNotFound):
			s.w.Error(errText(err))
			return
		}
		s.watched = append(s.watched, watch{table: s.table(), key: append([]byte(nil), k...), version: v})
	}
	s.w.SimpleString("OK")
}

func cmdUnwatch(s *session, args [][]byte) {
	s.unwatch()
	s.w.SimpleString("OK")
}
