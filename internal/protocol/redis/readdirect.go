package redis

import (
	"context"
	"errors"

	"anykv/internal/engine"
	"anykv/internal/membudget"
)

// Plain reads (GET, MGET, EXISTS, ...) answered with Get, outside a batch of the engine.

func plainReads(muts []engine.Mutation) bool {
	for i := range muts {
		if muts[i].Op != engine.OpGet || muts[i].Touch {
			return false
		}
	}
	return true
}

// readsInOneTrip reports whether a batch of plain reads goes to the engine as one batch rather than one Get per
// key: over a datastore (Options.RemoteEngine) that is one round trip for all, where Get would be one each. Reads
// at a weaker level than linearizable (READONLY, or the server's --consistency) stay Gets: a batch's reads are
// always linearizable.
func (s *session) readsInOneTrip(muts []engine.Mutation) bool {
	if !s.h.opts.RemoteEngine || len(muts) < 2 || s.h.commandPerBatch {
		return false // an engine of one-item (memcached) or one-slot batches would refuse a batch of several reads
	}
	return s.h.store.ReadsLinearizable(s.readCtx())
}

// readDirect answers plain reads with Get, giving the results Resolve would give for OpGet. Its results hold
// what they read until the replies are written, so it holds to engine.MaxBatchRead as Resolve does (300
// pipelined GETs of a 32 MiB value ran the process out of memory): once the values read pass it, the reads left
// fail with engine.ErrBatchTooBig, and over reports so. Reads with NoValue (EXISTS, TYPE, TTL) keep no value and
// count nothing; a big value read again shares the first read's result, though it counts again (a reply
// carries it again).
func (s *session) readDirect(muts []engine.Mutation) (res []engine.Result, over bool) {
	res = s.direct.get(len(muts)) // a split batch's two calls each copy theirs out before the next (runSplit)
	g := &s.gate
	g.s, g.held = s, bigHolds{}
	held := &g.held
	ctx := s.readGateCtx()
again:
	now := s.h.store.Now()
	read := 0
	var big map[bigRead]int // reads of big values by key, once one was made
	for i := range muts {
		m := &muts[i]
		if read > engine.MaxBatchRead {
			res[i], over = engine.Result{Err: engine.ErrBatchTooBig}, true
			continue
		}
		if big != nil {
			// Not a Partial read's for a reply that carries the value: it counted no reply's copy (read again).
			if j, ok := big[bigRead{m.Table, string(m.Key), m.AnyKind}]; ok && (!muts[j].Partial || m.Partial) {
				res[i] = res[j]               // the same read at the same time: the same answer, its value shared
				read += len(res[j].Old.Value) // held once, but its reply carries it again
				continue
			}
		}
		copies := 2 // the value and its reply's copy
		if m.Partial {
			copies = 1 // STRLEN, bit reads: the reply carries none of it
		}
		if m.NoValue {
			copies = 0 // EXISTS, TYPE, TTL: neither counted nor held
		}
		g.copies, g.taken, g.refused = copies, false, 0
		it, err := s.h.store.ViewAnyAt(ctx, m.Table, m.Key, now) // replies only read the value
		if m.NoValue && err == nil {
			it.Value = []byte{}
		}
		read += len(it.Value)
		if g.refused > 0 || len(it.Value) >= membudget.ReplyHold && !g.taken && !held.take(s, copies*len(it.Value)) {
			// Full: let go of what this call read and reserved, wait for the room it needs (others' replies are
			// being written), and read again. (The engine asked first for a value it copies out, the gate
			// refused, and nothing was copied; a value the read cache shares is reserved once read.)
			n := copies * max(g.refused, len(it.Value))
			clear(res[:i+1])
			it = engine.Item{} // hold nothing while waiting
			if s.pipelined {
				// A pipeline's batch of several requests: flush answers them one at a time instead (over: an
				// ErrBatchTooBig), so that only the requests whose reads need the room wait for it, and fail
				// alone, as applyReserving's batches do.
				s.acct.Release(held.mine)
				s.held.read -= held.mine
				return res, true
			}
			if !held.wait(s, n) {
				for j := range res {
					res[j] = engine.Result{Err: errReadBudget}
				}
				return res, false
			}
			goto again
		}
		if len(it.Value) >= bigReadSize {
			if big == nil {
				big = make(map[bigRead]int)
			}
			big[bigRead{m.Table, string(m.Key), m.AnyKind}] = i
		}
		if err != nil {
			res[i] = engine.Result{Err: err}
			continue
		}
		if it.Kind != engine.KindString && !m.AnyKind {
			res[i] = engine.Result{Err: engine.ErrWrongType, Old: it, OldFound: true}
			continue
		}
		res[i] = engine.Result{Old: it, OldFound: true, New: it, NewFound: true}
	}
	return res, over
}

// readGate is readDirect's engine.ValueGate: the engine asks it before it copies out a value of
// engine.GateFrom bytes or more, and it reserves the value's room (and its reply's) then, so that a burst of big
// reads waits before the values are copied rather than after (30 GETs of a 60 MiB value had all been read, 1.8
// GB, before most found no room).
type readGate struct {
	s       *session
	held    bigHolds // what the readDirect call reserved
	copies  int      // the read's: 2 (the value and its reply), 1 (a reply that carries none of it), 0 (no value)
	taken   bool     // the read's value was reserved through Admit
	refused int      // the size of the value Admit found no room for (0: none)
}

// Admit implements engine.ValueGate.
func (g *readGate) Admit(n int) error {
	if g.copies == 0 {
		return nil
	}
	if !g.held.take(g.s, g.copies*n) {
		g.refused = n
		return errNoRoomYet
	}
	g.taken = true
	return nil
}

// errNoRoomYet is what a read the gate refused returns; readDirect waits for the room and reads again.
var errNoRoomYet = errors.New("no room for the value yet")

// readGateCtx is the read context carrying s.gate, made again only when the read context changes (READONLY).
func (s *session) readGateCtx() context.Context {
	if base := s.readCtx(); base != s.gateBase || s.gateCtx == nil {
		s.gateBase, s.gateCtx = base, engine.WithValueGate(base, &s.gate)
	}
	return s.gateCtx
}

// bigRead names a read readDirect made of a value of at least bigReadSize bytes.
type bigRead struct {
	table, key string
	anyKind    bool
}

const bigReadSize = 64 << 10

// bigHolds is what one readDirect call reserved for its big values: the value and the reply that copies it count
// against maxmemory-clients until the replies are written (releaseResults). 30 clients' GET of one 60 MiB string
// held 1.8 GB of values, 12 of them then closed when their replies did not fit, and 30 MGETs of four such values
// took 23 GB.
type bigHolds struct {
	mine      int  // reserved by this call (also in held.read)
	room      int  // of mine, what a wait reserved ahead that no value read again has taken yet
	uncounted bool // reading again without reserving: only waiting clients hold the room (wait)
}

// take reserves n bytes for one value, from room first; false when the budget has no room for the rest.
func (b *bigHolds) take(s *session, n int) bool {
	if b.uncounted {
		return true
	}
	from := min(b.room, n)
	if s.acct.TryReserve(n-from) != nil {
		return false
	}
	b.room -= from
	b.mine += n - from
	s.held.read += n - from
	return true
}

// wait lets go of what the call reserved and waits for the room of the values read so far and one of n more
// bytes; true: read again (with that room, or uncounted), false: refused.
func (b *bigHolds) wait(s *session, n int) bool {
	want := b.mine - b.room + n
	s.acct.Release(b.mine)
	s.held.read -= b.mine
	*b = bigHolds{}
	reserved, ok := s.waitForRead(want, readWait)
	if reserved {
		s.held.read += want
		b.mine, b.room = want, want
	}
	b.uncounted = ok && !reserved
	return ok
}
