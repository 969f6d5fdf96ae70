package redis

import (
	"errors"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

func init() { notes["xreadgroup"] = noteXReadGroup }

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

// hasBlock says whether XREADGROUP's options (before STREAMS) ask to BLOCK.
func hasBlock(args [][]byte) bool {
	for p := 1; p < len(args) && !eq(args[p], "streams"); p++ {
		switch {
		case eq(args[p], "block"):
			return true
		case eq(args[p], "group"):
			p += 2
		case eq(args[p], "count"):
			p++
		}
	}
	return false
}

// parseReadGroup parses XREADGROUP's arguments; msg is Redis's error when they are wrong.
func parseReadGroup(args [][]byte) (sp readGroupSpec, msg string) {
	sp.count = -1
	streams := 0
	for i := 1; i < len(args) && streams == 0; i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "block") && more > 0:
			n, ok := argInt(args[i+1])
			switch {
			case !ok:
				return sp, "ERR timeout is not an integer or out of range"
			case n < 0:
				return sp, "ERR timeout is negative"
			}
			sp.block, sp.hasBlock = time.Duration(n)*time.Millisecond, true
			i++
		case eq(args[i], "count") && more > 0:
			n, ok := argInt(args[i+1])
			if !ok {
				return sp, errNotInt
			}
			if n > 0 {
				sp.count = n
			}
			i++
		case eq(args[i], "streams") && more > 0:
			streams = i + 1
			if (len(args)-streams)%2 != 0 {
				return sp, "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
			}
		case eq(args[i], "group") && more >= 2:
			sp.group, sp.consumer = args[i+1], args[i+2]
			i += 2
		case eq(args[i], "noack"):
			sp.noAck = true
		default:
			return sp, "ERR syntax error"
		}
	}
	switch {
	case streams == 0:
		return sp, "ERR syntax error"
	case sp.group == nil:
		return sp, "ERR Missing GROUP option for XREADGROUP"
	}
	n := (len(args) - streams) / 2
	sp.ids = append([][]byte(nil), args[streams+n:]...)
	for i, id := range sp.ids {
		switch {
		case string(id) == "$":
			return sp, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
		case string(id) != ">":
			v, ok := collections.ParseID(id, false)
			if !ok {
				return sp, collections.ErrStreamID.Error()
			}
			if v == maxID { // Redis marks ">" with the largest ID: that ID reads new entries
				sp.ids[i] = []byte(">")
			}
		}
	}
	// The reply names the keys after the parser read further commands of the pipeline, which reuse args's outer
	// slice (not the bytes, which stay until the batch has run): the keys get a slice of their own.
	sp.keys = append([][]byte(nil), args[streams:streams+n]...)
	return sp, ""
}

// muts are the calls that read each stream: each checks all of them first, so one fails as all do.
func (sp *readGroupSpec) muts(table string) []engine.Mutation {
	var all [][]byte
	if len(sp.keys) > 1 {
		all = sp.keys
	}
	muts := make([]engine.Mutation, len(sp.keys))
	for i, k := range sp.keys {
		muts[i] = collections.XReadGroup(table, k, sp.group, sp.consumer, sp.ids[i], sp.count, sp.noAck, all...)
	}
	return muts
}

// writeReadGroup writes XREADGROUP's reply from its calls' results: the first error, or each stream that
// answered (the history always, new entries when there are); false when none did (nothing written).
func writeReadGroup(w *resp.Writer, sp *readGroupSpec, res []engine.Result) bool {
	served := 0
	for i, r := range res {
		switch {
		case errors.Is(r.Err, collections.ErrNoGroup):
			key := sp.keys[i] // or the first key of several that failed the check
			if len(r.New.Value) > 0 {
				key = r.New.Value
			}
			w.Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(sp.group) + "' in XREADGROUP with GROUP option")
			return true
		case r.Err != nil:
			w.Error(errText(r.Err))
			return true
		case r.NewFound || len(r.Members) > 0:
			served++
		}
	}
	if served == 0 {
		return false
	}
	if w.Proto() >= 3 {
		w.MapHeader(served)
	} else {
		w.ArrayHeader(served)
	}
	for i, r := range res {
		if !r.NewFound && len(r.Members) == 0 {
			continue
		}
		if w.Proto() < 3 {
			w.ArrayHeader(2)
		}
		w.Bulk(sp.keys[i])
		w.ArrayHeader(len(r.Members))
		for _, m := range r.Members {
			w.ArrayHeader(2)
			w.Bulk(m.Name)
			if len(m.Item.Value) == 0 { // pending, but deleted from the stream since
				w.NullArray()
				continue
			}
			fields, _ := collections.DecodeFields(m.Item.Value)
			w.ArrayHeader(len(fields))
			for _, f := range fields {
				w.Bulk(f)
			}
		}
	}
	return true
}

// cmdXReadGroupData is XREADGROUP in the batch: without BLOCK, in MULTI (where BLOCK waits for nothing, as in
// Redis) and in scripts.
func cmdXReadGroupData(s *session, args [][]byte) {
	sp, msg := parseReadGroup(args)
	if msg != "" {
		s.fail(msg)
		return
	}
	for _, m := range sp.muts(s.table()) {
		s.add(m)
	}
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if !writeReadGroup(w, &sp, res) {
			w.NullArray()
		}
	})
}

// noteXReadGroup: XREADGROUP sends xgroup-createconsumer for each stream where it made its consumer.
func noteXReadGroup(n *noteCtx) {
	for i, r := range n.res {
		if i < len(n.keys) && collections.ConsumerCreated(r) {
			n.emit(notifyStream, "xgroup-createconsumer", n.keys[i])
		}
	}
}

// cmdXReadGroup is XREADGROUP with BLOCK, on its own: when no stream has anything for it (only ">" and nothing
// new), it waits as XREAD BLOCK does, woken by XADD and by any write of its keys: a stream deleted (DEL,
// FLUSHDB) or its group destroyed meanwhile answers NOGROUP, a key of another type now WRONGTYPE, as Redis 7.2
// does (it runs the command again).
func cmdXReadGroup(s *session, args [][]byte) {
	sp, msg := parseReadGroup(args)
	if msg != "" {
		s.w.Error(msg)
		return
	}
	sp.group, sp.consumer = copyArgs([][]byte{sp.group})[0], copyArgs([][]byte{sp.consumer})[0]
	sp.keys, sp.ids = copyArgs(sp.keys), copyArgs(sp.ids) // waiting may refill the parser's buffer
	muts := sp.muts(s.table())
	attempt := func() bool {
		ms, spec := muts, &sp
		if j := s.wokenIndex(sp.keys); j >= 0 { // once woken, the stream whose write woke it alone, as Redis answers
			one := sp
			one.keys, one.ids = sp.keys[j:j+1], sp.ids[j:j+1]
			ms, spec = muts[j:j+1], &one // its call still checks every stream and group first
		}
		res, err := s.h.store.Apply(s.writeCtx(), ms)
		if err != nil {
			s.w.Error(errText(err))
			return true
		}
		for i, r := range res {
			if r.Err == nil && collections.ConsumerCreated(r) {
				s.h.notify(notifyStream, "xgroup-createconsumer", s.db, spec.keys[i])
			}
		}
		return writeReadGroup(s.w, spec, res)
	}
	s.h.waiters.groups.Add(1)
	defer s.h.waiters.groups.Add(-1)
	if !s.block(sp.keys, sp.block, blockGroup, attempt) {
		s.blockEnded(s.w.NullArray)
	}
}
