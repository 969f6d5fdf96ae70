package redis

import (
	"strings"

	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

// txScriptView is what the SCRIPT LOAD and SCRIPT FLUSH queued in a transaction do to the script cache, seen by
// the commands queued after them as Redis runs them, in order: an EVALSHA after a SCRIPT LOAD of its script runs
// it (it answered NOSCRIPT: SCRIPT ran after the transaction's batch), one after a SCRIPT FLUSH answers
// NOSCRIPT, and SCRIPT EXISTS answers what is loaded at its place. The cache itself changes only once the
// transaction ran (apply): one that a WATCH aborted, or that failed whole, loads and flushes nothing, as Redis.
type txScriptView struct {
	flushed bool
	loaded  []txScript // in order, since the last flush
}

type txScript struct {
	sha  string
	src  []byte
	eval bool // brought by EVAL (evictable), not SCRIPT LOAD
}

// get finds sha among the scripts loaded in the transaction, then (not after a flush) in the cache (touch: as
// used, for the cache's eviction order).
func (v *txScriptView) get(h *Handler, sha string, touch bool) ([]byte, bool) {
	if v == nil {
		return h.scripts.get(sha, touch)
	}
	sha = strings.ToLower(sha)
	for i := len(v.loaded) - 1; i >= 0; i-- {
		if v.loaded[i].sha == sha {
			return v.loaded[i].src, true
		}
	}
	if v.flushed {
		return nil, false
	}
	return h.scripts.get(sha, touch)
}

// put keeps a script an EVAL or SCRIPT LOAD brings: an EVAL's at once (outside a transaction, or in one before
// any flush), a queued SCRIPT LOAD's and an EVAL's after a queued flush for apply. It returns the source to run.
func (v *txScriptView) put(h *Handler, src []byte, sha string, eval bool) []byte {
	if v == nil || eval && !v.flushed {
		return h.scripts.put(src, sha, eval)
	}
	src = append([]byte(nil), src...)
	v.loaded = append(v.loaded, txScript{sha: sha, src: src, eval: eval})
	return src
}

// apply makes the transaction's flush and loads take effect, once it ran.
func (v *txScriptView) apply(h *Handler) {
	if v.flushed {
		h.scripts.flush()
		dropLuaVMs()
	}
	for _, sc := range v.loaded {
		h.scripts.put(sc.src, sc.sha, sc.eval)
	}
}

// txScript answers a SCRIPT LOAD, EXISTS or FLUSH queued in a transaction in its place, through the view; false
// for another subcommand or a malformed one (run after the batch, as other immediate commands, for its reply).
func (s *session) txScript(args [][]byte) bool {
	v := s.txScripts
	switch scriptCacheOp(args) {
	case "load":
		sha := sha1hex(args[2])
		if _, msg := checkScript(args[2], sha); msg != "" {
			s.fail(msg)
			return true
		}
		v.put(s.h, args[2], sha, false)
		s.plan(func(w *resp.Writer, _ []engine.Result) { w.BulkString(sha) })
	case "exists":
		found := make([]bool, len(args)-2)
		for i, sha := range args[2:] {
			_, found[i] = v.get(s.h, string(sha), false)
		}
		s.plan(func(w *resp.Writer, _ []engine.Result) {
			w.ArrayHeader(len(found))
			for _, f := range found {
				if f {
					w.Int(1)
				} else {
					w.Int(0)
				}
			}
		})
	case "flush":
		v.flushed, v.loaded = true, nil
		s.plan(func(w *resp.Writer, _ []engine.Result) { w.SimpleString("OK") })
	default:
		return false
	}
	return true
}
