package cache

import (
	"context"
	"encoding/binary"
	"errors"

	"anykv/internal/engine"
)

// Answers of key reads. A batch made only of reads of one collection each (member reads: HGET, HGETALL,
// SISMEMBER, SMEMBERS; calls that read their own key and nothing else, engine.KeyRead: LRANGE, LINDEX, ZRANGE,
// ZSCORE, ZRANK) is answered from memory when every answer is cached, else read from the engine, whose answers
// are kept beside the key's item: in the shard of the key's slot, under the slot, so that everything that drops
// the slot (a write of the key or its members, a flush, a wide call) drops them with it. They are filled under
// the items' rule, only if no batch touched the shard since before the engine read them, and kept until the
// key's expiry or the earliest one among the items answered (the only ways time changes such an answer). A read
// of a hot list or hash then costs a map lookup instead of the engine's (LRANGE_100: benchmarks.md).
//
// Answers take at most a quarter of the shard's bytes on top of its items.

// callAnswer is one cached answer of a key's read.
type callAnswer struct {
	call  string // what was read (callID)
	res   engine.Result
	until int64 // the first expiry of the key or an item answered, when read (0: none): not served from then on
	size  int64
}

// maxAnswersPerKey bounds the answers kept per key (the ranges of one list a workload reads, most often one).
const maxAnswersPerKey = 8

// keyReads reports whether every mutation of b is a key read, so the batch may be answered from memory.
func keyReads(b *engine.Batch) bool {
	for i := range b.Muts {
		m := &b.Muts[i]
		if m.Guard || m.Cond != engine.CondNone {
			return false
		}
		if m.Op != engine.OpMemberGet && m.Op != engine.OpMembers && !engine.KeyRead(m) {
			return false
		}
	}
	return len(b.Muts) > 0
}

// callID names a key read: its op and the kind it expects, then a member read's member or a call's function and
// arguments, each length-prefixed so that no two reads share one.
func callID(buf []byte, m *engine.Mutation) []byte {
	buf = append(buf, byte(m.Op), byte(m.Coll.Kind))
	if m.Op != engine.OpCall {
		buf = binary.AppendUvarint(buf, uint64(len(m.Coll.Member)))
		return append(buf, m.Coll.Member...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(m.Call.Name)))
	buf = append(buf, m.Call.Name...)
	for _, a := range m.Call.Args {
		buf = binary.AppendUvarint(buf, uint64(len(a)))
		buf = append(buf, a...)
	}
	return buf
}

// applyKeyReads answers a batch of key reads (keyReads) from memory when it can, else through the engine,
// keeping the answers.
func (c *Cache) applyKeyReads(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	var sbuf, cbuf [128]byte
	if c.wide.Load() == 0 && !c.closed.Load() {
		res := make([]engine.Result, len(b.Muts))
		hit := true
		var shs []uint8
		var gens []uint64
		for i := range b.Muts {
			m := &b.Muts[i]
			s := appendSlot(sbuf[:0], m.Table, m.Key)
			var gen uint64
			if res[i], gen, hit = c.answer(s, callID(cbuf[:0], m), b.Now); !hit {
				break
			}
			if len(b.Muts) > 1 {
				shs, gens = append(shs, shardOf(c.hashOfBytes(s))), append(gens, gen)
			}
		}
		// Several answers are one state, as the batch must read, only if no batch touched their shards while
		// they were looked up one by one: every write moves its shards' generation before the engine applies
		// it, so an answer from before a write and one from after it cannot both pass.
		for i := 0; hit && i < len(shs); i++ {
			sh := &c.shards[shs[i]]
			sh.mu.RLock()
			hit = sh.gen == gens[i]
			sh.mu.RUnlock()
		}
		if hit {
			c.callHits.Add(int64(len(b.Muts)))
			return res, nil
		}
	}
	c.callMisses.Add(int64(len(b.Muts)))
	gens := make([]uint64, len(b.Muts))
	for i := range b.Muts {
		m := &b.Muts[i]
		s := appendSlot(sbuf[:0], m.Table, m.Key)
		h := c.hashOfBytes(s)
		sh := &c.shards[shardOf(h)]
		sh.mu.RLock()
		gens[i] = sh.gen
		if sh.busy(h) {
			gens[i] = ^uint64(0) // a write in flight: this answer is not kept
		}
		sh.mu.RUnlock()
	}
	res, err := c.eng.Apply(ctx, b)
	if err != nil || len(res) != len(b.Muts) {
		return res, err
	}
	for i := range b.Muts {
		if gens[i] != ^uint64(0) {
			c.keepAnswer(ctx, &b.Muts[i], b.Now, gens[i], res[i])
		}
	}
	return res, nil
}

// answer finds the cached answer of call on the key of slot s, live at now, and the shard's generation then.
func (c *Cache) answer(s []byte, call []byte, now int64) (engine.Result, uint64, bool) {
	h := c.hashOfBytes(s)
	sh := &c.shards[shardOf(h)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	e, ok := sh.calls.GetHashed(s, h)
	if !ok || c.wide.Load() > 0 {
		return engine.Result{}, 0, false
	}
	for i := range e.Val {
		a := &e.Val[i]
		if a.call == string(call) {
			if a.until != 0 && a.until <= now {
				return engine.Result{}, 0, false
			}
			return a.res, sh.gen, true
		}
	}
	return engine.Result{}, 0, false
}

// keepAnswer stores the answer res of m, read by a batch of time now, if no batch touched the key's shard since
// gen was read before the engine was asked.
func (c *Cache) keepAnswer(ctx context.Context, m *engine.Mutation, now int64, gen uint64, res engine.Result) {
	if len(res.Wrote) > 0 {
		return
	}
	// The key's expiry, through the cache's own item (a lookup when it holds it). Read before the shard is
	// checked: if the key changed since gen, the check below drops the answer anyway.
	it, _, err := c.get(ctx, m.Table, m.Key, now)
	until := int64(0)
	switch {
	case err == nil:
		until = it.Expires
	case !errors.Is(err, engine.ErrNotFound):
		return
	}
	s := slot(m.Table, m.Key)
	call := string(callID(nil, m))
	size := int64(len(call)) + resultSize(&res) + entryOverhead
	budget := c.shardBytes / 4 // the shard's bytes for answers
	if size+int64(len(s)) > budget/4 {
		return // too big to be worth a slot
	}
	a := callAnswer{call: call, res: copyResult(res), until: earliest(until, &res), size: size}
	h := c.hashOf(s)
	sh := &c.shards[shardOf(h)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen || sh.busy(h) {
		return
	}
	var list []callAnswer
	size = int64(len(s)) + a.size
	if e, ok := sh.calls.GetHashed([]byte(s), h); ok {
		for _, old := range e.Val { // a key's answers together take at most half the shard's share
			if old.call != a.call && len(list) < maxAnswersPerKey-1 && size+old.size <= budget/2 {
				list = append(list, old)
				size += old.size
			}
		}
	}
	list = append(list, a)
	c.evictions.Add(int64(sh.calls.PutHashed(s, h, list, size, budget)))
}

// earliest is the first of expiry and the expiries of the items an answer holds (0: none of them expires).
func earliest(expiry int64, r *engine.Result) int64 {
	at := func(e int64) {
		if e != 0 && (expiry == 0 || e < expiry) {
			expiry = e
		}
	}
	at(r.Old.Expires)
	at(r.New.Expires)
	for i := range r.Members {
		at(r.Members[i].Item.Expires)
	}
	return expiry
}

// copyResult copies the bytes of an answer the cache keeps: the engine's result may alias its buffers.
func copyResult(r engine.Result) engine.Result {
	out := engine.Result{Err: r.Err, OldFound: r.OldFound, NewFound: r.NewFound, Unchanged: r.Unchanged,
		Old: r.Old, New: r.New}
	out.Old.Value = clip(r.Old.Value)
	out.New.Value = clip(r.New.Value)
	if r.Members != nil {
		out.Members = make([]engine.Member, len(r.Members))
		for i, mb := range r.Members {
			out.Members[i] = engine.Member{Name: clip(mb.Name), Item: mb.Item}
			out.Members[i].Item.Value = clip(mb.Item.Value)
		}
	}
	return out
}

// clip copies b into a slice whose capacity is its length, so that an append to the shared answer copies.
func clip(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// resultSize approximates the bytes an answer holds.
func resultSize(r *engine.Result) int64 {
	n := int64(len(r.Old.Value) + len(r.New.Value))
	for _, mb := range r.Members {
		n += int64(len(mb.Name)+len(mb.Item.Value)) + 80
	}
	return n
}
