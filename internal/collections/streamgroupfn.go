package collections

import (
	"strconv"

	"anykv/internal/engine"
)

// The consumer-group functions: XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM (writes) and XPENDING, XINFO
// (reads). Each runs in the engine's batch on one stream, so each command is atomic and durable with the rest
// of its batch. Arguments arrive parsed and checked by the protocol; they are plain text here.

// XGroup runs an XGROUP subcommand on the stream at key: op is "create" (args: group, id or "$", "1" for
// MKSTREAM, entries-read or ""), "setid" (group, id or "$", entries-read or ""), "destroy" (group),
// "createconsumer" or "delconsumer" (group, consumer). Errors: ErrNotFound (no stream), ErrNoGroup,
// ErrBusyGroup, ErrWrongType; Int for DESTROY, CREATECONSUMER and DELCONSUMER.
func XGroup(table string, key []byte, op string, args ...[]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnXGroup, append([][]byte{[]byte(op)}, args...)...)
}

// parseRead parses an entries-read argument ("": none given, -1).
func parseRead(b []byte) int64 {
	if len(b) == 0 {
		return invalidRead
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

func xgroup(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	op, name := string(args[0]), args[1]
	mkStream := op == "create" && len(args) > 3 && string(args[3]) == "1"
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists || mkStream, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	if err := st.loadTally(); err != nil {
		return engine.Result{}, err
	}
	g, err := st.group(name)
	if err != nil {
		return engine.Result{}, err
	}
	if !g.found && op != "create" && op != "destroy" {
		return engine.Result{Err: ErrNoGroup}, nil
	}
	idArg := func() ID {
		if string(args[2]) == "$" {
			return st.lastID()
		}
		id, _ := ParseRangeID(args[2], false)
		return id
	}
	switch op {
	case "create":
		if g.found {
			return engine.Result{Err: ErrBusyGroup}, nil
		}
		if !st.exists {
			st.create()
		}
		g.last, g.read = idArg(), parseRead(args[4])
		st.putGroup(g)
	case "setid":
		g.last, g.read = idArg(), parseRead(args[3])
		st.putGroup(g)
	case "destroy":
		if !g.found {
			return intResult(0), nil
		}
		st.tx.Delete(st.mt(), st.gkey(tagGroup, name))
		for _, tag := range []byte{tagPending, tagOwner, tagConsumer} {
			var keys [][]byte
			prefix := st.gkey(tag, lp(name))
			if err := st.scanPrefix(func(rest, _ []byte) bool {
				keys = append(keys, append(prefix[:len(prefix):len(prefix)], rest...))
				return true
			}, tag, lp(name)); err != nil {
				return engine.Result{}, err
			}
			for _, k := range keys {
				st.tx.Delete(st.mt(), k)
			}
		}
		st.put()
		return intResult(1), nil
	case "createconsumer":
		c, err := st.consumer(name, args[2])
		if err != nil || c.found {
			return intResult(0), err
		}
		c.seen, c.found = tx.Now(), true
		st.putConsumer(name, c)
		st.put()
		res := intResult(1)
		consumerCreated(&res, true)
		return res, nil
	case "delconsumer":
		c, err := st.consumer(name, args[2])
		if err != nil || !c.found {
			return intResult(0), err
		}
		var mine []nack
		if err := st.nacksOf(name, c.name, ID{}, maxStreamID, func(p nack) bool {
			mine = append(mine, p)
			return true
		}); err != nil {
			return engine.Result{}, err
		}
		for _, p := range mine {
			st.delNack(name, p)
		}
		st.tx.Delete(st.mt(), st.gkey(tagConsumer, lp(name), c.name))
		if err := st.flushPel(name); err != nil {
			return engine.Result{}, err
		}
		st.put()
		res := intResult(int64(len(mine)))
		res.Old, res.OldFound = engine.Item{Value: []byte("deleted")}, true
		return res, nil
	default:
		return engine.Result{}, engine.ErrInvalid
	}
	st.put()
	return engine.Result{}, nil
}

// XReadGroup reads the stream at key for consumer of group: with id ">" the entries after the group's
// last-delivered-id (which moves; each becomes pending for consumer unless noAck), else consumer's pending
// entries after id. At most count (< 0: all). Members are the entries (Name the ID text, Item.Value the encoded
// fields, empty for a pending entry since deleted); NewFound says the read was of the history (answered even
// when empty). keys are all the streams of the command, in order: before it reads or writes anything, the call
// checks that each is a stream with the group, as Redis checks them all before it reads any, and fails as the
// first that is not does (ErrNoGroup or ErrWrongType, with that key in Result.New.Value), so every call of one
// XREADGROUP fails alike and none of them writes.
func XReadGroup(table string, key, group, consumer, id []byte, count int64, noAck bool, keys ...[]byte) engine.Mutation {
	args := append([][]byte{group, consumer, id, num(count), flag(noAck)}, keys...)
	return engine.CallMutation(table, key, fnXReadGroup, args...)
}

// checkGroups checks that each key holds a stream with group, answering the first failure.
func checkGroups(tx *engine.Tx, group []byte, keys [][]byte) (*engine.Result, error) {
	for _, k := range keys {
		st, wrong, err := openStream(tx, tx.Table(), k)
		if err != nil {
			return nil, err
		}
		res := engine.Result{Err: ErrNoGroup, New: engine.Item{Value: k}}
		if wrong {
			res.Err = engine.ErrWrongType
			return &res, nil
		}
		if g, err := st.group(group); err != nil || !g.found {
			return &res, err
		}
	}
	return nil, nil
}

func xreadgroup(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 5 {
		return engine.Result{}, engine.ErrInvalid
	}
	gname, cname, count, noAck := args[0], args[1], parseRead(args[3]), string(args[4]) == "1"
	if stop, err := checkGroups(tx, gname, args[5:]); stop != nil || err != nil {
		if err != nil {
			return engine.Result{}, err
		}
		return *stop, nil
	}
	st, g, stop, done, err := openGroup(tx, gname)
	if done {
		return stop, err
	}
	now := tx.Now()
	c, created, err := st.touchConsumer(gname, cname)
	if err != nil {
		return engine.Result{}, err
	}
	var res engine.Result
	consumerCreated(&res, created)
	full := func() bool { return count >= 0 && int64(len(res.Members)) >= count }
	if string(args[2]) != ">" { // the consumer's own history
		res.NewFound = true
		after, _ := ParseID(args[2], false)
		from, ok := after.Next()
		var mine []nack
		if ok {
			err = st.nacksOf(gname, cname, from, maxStreamID, func(p nack) bool {
				mine = append(mine, p)
				return !(count >= 0 && int64(len(mine)) >= count)
			})
		}
		if err != nil {
			return engine.Result{}, err
		}
		for _, p := range mine {
			v, found, err := st.entry(p.id)
			if err != nil {
				return engine.Result{}, err
			}
			if found {
				p.at, p.count = now, p.count+1
				st.putNack(gname, p, p.consumer)
			}
			res.Members = append(res.Members, engine.Member{Name: []byte(p.id.String()), Item: engine.Item{Value: v}})
		}
	} else if from, ok := g.last.Next(); ok && g.last.less(st.lastID()) {
		var ids []ID
		var values [][]byte
		err = st.entries(from, maxStreamID, false, func(id ID, v []byte) bool {
			if full() {
				return false
			}
			ids, values = append(ids, id), append(values, v)
			res.Members = append(res.Members, engine.Member{Name: []byte(id.String()), Item: engine.Item{Value: v}})
			return true
		})
		if err != nil {
			return engine.Result{}, err
		}
		for _, id := range ids {
			if err := st.advance(&g, id); err != nil {
				return engine.Result{}, err
			}
			if !noAck { // pending for this consumer now, whoever it was pending for (after a SETID back, a FORCE)
				old, found, err := st.nack(gname, id)
				if err != nil {
					return engine.Result{}, err
				}
				var prev []byte
				if found {
					prev = old.consumer
				}
				st.putNack(gname, nack{id: id, consumer: cname, at: now, count: 1}, prev)
			}
		}
		if len(ids) > 0 {
			c.active = now
			st.putGroup(g)
		}
	}
	st.putConsumer(gname, c) // its seen time, even when nothing was read (Redis 7.2's idle)
	if err := st.flushPel(gname); err != nil {
		return engine.Result{}, err
	}
	st.put()
	return res, nil
}

// XAck acknowledges ids (checked IDs) in group; Int is how many were pending.
func XAck(table string, key, group []byte, ids ...[]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnXAck, append([][]byte{group}, ids...)...)
}

func xack(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	st, _, stop, done, err := openGroup(tx, args[0])
	switch {
	case err != nil:
		return engine.Result{}, err
	case done && stop.Err == ErrNoGroup:
		return intResult(0), nil
	case done:
		return stop, nil
	}
	n := int64(0)
	for _, a := range args[1:] {
		id, _ := ParseID(a, false)
		if p, found, err := st.nack(args[0], id); err != nil {
			return engine.Result{}, err
		} else if found {
			st.delNack(args[0], p)
			n++
		}
	}
	if n > 0 {
		if err := st.flushPel(args[0]); err != nil {
			return engine.Result{}, err
		}
		st.put()
	}
	return intResult(n), nil
}
