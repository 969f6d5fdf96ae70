package redis

import (
	"errors"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
)

// xreadgroupKeys finds XREADGROUP's keys: the first half of what follows STREAMS, passing over the values of
// GROUP, COUNT and BLOCK (a group or consumer named "streams" is no STREAMS).
func xreadgroupKeys(args [][]byte) []int {
	for p := 1; p < len(args); p++ {
		switch {
		case eq(args[p], "group"):
			p += 2
		case eq(args[p], "count") || eq(args[p], "block"):
			p++
		case eq(args[p], "streams"):
			var idx []int
			for i := p + 1; i <= p+(len(args)-p-1)/2; i++ {
				idx = append(idx, i)
			}
			return idx
		}
	}
	return nil
}

// readGroupSpec is a parsed XREADGROUP.
type readGroupSpec struct {
	group, consumer []byte
	count           int64 // -1: all
	block           time.Duration
	hasBlock, noAck bool
	keys, ids       [][]byte
}

// parseReadGroup parses XREADGROUP's arguments, answering Redis's errors.
func (s *session) parseReadGroup(args [][]byte) (readGroupSpec, bool) {
	sp := readGroupSpec{count: -1}
	streams := 0
	for i := 1; i < len(args) && streams == 0; i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "block") && more > 0:
			n, ok := argInt(args[i+1])
			switch {
			case !ok:
				s.w.Error("ERR timeout is not an integer or out of range")
				return sp, false
			case n < 0:
				s.w.Error("ERR timeout is negative")
				return sp, false
			}
			sp.block, sp.hasBlock = time.Duration(n)*time.Millisecond, true
			i++
		case eq(args[i], "count") && more > 0:
			n, ok := argInt(args[i+1])
			if !ok {
				s.w.Error(errNotInt)
				return sp, false
			}
			if n > 0 {
				sp.count = n
			}
			i++
		case eq(args[i], "streams") && more > 0:
			streams = i + 1
			if (len(args)-streams)%2 != 0 {
				s.w.Error("ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.")
				return sp, false
			}
		case eq(args[i], "group") && more >= 2:
			sp.group, sp.consumer = args[i+1], args[i+2]
			i += 2
		case eq(args[i], "noack"):
			sp.noAck = true
		default:
			s.w.Error("ERR syntax error")
			return sp, false
		}
	}
	switch {
	case streams == 0:
		s.w.Error("ERR syntax error")
		return sp, false
	case sp.group == nil:
		s.w.Error("ERR Missing GROUP option for XREADGROUP")
		return sp, false
	}
	n := (len(args) - streams) / 2
	for _, id := range args[streams+n:] {
		switch {
		case string(id) == "$":
			s.w.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
			return sp, false
		case string(id) != ">":
			if _, ok := collections.ParseID(id, false); !ok {
				s.w.Error(collections.ErrStreamID.Error())
				return sp, false
			}
		}
	}
	// Waiting may refill the parser's buffer.
	sp.group, sp.consumer = copyArgs([][]byte{sp.group})[0], copyArgs([][]byte{sp.consumer})[0]
	sp.keys, sp.ids = copyArgs(args[streams:streams+n]), copyArgs(args[streams+n:])
	return sp, true
}

// cmdXReadGroup reads each stream for a consumer of a group: ">" delivers the entries no consumer of the group
// was given yet (each becomes pending unless NOACK), an ID the consumer's own pending entries after it. With BLOCK
// and only ">" with nothing new, it waits as XREAD BLOCK does, woken by XADD, and by any write of its keys: a
// stream deleted (DEL, FLUSHDB) or its group destroyed meanwhile answers NOGROUP, a key of another type now
// WRONGTYPE, as Redis 7.2 does (it runs the command again). It runs on its own
// (not in a script; in MULTI after the transaction's batch, without blocking), as XREAD does.
func cmdXReadGroup(s *session, args [][]byte) {
	sp, ok := s.parseReadGroup(args)
	if !ok {
		return
	}
	// apply applies muts and answers the first error (false: none, res are the results).
	apply := func(muts []engine.Mutation) ([]engine.Result, bool) {
		res, err := s.h.store.Apply(respCtx, muts)
		if err != nil {
			s.w.Error(errText(err))
			return nil, true
		}
		return res, s.readGroupErr(sp, res)
	}
	attempt := func() bool {
		muts := make([]engine.Mutation, 0, len(sp.keys))
		if len(sp.keys) > 1 { // every stream and group is checked before any is read, as Redis does
			for _, k := range sp.keys {
				muts = append(muts, groupProbe(s.table(), k, sp.group))
			}
			if _, failed := apply(muts); failed {
				return true
			}
			muts = muts[:0]
		}
		for i, k := range sp.keys {
			muts = append(muts, collections.XReadGroup(s.table(), k, sp.group, sp.consumer, sp.ids[i], sp.count, sp.noAck))
		}
		res, failed := apply(muts)
		if failed {
			return true
		}
		served := 0
		for i, r := range res {
			if collections.ConsumerCreated(r) {
				s.h.notify(notifyStream, "xgroup-createconsumer", s.db, sp.keys[i])
			}
			if r.NewFound || len(r.Members) > 0 {
				served++
			}
		}
		if served == 0 {
			return false
		}
		if s.w.Proto() >= 3 {
			s.w.MapHeader(served)
		} else {
			s.w.ArrayHeader(served)
		}
		for i, r := range res {
			if !r.NewFound && len(r.Members) == 0 {
				continue
			}
			if s.w.Proto() < 3 {
				s.w.ArrayHeader(2)
			}
			s.w.Bulk(sp.keys[i])
			s.w.ArrayHeader(len(r.Members))
			for _, m := range r.Members {
				s.w.ArrayHeader(2)
				s.w.Bulk(m.Name)
				if len(m.Item.Value) == 0 { // pending, but deleted from the stream since
					s.w.NullArray()
					continue
				}
				fields, _ := collections.DecodeFields(m.Item.Value)
				s.w.ArrayHeader(len(fields))
				for _, f := range fields {
					s.w.Bulk(f)
				}
			}
		}
		return true
	}
	if !sp.hasBlock {
		if !attempt() {
			s.w.NullArray()
		}
		return
	}
	s.h.waiters.groups.Add(1)
	defer s.h.waiters.groups.Add(-1)
	if !s.block(sp.keys, sp.block, false, attempt) {
		s.w.NullArray()
	}
}

// readGroupErr answers the first error among XREADGROUP's results, if any.
func (s *session) readGroupErr(sp readGroupSpec, res []engine.Result) bool {
	for i, r := range res {
		switch {
		case errors.Is(r.Err, collections.ErrNoGroup):
			s.w.Error("NOGROUP No such key '" + string(sp.keys[i]) + "' or consumer group '" + string(sp.group) + "' in XREADGROUP with GROUP option")
			return true
		case r.Err != nil:
			s.w.Error(errText(r.Err))
			return true
		}
	}
	return false
}
