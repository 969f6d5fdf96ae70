package redis

import (
	"anykv/internal/engine"
)

// Mixed pipelines. A pipeline of GETs with a SET here and there used to go to the engine whole, so every GET of
// it was read by the engine's single writer while the connection waited for the SET's fsync anyway. runSplit
// answers the plain reads before the batch's first write directly, before the batch is applied, and those
// after its last write directly once it is applied, as a batch of reads alone is answered (read cache, no
// writer); only the writes and the reads between them go to the engine.
//
// Commands still take effect in the order the connection sent them, as in Redis: a read before the first write
// is read before any write of the batch is applied, one after the last write after all are. (Answering every read
// that names no key written earlier in the pipeline first, as this did before, kept each key linearizable but not
// the order across keys: two clients pipelining [SET x 1, GET y] and [SET y 1, GET x] could both read nil, which
// Redis never answers.) Replies go out in order, after the batch is durable. Nothing is split when the
// connection's reads are not linearizable (READONLY, --consistency serializable): a direct read would then be
// served at that weaker level, where a pipeline that also writes reads linearizably, its own writes included.
// Guards come only with EXEC, which is never split. Keyspace notifications need their probe reads next to the
// write they bracket, so with them on nothing is split; nor over a remote engine (Options.RemoteEngine), where
// each direct read would be a round trip of its own and the batch reads all its keys in one.

// splitReads counts the plain reads of muts before its first write (first) and after its last write (last).
func splitReads(muts []engine.Mutation) (first, last int) {
	for first < len(muts) && plainRead(&muts[first]) {
		first++
	}
	for last < len(muts)-first && plainRead(&muts[len(muts)-1-last]) {
		last++
	}
	return first, last
}

func plainRead(m *engine.Mutation) bool { return m.Op == engine.OpGet && !m.Touch }

// runSplit applies the batch with the reads before its first write and after its last answered directly; ok is
// false when there are none, or when the batch is all reads (run answers those).
func (s *session) runSplit(muts []engine.Mutation) (res []engine.Result, err error, ok bool) {
	first, last := splitReads(muts)
	if first+last == 0 || first == len(muts) || !s.h.store.ReadsLinearizable(s.readCtx()) {
		return nil, nil, false
	}
	res = s.split.get(len(muts))[:0] // flush releases it
	if first > 0 {
		head, over := s.readDirect(muts[:first])
		if over {
			return nil, engine.ErrBatchTooBig, true // nothing written yet: flush answers one request at a time
		}
		res = append(res, head...)
	}
	applied, err := s.apply(muts[first : len(muts)-last])
	if err != nil {
		return nil, err, true
	}
	res = append(res, applied...)
	if last > 0 {
		// The writes happened: past engine.MaxBatchRead the reads left answer ErrBatchTooBig (send them again).
		// Nor can they be answered one at a time any more: they wait for room as one request's reads would.
		pipelined := s.pipelined
		s.pipelined = false
		tail, _ := s.readDirect(muts[len(muts)-last:])
		s.pipelined = pipelined
		res = append(res, tail...)
	}
	return res, nil, true
}
