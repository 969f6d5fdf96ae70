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
	var written map[string]struct{} // for long batches; a short one scans its earlier mutations instead
	if len(muts) > scanLimit {
		written = map[string]struct{}{}
	}
	barrier := false // an earlier mutation may write keys it does not name
	var kbuf []byte
	for i := range muts {
		m := &muts[i]
		if written != nil {
			kbuf = append(append(append(kbuf[:0], m.Table...), 0), m.Key...)
		}
		if plainRead(m) {
			if !barrier && !writtenBefore(muts[:i], m, written, kbuf) {
				early[i] = true
				n++
			}
			continue
		}
		switch m.Op {
		case engine.OpRename, engine.OpCopy, engine.OpFlush, engine.OpCall:
			barrier = true
		}
		if written != nil {
			written[string(kbuf)] = struct{}{}
		}
	}
	return n
}

// scanLimit is the longest batch earlyReads checks by scanning (quadratic, but no map and no key strings).
const scanLimit = 64

func plainRead(m *engine.Mutation) bool { return m.Op == engine.OpGet && !m.Touch }

// writtenBefore reports whether a mutation of earlier other than a plain read names m's key: from the map of
// such keys (kbuf is m's key in it) when there is one, else by scanning earlier.
func writtenBefore(earlier []engine.Mutation, m *engine.Mutation, written map[string]struct{}, kbuf []byte) bool {
	if written != nil {
		_, w := written[string(kbuf)]
		return w
	}
	for j := range earlier {
		e := &earlier[j]
		if !plainRead(e) && e.Table == m.Table && string(e.Key) == string(m.Key) {
			return true
		}
	}
	return false
}

// hasPlainRead reports whether muts hold a read runSplit could answer directly.
func hasPlainRead(muts []engine.Mutation) bool {
	for i := range muts {
		if plainRead(&muts[i]) {
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
	early := append(s.split.early[:0], make([]bool, len(muts))...)
	s.split.early = early
	n := earlyReads(muts, early)
	if n == 0 {
		return nil, nil, false
	}
	// The batch is answered before the next one is split: its slices can be the session's, reused.
	rest, reads := s.split.rest[:0], s.split.reads[:0]
	defer func() {
		clear(rest) // no reference to this batch's keys and values outlives it
		clear(reads)
		s.split.rest, s.split.reads = rest[:0], reads[:0]
	}()
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
