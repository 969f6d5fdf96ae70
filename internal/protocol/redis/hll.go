package redis

import (
	"errors"

	"anykv/internal/engine"
	"anykv/internal/hll"
	"anykv/internal/protocol/resp"
)

// HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG) on string values in Redis's own format (internal/hll).
// The writes run as engine functions; PFCOUNT reads the values and estimates, and never writes its cache back.

func init() {
	g := func(c *command) *command { c.groupName = "hyperloglog"; return c }
	register(
		g(&command{name: "pfadd", arity: -2, flags: flagWrite | flagFast, data: cmdPFAdd, since: "2.8.9",
			summary: "Adds the specified elements to the specified HyperLogLog."}),
		g(&command{name: "pfcount", arity: -2, flags: flagReadonly, lastKey: -1, data: cmdPFCount, since: "2.8.9",
			summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s)."}),
		g(&command{name: "pfmerge", arity: -2, flags: flagWrite, lastKey: -1, data: cmdPFMerge, since: "2.8.9",
			summary: "Merge N different HyperLogLogs into a single one."}),
		g(&command{name: "pfdebug", arity: 3, flags: flagWrite | flagAdmin, firstKey: 2, lastKey: 2, step: 1,
			data: cmdPFDebug, since: "2.8.9", summary: "Internal commands for debugging HyperLogLog values"}),
	)
}

// hllError is the reply text of a failed HyperLogLog mutation or read.
func hllError(err error) string {
	if hll.IsCommandError(err) {
		return err.Error()
	}
	return errText(err)
}

func cmdPFAdd(s *session, args [][]byte) {
	s.add(hll.PFAdd(s.table(), args[1], args[2:]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(hllError(r.Err))
		} else if string(r.New.Value) == "1" {
			w.Int(1)
		} else {
			w.Int(0)
		}
	})
}

// cmdPFCount answers the cardinality of one HyperLogLog (its cached value when valid), or of the union of several;
// absent keys count as empty.
func cmdPFCount(s *session, args [][]byte) {
	keys := args[1:]
	for _, k := range keys {
		s.get(k)
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		var m *hll.Max
		if len(keys) > 1 {
			m = new(hll.Max)
		}
		for _, r := range res {
			if errors.Is(r.Err, engine.ErrNotFound) {
				continue
			} else if r.Err != nil {
				w.Error(errText(r.Err))
				return
			}
			v := r.New.Value
			if err := hll.Check(v); err != nil {
				w.Error(err.Error())
				return
			}
			if m == nil {
				n, err := hll.Count(v)
				if err != nil {
					w.Error(err.Error())
				} else {
					w.Int(int64(n))
				}
				return
			}
			if err := m.Merge(v); err != nil {
				w.Error(err.Error())
				return
			}
		}
		if m == nil {
			w.Int(0) // the one key is absent
			return
		}
		w.Int(int64(m.Count()))
	})
}

func cmdPFMerge(s *session, args [][]byte) {
	s.add(hll.PFMerge(s.table(), args[1], args[2:]))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(hllError(r.Err))
		} else {
			w.SimpleString("OK")
		}
	})
}

// cmdPFDebug serves PFDEBUG GETREG, ENCODING, TODENSE and DECODE as Redis 7.0 does; the key is looked up and
// checked before the subcommand is.
func cmdPFDebug(s *session, args [][]byte) {
	sub, name := lower(args[1]), string(args[1]) // the plan runs after the parser reused args for what followed
	s.add(hll.Debug(s.table(), args[2], sub))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Error("ERR The specified key does not exist")
			return
		case r.Err != nil:
			w.Error(hllError(r.Err))
			return
		}
		v := r.New.Value
		switch sub {
		case "getreg":
			regs := hll.RegisterValues(v)
			w.ArrayHeader(len(regs))
			for _, reg := range regs {
				w.Int(int64(reg))
			}
		case "decode":
			if !hll.IsSparse(v) {
				w.Error("ERR HLL encoding is not sparse")
				return
			}
			w.BulkString(hll.Decode(v))
		case "encoding":
			if hll.IsSparse(v) {
				w.SimpleString("sparse")
			} else {
				w.SimpleString("dense")
			}
		case "todense":
			w.Int(int64(r.New.Flags))
		default:
			w.Error("ERR Unknown PFDEBUG subcommand '" + name + "'")
		}
	})
}
