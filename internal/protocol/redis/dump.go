package redis

import (
	"errors"
	"math"
	"strconv"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/membudget"
	"anykv/internal/protocol/resp"
	"anykv/internal/rdb"
)

func init() {
	register(
		&command{name: "dump", arity: 2, flags: flagReadonly, data: cmdDump, summary: "Returns a serialized representation of the value stored at a key."},
		&command{name: "restore", arity: -4, flags: flagWrite, data: cmdRestore, summary: "Creates a key from the serialized representation of a value."},
	)
}

// restoreMaxTotal bounds what one RESTORE's payload may decode to (its strings, and restoreElemOverhead for each):
// the 256 MiB a batch may build (COPY's bound). A payload's integers and LZF strings decode to more than their
// bytes: without it, a 64 MiB payload of small integers asked for gigabytes.
var restoreMaxTotal = 256 << 20 // a variable for tests

const restoreElemOverhead = 96

func cmdDump(s *session, args [][]byte) {
	s.add(collections.Dump(s.table(), args[1]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Null()
		case errors.Is(r.Err, collections.ErrDumpStream):
			w.Error(r.Err.Error())
		case r.Err != nil:
			w.Error(errText(r.Err))
		default:
			w.Bulk(r.New.Value)
		}
	})
}

// cmdRestore checks the options first, then (in the batch) whether the key is free, and only then the TTL and the
// payload, in Redis's order: a refusal of the TTL or payload travels with the mutation and is answered once the
// key is known free.
func cmdRestore(s *session, args [][]byte) {
	var replace, absTTL, idle, freq bool
	for j := 4; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "absttl"):
			absTTL = true
		case eq(args[j], "idletime") && more && !freq, eq(args[j], "freq") && more && !idle:
			n, ok := argInt(args[j+1])
			switch {
			case !ok:
				s.fail(errNotInt)
				return
			case eq(args[j], "idletime") && n < 0:
				s.fail("ERR Invalid IDLETIME value, must be >= 0")
				return
			case eq(args[j], "freq") && (n < 0 || n > 255):
				s.fail("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			// Accepted and not kept: anykv evicts nothing, so has no idle time or frequency (OBJECT IDLETIME and
			// FREQ report its own figures).
			idle, freq = idle || eq(args[j], "idletime"), freq || eq(args[j], "freq")
			j++
		default:
			s.fail(errSyntax)
			return
		}
	}
	var v rdb.Value
	var expires int64
	refuse := ""
	o := s.restoreHolder()
	taken := 0 // what the decoded value reserved of o's budget account (reserveRestore)
	ttl, ok := argInt(args[2])
	switch {
	case !ok:
		refuse = errNotInt
	case ttl < 0:
		refuse = "ERR Invalid TTL value, must be >= 0"
	default:
		var err error
		v, err = rdb.Decode(args[3], rdb.Limits{MaxValue: s.h.store.Limits().MaxValue, MaxTotal: restoreMaxTotal,
			ElemOverhead: restoreElemOverhead, Reserve: func(n int) error { return s.reserveRestore(n, &taken) }})
		switch {
		case errors.Is(err, membudget.ErrOverBudget), errors.Is(err, membudget.ErrEvicted):
			o.acct.Release(taken)
			s.fail(errRestoreMemory)
			return
		case errors.Is(err, rdb.ErrFormat):
			refuse = "ERR Bad data format"
		case errors.Is(err, rdb.ErrTooLarge):
			refuse = "ERR the restored value exceeds the server's limits (a string, member or field over the value size limit, or over 256 MiB in all)"
		case err != nil:
			refuse = "ERR " + err.Error()
		}
		switch {
		case ttl == 0:
		case absTTL:
			expires = ttl
		default:
			now := s.h.store.Now()
			expires = now + min(ttl, math.MaxInt64-now)
		}
	}
	if refuse != "" {
		o.acct.Release(taken) // a refused payload keeps nothing of what it decoded
		taken, v = 0, rdb.Value{}
	} else if !s.roomForRestore(v) {
		o.acct.Release(taken)
		return
	}
	o.held.restore += taken // until the batch has run (flush, cmdExec; a script's: until the engine ran it, apply)
	s.add(collections.Restore(s.table(), args[1], v, expires, replace, refuse))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		var re *collections.RestoreError
		switch r := res[0]; {
		case errors.Is(r.Err, engine.ErrExists):
			w.Error("BUSYKEY Target key name already exists.")
		case errors.As(r.Err, &re):
			w.Error(re.Msg)
		case r.Err != nil:
			w.Error(errText(r.Err))
		default:
			w.SimpleString("OK")
		}
	})
}

// errRestoreMemory answers a RESTORE whose decoded value would take the connections past their budget.
const errRestoreMemory = "ERR client memory: maxmemory-clients reached (the values a batch's RESTOREs decoded count)"

// reserveRestore reserves n bytes of a value RESTORE is decoding from the connection's budget account, adding
// them to *taken; the batch holds the value until it runs (LZF payloads decode to up to 88 times their bytes,
// and without it 20 connections pipelining a few MB of RESTOREs each held 5 GB past maxmemory-clients). As
// hold does for queued commands, a refusal fails the command and the connection closes only if it was evicted;
// in a pipeline the batch built so far runs first, giving back what its RESTOREs reserved, and the reservation
// is tried again. Inside EXEC, whose commands run as one batch, it is refused at once; in a script, which
// reserves from the connection that ran it, too, and without evicting anyone (it runs inside the engine's batch,
// which an evicted client's release could be waiting behind).
func (s *session) reserveRestore(n int, taken *int) error {
	o := s.restoreHolder()
	var err error
	if s.inScript {
		err = o.acct.TryReserve(n)
	} else if err = s.acct.Reserve(n); errors.Is(err, membudget.ErrOverBudget) && s.held.restore > 0 && !s.noBlock {
		s.flush()
		err = s.acct.Reserve(n)
	}
	if err != nil {
		if errors.Is(err, membudget.ErrEvicted) {
			o.closing = true
		}
		return err
	}
	*taken += n
	return nil
}

// restoreHolder is the session whose batch holds what a RESTORE decodes, reserving it from its account and
// counting it (roomForRestore): the connection, or in a script the connection that ran it, whose pipeline or
// transaction's batch the script's writes join (the script's own session when there is none).
func (s *session) restoreHolder() *session {
	if s.inScript && s.scriptCaller != nil {
		return s.scriptCaller
	}
	return s
}

// roomForRestore keeps the values one batch's RESTOREs decoded within restoreMaxTotal, as roomForPicks keeps its
// picks, and reports whether the command may join the batch. A batch holds them until it runs, and a payload
// decodes to up to 88 times its bytes (LZF): a pipeline of RESTOREs of 750 KB payloads, each a 62 MiB string,
// held them all (2 GB from 22 MB of request, one connection). In a pipeline the batch built so far runs first;
// inside EXEC, whose commands run as one batch, the command is refused instead. A script's calls each compile
// in a batch of their own, but what they restore joins the batch that runs the script (its caller's pipeline or
// transaction) until that batch has run: it counts in the caller's count (restoreHolder), with the values of the
// batch's RESTOREs and other scripts, and the RESTORE past the bound is refused.
func (s *session) roomForRestore(v rdb.Value) bool {
	n := len(v.Str)
	for _, e := range v.Elems {
		n += len(e) + restoreElemOverhead
	}
	if s.inScript {
		o := s.restoreHolder()
		if o.restored+n > restoreMaxTotal {
			s.fail("ERR the script's restored values, with those of its pipeline or transaction, would exceed " +
				strconv.Itoa(restoreMaxTotal>>20) + " MiB")
			return false
		}
		o.restored += n
		return true
	}
	if s.batch.Len() == 0 {
		s.restored = 0
	}
	if s.restored+n > restoreMaxTotal && s.batch.Len() > 0 {
		if s.noBlock { // EXEC
			s.fail("ERR the transaction's restored values would exceed " + strconv.Itoa(restoreMaxTotal>>20) + " MiB")
			return false
		}
		s.flush()
		s.restored = 0
	}
	s.restored += n
	return true
}
