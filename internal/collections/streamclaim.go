package collections

import (
	"anykv/internal/engine"
)

// XCLAIM, XAUTOCLAIM and XPENDING: they answer reply trees (streamreply.go).

// ClaimSpec is what XCLAIM asks beside its group, consumer and IDs.
type ClaimSpec struct {
	MinIdle    int64
	Idle, Time int64 // the new delivery time as an idle time or a unix time in ms (-1: not given; Idle wins)
	RetryCount int64 // -1: not given
	Force      bool
	JustID     bool
	LastID     ID
}

func flag(b bool) []byte {
	if b {
		return []byte("1")
	}
	return []byte("0")
}

// XClaim claims ids (checked IDs) of group for consumer; the reply tree is XCLAIM's. ErrNoGroup when there is
// no stream or no such group.
func XClaim(table string, key, group, consumer []byte, spec ClaimSpec, ids ...[]byte) engine.Mutation {
	args := [][]byte{group, consumer, num(spec.MinIdle), num(spec.Idle), num(spec.Time), num(spec.RetryCount),
		flag(spec.Force), flag(spec.JustID), []byte(spec.LastID.String())}
	return engine.CallMutation(table, key, fnXClaim, append(args, ids...)...)
}

func xclaim(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 9 {
		return engine.Result{}, engine.ErrInvalid
	}
	gname, cname := args[0], args[1]
	minIdle, idle, at, retry := parseRead(args[2]), parseRead(args[3]), parseRead(args[4]), parseRead(args[5])
	force, justID := string(args[6]) == "1", string(args[7]) == "1"
	lastID, _ := ParseID(args[8], false)
	st, g, stop, done, err := openGroup(tx, gname)
	if done {
		return stop, err
	}
	now := tx.Now()
	cl := claimer{st: &st, group: gname, name: cname, justID: justID}
	if g.last.less(lastID) {
		g.last, cl.changed = lastID, true
		st.putGroup(g)
	}
	delivery := now
	switch {
	case idle >= 0:
		delivery = now - idle
	case at >= 0:
		delivery = at
	}
	if delivery < 0 || delivery > now {
		delivery = now
	}
	for _, a := range args[9:] {
		id, _ := ParseID(a, false)
		p, pending, err := st.nack(gname, id)
		if err != nil {
			return engine.Result{}, err
		}
		v, exists, err := st.entry(id)
		if err != nil {
			return engine.Result{}, err
		}
		if !exists { // gone from the stream: gone from the PEL too
			if pending {
				st.delNack(gname, p)
				cl.changed = true
			}
			continue
		}
		if !pending && !force {
			continue
		}
		if pending && minIdle > 0 && now-p.at < minIdle {
			continue
		}
		if !pending {
			p = nack{id: id, count: 1}
		}
		if err := cl.claim(p, v, delivery, retry); err != nil {
			return engine.Result{}, err
		}
	}
	var out replyBuf
	out.array(cl.n)
	return cl.finish(append(out, cl.items...))
}

// claimer hands pending entries to one consumer of a group (XCLAIM, XAUTOCLAIM), which it makes, or marks seen,
// at its first claim, and gathers the reply's entries (or IDs only).
type claimer struct {
	st          *stream
	group, name []byte
	justID      bool
	c           consumer
	created     bool
	items       replyBuf
	n           int
	changed     bool // the call changed the group: the meta is rewritten (its version, for WATCH)
}

// claim gives p (an existing entry, whose fields are v) to the consumer, delivered at at; its delivery count
// becomes retry when that is not negative, else grows by one unless JUSTID.
func (cl *claimer) claim(p nack, v []byte, at, retry int64) error {
	if !cl.c.found {
		var err error
		if cl.c, cl.created, err = cl.st.touchConsumer(cl.group, cl.name); err != nil {
			return err
		}
	}
	prev := p.consumer
	p.consumer, p.at = cl.name, at
	if retry >= 0 {
		p.count = retry
	} else if !cl.justID {
		p.count++
	}
	cl.st.putNack(cl.group, p, prev)
	cl.n++
	cl.changed = true
	if cl.justID {
		cl.items.id(p.id)
		return nil
	}
	return cl.items.entry(p.id, v)
}

// finish records the consumer active (if it claimed anything) and the stream changed (if it did: a call that
// changed nothing leaves the key's version, as Redis leaves a WATCH of it), and returns the result with reply out.
func (cl *claimer) finish(out replyBuf) (engine.Result, error) {
	if cl.c.found {
		cl.c.active = cl.st.tx.Now()
		cl.st.putConsumer(cl.group, cl.c)
	}
	if cl.changed {
		if err := cl.st.flushPel(cl.group); err != nil {
			return engine.Result{}, err
		}
		cl.st.put()
	}
	res := out.result()
	consumerCreated(&res, cl.created)
	return res, nil
}

// XAutoClaim claims up to count pending entries of group idle for at least minIdle ms, from start on, for
// consumer; the reply tree is XAUTOCLAIM's (next cursor, claimed, deleted IDs).
func XAutoClaim(table string, key, group, consumer []byte, minIdle int64, start ID, count int64, justID bool) engine.Mutation {
	return engine.CallMutation(table, key, fnXAutoClaim, group, consumer, num(minIdle), []byte(start.String()),
		num(count), flag(justID))
}

func xautoclaim(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 6 {
		return engine.Result{}, engine.ErrInvalid
	}
	gname, cname := args[0], args[1]
	minIdle, count, justID := parseRead(args[2]), parseRead(args[4]), string(args[5]) == "1"
	start, _ := ParseID(args[3], false)
	st, _, stop, done, err := openGroup(tx, gname)
	if done {
		return stop, err
	}
	now := tx.Now()
	attempts := count * 10
	var claimed, deleted []nack
	next := ID{}
	var ferr error
	err = st.nacks(gname, start, maxStreamID, func(p nack) bool {
		if attempts == 0 || count == 0 {
			next = p.id
			return false
		}
		attempts--
		_, exists, err := st.entry(p.id)
		if err != nil {
			ferr = err
			return false
		}
		switch {
		case !exists: // gone from the stream: dropped from the PEL, reported, counted
			deleted = append(deleted, p)
			count--
		case minIdle > 0 && now-p.at < minIdle:
		default:
			claimed = append(claimed, p)
			count--
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return engine.Result{}, err
	}
	cl := claimer{st: &st, group: gname, name: cname, justID: justID, changed: len(deleted) > 0}
	for _, p := range deleted {
		st.delNack(gname, p)
	}
	for _, p := range claimed {
		v, _, err := st.entry(p.id)
		if err != nil {
			return engine.Result{}, err
		}
		if err := cl.claim(p, v, now, -1); err != nil {
			return engine.Result{}, err
		}
	}
	var out replyBuf
	out.array(3)
	out.id(next)
	out.array(cl.n)
	out = append(out, cl.items...)
	out.array(len(deleted))
	for _, p := range deleted {
		out.id(p.id)
	}
	return cl.finish(out)
}

// XPending answers XPENDING's summary of group (summary), or its pending entries in [from, to] idle for at
// least minIdle ms, at most count, of consumer when not nil; the reply tree is XPENDING's. ErrNoGroup when
// there is no stream or no such group.
func XPending(table string, key, group []byte, summary bool, from, to ID, count, minIdle int64, consumer []byte) engine.Mutation {
	args := [][]byte{group, flag(summary), []byte(from.String()), []byte(to.String()), num(count), num(minIdle)}
	if consumer != nil {
		args = append(args, consumer)
	}
	return engine.CallMutation(table, key, fnXPending, args...)
}

func xpending(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 6 {
		return engine.Result{}, engine.ErrInvalid
	}
	gname := args[0]
	st, g, stop, done, err := openGroup(tx, gname)
	if done {
		return stop, err
	}
	var out replyBuf
	if string(args[1]) == "1" { // the summary: from the counts, and the PEL's two ends
		out.array(4)
		out.integer(g.pending)
		if g.pending == 0 {
			out.null()
			out.null()
			out.nullArray()
			return out.result(), nil
		}
		prefix := st.gkey(tagPending, lp(gname))
		for _, scan := range []func(string, engine.Range, func([]byte, engine.Item) bool) error{st.tx.Scan, st.tx.ScanReverse} {
			if err := scan(st.mt(), engine.PrefixRange(prefix), func(k []byte, _ engine.Item) bool {
				out.id(idOf(k[len(prefix):]))
				return false
			}); err != nil {
				return engine.Result{}, err
			}
		}
		var items replyBuf
		n := 0
		if err := st.consumers(gname, func(c consumer) bool { // in name order, those with pending entries
			if c.pending > 0 {
				items.array(2)
				items.bulk(c.name)
				items.str(string(num(c.pending)))
				n++
			}
			return true
		}); err != nil {
			return engine.Result{}, err
		}
		out.array(n)
		return append(out, items...).result(), nil
	}
	from, _ := ParseID(args[2], false)
	to, _ := ParseID(args[3], false)
	count, minIdle := parseRead(args[4]), parseRead(args[5])
	var only []byte
	if len(args) > 6 {
		only = args[6]
		if c, err := st.consumer(gname, only); err != nil || !c.found {
			out.array(0)
			return out.result(), err
		}
	}
	now := tx.Now()
	var items replyBuf
	n := int64(0)
	visit := func(p nack) bool {
		if n >= count {
			return false
		}
		if minIdle > 0 && now-p.at < minIdle {
			return true
		}
		items.array(4)
		items.id(p.id)
		items.bulk(p.consumer)
		items.integer(max(now-p.at, 0))
		items.integer(p.count)
		n++
		return true
	}
	if only != nil {
		err = st.nacksOf(gname, only, from, to, visit)
	} else {
		err = st.nacks(gname, from, to, visit)
	}
	if err != nil {
		return engine.Result{}, err
	}
	out.array(int(n))
	return append(out, items...).result(), nil
}
