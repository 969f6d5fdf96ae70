package redis

import (
	"anykv/internal/engine"
)

// Mixed pipelines. A pipeline of GETs with a SET here and there used to go to the engine whole, so every GET of
// it was read by the engine's single writer (a Pebble point read, no item cache) while the connection waited for
// the SET's fsync anyway. runSplit answers the plain reads that no earlier command of the batch can change
// directly, as a batch of reads alone is answered (item cache, no writer), and sends only the rest to the engine.
//
// It is linearizable: such a read and the writes before it in the pipeline touch different keys and are all in
// flight at once (the client sent them without waiting), so the read may take effect before them; its reply
// still goes out in order, after theirs. Reads that an earlier command may change (the same key, or any key
// after a RENAME, COPY, FLUSH, script or collection move, or a guard that can abort the whole batch) stay in
// the batch. Keyspace notifications need their probe reads next to the write they bracket, so with them on
// nothing is split; nor over a remote engine (Options.RemoteEngine), where each direct read would be a round trip
// of its own and the batch reads all its keys in one.

// earlyReads marks the plain reads of muts that no earlier mutation can change; it returns how many there are.
func earlyReads(muts []engine.Mutation, early []bool) int {
	for i := range muts {
		if muts[i].Guard && muts[i].Group == 0 {
			return 0 // a failed guard aborts the whole batch, reads included
		}
	}
	n := 0
	written := map[string]struct{}{}
	barrier := false // an earlier mutation may write keys it does not name
	var kbuf []byte
	for i := range muts {
		m := &muts[i]
		kbuf = append(append(append(kbuf[:0], m.Table...), 0), m.Key...)
		if m.Op == engine.OpGet && !m.Touch {
			if _, w := written[string(kbuf)]; !w && !barrier {
				early[i] = true
				n++
			}
			continue
		}
		switch m.Op {
		case engine.OpRename, engine.OpCopy, engine.OpFlush, engine.OpCall:
			barrier = true
		}
		written[string(kbuf)] = struct{}{}
	}
	return n
}

// hasPlainRead reports whether muts hold a read runSplit could answer directly.
func hasPlainRead(muts []engine.Mutation) bool {
	for i := range muts {
		if muts[i].Op == engine.OpGet && !muts[i].Touch {
			return true
		}
	}
	return false
}

// runSplit applies the batch with its early reads answered directly; ok is false when it has none worth it.
func (s *session) runSplit(muts []engine.Mutation) (res []engine.Result, err error, ok bool) {
	if len(muts) < 2 || !hasPlainRead(muts) {
		return nil, nil, false // a pipeline of writes alone: nothing to split, nothing to allocate
	}
	early := make([]bool, len(muts))
	n := earlyReads(muts, early)
	if n == 0 {
		return nil, nil, false
	}
	rest := make([]engine.Mutation, 0, len(muts)-n)
	reads := make([]engine.Mutation, 0, n)
	for i := range muts {
		if early[i] {
			reads = append(reads, muts[i])
		} else {
			rest = append(rest, muts[i])
		}
	}
	direct := s.readDirect(reads)
	applied, err := s.apply(rest)
	if err != nil {
		return nil, err, true
	}
	res = make([]engine.Result, len(muts))
	for i, r, a := 0, 0, 0; i < len(muts); i++ {
		if early[i] {
			res[i], r = direct[r], r+1
		} else {
			res[i], a = applied[a], a+1
		}
	}
	return res, nil, true
}
