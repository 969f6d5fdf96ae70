package collections

import (
	"errors"

	"anykv/internal/engine"
)

// XInfo answers an XINFO subcommand about the stream at key as a reply tree, in Redis 7.2's fields: op
// "groups", "consumers" (arg: the group), "stream", or "full" (arg: COUNT, 0 for all); or, for op "records",
// the stream's group records as Members (Name the member key, for MEMORY USAGE). ErrNotFound when there is
// no stream, ErrNoGroup for CONSUMERS of a group that does not exist.
func XInfo(table string, key []byte, op string, arg []byte) engine.Mutation {
	return engine.CallMutation(table, key, fnXInfo, []byte(op), arg)
}

func xinfo(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	if err := st.loadTally(); err != nil {
		return engine.Result{}, err
	}
	var out replyBuf
	switch string(args[0]) {
	case "groups":
		err = st.infoGroups(&out)
	case "consumers":
		g, err := st.group(args[1])
		if err != nil {
			return engine.Result{}, err
		}
		if !g.found {
			return engine.Result{Err: ErrNoGroup}, nil
		}
		if err := st.infoConsumers(&out, g.name); err != nil {
			return engine.Result{}, err
		}
	case "stream":
		err = st.infoStream(&out, false, 0)
	case "full":
		err = st.infoStream(&out, true, parseRead(args[1]))
	case "records": // every group record, as Members named by their member keys (MEMORY USAGE counts them)
		var res engine.Result
		prefix := engine.MemberPrefix(nil, st.key, st.meta.Gen)
		space := append(prefix[:len(prefix):len(prefix)], groupSpace...)
		err := st.tx.Scan(st.mt(), engine.PrefixRange(space), func(k []byte, it engine.Item) bool {
			res.Members = append(res.Members, engine.Member{Name: append([]byte(nil), k[len(prefix):]...), Item: it})
			return true
		})
		return res, err
	default:
		return engine.Result{}, engine.ErrInvalid
	}
	if err != nil {
		return engine.Result{}, err
	}
	return out.result(), nil
}

// lagReply adds a group's entries-read and lag (null when unknown).
func (st *stream) lagReply(out *replyBuf, g group) error {
	out.str("entries-read")
	if g.read != invalidRead {
		out.integer(g.read)
	} else {
		out.null()
	}
	out.str("lag")
	lag, ok, err := st.lag(g)
	if ok {
		out.integer(lag)
	} else {
		out.null()
	}
	return err
}

func (st *stream) infoGroups(out *replyBuf) error {
	var gs []group
	if err := st.groups(func(g group) bool { gs = append(gs, g); return true }); err != nil {
		return err
	}
	out.array(len(gs))
	for _, g := range gs {
		consumers := int64(0)
		if err := st.consumers(g.name, func(consumer) bool { consumers++; return true }); err != nil {
			return err
		}
		out.mapOf(6)
		out.str("name")
		out.bulk(g.name)
		out.str("consumers")
		out.integer(consumers)
		out.str("pending")
		out.integer(g.pending)
		out.str("last-delivered-id")
		out.id(g.last)
		if err := st.lagReply(out, g); err != nil {
			return err
		}
	}
	return nil
}

func (st *stream) infoConsumers(out *replyBuf, g []byte) error {
	var cs []consumer
	if err := st.consumers(g, func(c consumer) bool { cs = append(cs, c); return true }); err != nil {
		return err
	}
	now := st.tx.Now()
	out.array(len(cs))
	for _, c := range cs {
		out.mapOf(4)
		out.str("name")
		out.bulk(c.name)
		out.str("pending")
		out.integer(c.pending)
		out.str("idle")
		out.integer(max(now-c.seen, 0))
		out.str("inactive")
		if c.active == -1 {
			out.integer(-1)
		} else {
			out.integer(now - c.active)
		}
	}
	return nil
}

// infoStream answers XINFO STREAM, or with full XINFO STREAM FULL with at most count entries, pending entries
// and pending entries per consumer (count 0: all).
func (st *stream) infoStream(out *replyBuf, full bool, count int64) error {
	var gs []group
	if err := st.groups(func(g group) bool { gs = append(gs, g); return true }); err != nil {
		return err
	}
	first, err := st.firstID()
	if err != nil {
		return err
	}
	// Redis's radix tree holds a node of up to 100 entries (stream-node-max-entries); anykv keeps no such
	// nodes, and answers what Redis would for a stream never deleted from.
	keys := (st.meta.Count + 99) / 100
	out.mapOf(map[bool]int{false: 10, true: 9}[full])
	out.str("length")
	out.integer(st.meta.Count)
	out.str("radix-tree-keys")
	out.integer(keys)
	out.str("radix-tree-nodes")
	out.integer(keys + 1)
	out.str("last-generated-id")
	out.id(st.lastID())
	out.str("max-deleted-entry-id")
	out.id(st.tally.maxDeleted)
	out.str("entries-added")
	out.integer(st.entriesAdded())
	out.str("recorded-first-entry-id")
	out.id(first)
	if !full {
		out.str("groups")
		out.integer(int64(len(gs)))
		for _, rev := range []bool{false, true} {
			out.str(map[bool]string{false: "first-entry", true: "last-entry"}[rev])
			found := false
			if err := st.entries(ID{}, maxStreamID, rev, func(id ID, v []byte) bool {
				found, err = true, out.entry(id, v)
				return false
			}); err != nil {
				return err
			}
			if err != nil {
				return err
			}
			if !found {
				out.null()
			}
		}
		return nil
	}
	var entries replyBuf
	n := 0
	var ferr error
	if err := st.entries(ID{}, maxStreamID, false, func(id ID, v []byte) bool {
		if count > 0 && int64(n) >= count {
			return false
		}
		n++
		ferr = entries.entry(id, v)
		return ferr == nil
	}); err != nil || ferr != nil {
		return errors.Join(err, ferr)
	}
	out.str("entries")
	out.array(n)
	*out = append(*out, entries...)
	out.str("groups")
	out.array(len(gs))
	for _, g := range gs {
		var all []nack
		if err := st.nacks(g.name, ID{}, maxStreamID, func(p nack) bool {
			all = append(all, p)
			return count == 0 || int64(len(all)) < count
		}); err != nil {
			return err
		}
		out.mapOf(7)
		out.str("name")
		out.bulk(g.name)
		out.str("last-delivered-id")
		out.id(g.last)
		if err := st.lagReply(out, g); err != nil {
			return err
		}
		out.str("pel-count")
		out.integer(g.pending)
		out.str("pending")
		out.array(len(all))
		for _, p := range all {
			out.array(4)
			out.id(p.id)
			out.bulk(p.consumer)
			out.integer(p.at)
			out.integer(p.count)
		}
		var cs []consumer
		if err := st.consumers(g.name, func(c consumer) bool { cs = append(cs, c); return true }); err != nil {
			return err
		}
		out.str("consumers")
		out.array(len(cs))
		for _, c := range cs {
			var mine []nack
			if err := st.nacksOf(g.name, c.name, ID{}, maxStreamID, func(p nack) bool {
				mine = append(mine, p)
				return count == 0 || int64(len(mine)) < count
			}); err != nil {
				return err
			}
			out.mapOf(5)
			out.str("name")
			out.bulk(c.name)
			out.str("seen-time")
			out.integer(c.seen)
			out.str("active-time")
			out.integer(c.active)
			out.str("pel-count")
			out.integer(c.pending)
			out.str("pending")
			out.array(len(mine))
			for _, p := range mine {
				out.array(3)
				out.id(p.id)
				out.integer(p.at)
				out.integer(p.count)
			}
		}
	}
	return nil
}
