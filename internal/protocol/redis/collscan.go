package redis

import (
	"strconv"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/glob"
	"anykv/internal/protocol/resp"
)

// smallCollection is up to how many members HSCAN, SSCAN and ZSCAN answer in one reply with cursor 0, as Redis
// does for its small encodings (128 entries by default); a bigger collection is paged by COUNT.
const smallCollection = 128

// collScan answers HSCAN, SSCAN and ZSCAN. A page reads COUNT members (10 by default) in member order after the
// cursor's resume member; the cursor is bound to the collection's key, so every
// member present for the whole iteration is returned exactly once. MATCH filters each page, as in Redis (a page
// may come back empty with a cursor that goes on). Collection cursors have a table of their own, so the pages of
// a million-member hash do not evict the cursor of a SCAN paused meanwhile. A cursor anykv did not make for the
// key is answered as Redis answers any cursor over a small or missing collection (all of it, cursor 0), and over
// a big one with ERR invalid cursor.
func collScan(s *session, args [][]byte, kind engine.Kind) {
	key := args[1]
	id, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		s.fail("ERR invalid cursor")
		return
	}
	var match []byte
	count := int64(10)
	noValues := false
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "match") && i+1 < len(args):
			match = args[i+1]
			i++
		case eq(args[i], "count") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				s.fail(errNotInt)
				return
			}
			if n < 1 {
				s.fail("ERR syntax error")
				return
			}
			count = min(n, 100000)
			i++
		case eq(args[i], "novalues") && kind == engine.KindHash:
			noValues = true
		default:
			s.fail("ERR syntax error")
			return
		}
	}
	var g *glob.Pattern
	if match != nil && string(match) != "*" { // "*": every member, the empty one too, as Redis answers it
		if len(match) > s.h.maxPattern() {
			s.fail(errPatternTooLong)
			return
		}
		g = glob.Compile(match)
	}
	var after []byte
	unknown := false // a cursor this server did not make for this key: a restart's, another key's, garbage
	if id != 0 {
		c, ok := s.h.collCursors.get(id)
		unknown = !ok || c.table != s.table() || !c.inColl || string(c.coll) != string(key)
		after = c.after // unused if unknown
	}
	page := count
	if id == 0 || unknown {
		page = max(count, smallCollection) // a small collection comes whole, as Redis's small encodings
	}
	s.add(collections.ScanMembers(s.table(), key, kind, id != 0 && !unknown, after, page))
	table := s.table()
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		if r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		if unknown && r.NewFound { // a big collection: where to go on is unknown
			w.Error("ERR invalid cursor")
			return
		}
		ms := r.Members
		next := uint64(0)
		if r.NewFound {
			if id == 0 && int64(len(ms)) > count { // a big collection: its first page is COUNT long too
				ms = ms[:count]
			}
			next = s.h.collCursors.put(cursor{table: table, inColl: true, coll: append([]byte(nil), key...), after: ms[len(ms)-1].Name, owner: s.id})
		}
		var out [][]byte
		for _, m := range ms {
			matched, complete := g.Match(m.Name)
			if !complete {
				w.Error(errPatternTooComplex)
				return
			}
			if !matched {
				continue
			}
			out = append(out, m.Name)
			if kind != engine.KindSet && !noValues {
				out = append(out, m.Item.Value)
			}
		}
		w.ArrayHeader(2)
		w.BulkString(strconv.FormatUint(next, 10))
		w.ArrayHeader(len(out))
		for _, b := range out {
			w.Bulk(b)
		}
	})
}
