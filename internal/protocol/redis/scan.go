package redis

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"strconv"
	"sync"

	"anykv/internal/kv"
)

func init() {
	register(
		&command{name: "keys", arity: 2, flags: flagReadonly, firstKey: -1, imm: cmdKeys, summary: "Returns all key names that match a pattern."},
		&command{name: "scan", arity: -2, flags: flagReadonly, firstKey: -1, imm: cmdScan, summary: "Iterates over the key names in the database."},
		&command{name: "randomkey", arity: 1, flags: flagReadonly, firstKey: -1, imm: cmdRandomKey, summary: "Returns a random key name from the database."},
		&command{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, firstKey: -1, imm: cmdDBSize, summary: "Returns the number of keys in the database."},
	)
}

// cursorTable maps the integer cursors Redis clients expect to resume keys. anykv scans in key order, so a
// cursor is the last key returned: every key present for the whole iteration is returned exactly once. The
// table is shared by all connections (pooled clients continue a SCAN on another connection), bounded in entries
// and bytes; the oldest cursors go first, and a cursor can be used more than once (a retried SCAN works).
type cursorTable struct {
	mu    sync.Mutex
	next  uint64
	m     map[uint64]cursor
	order []uint64 // oldest first, for eviction
	bytes int
}

type cursor struct {
	table string
	after []byte
	// inColl marks a cursor of HSCAN, SSCAN or ZSCAN over the collection at coll: after is a member.
	inColl bool
	coll   []byte
}

const (
	maxCursors     = 1 << 16
	maxCursorBytes = 16 << 20
)

func (t *cursorTable) init() {
	var b [8]byte
	rand.Read(b[:])
	t.next = binary.LittleEndian.Uint64(b[:])>>34 + 1 // small random start: cursors of a restarted server differ
	t.m = make(map[uint64]cursor)
}

func (t *cursorTable) put(c cursor) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.next
	t.next++
	if t.next == 0 {
		t.next = 1
	}
	t.m[id] = c
	t.order = append(t.order, id)
	t.bytes += len(c.table) + len(c.after) + len(c.coll)
	for len(t.order) > 1 && (len(t.order) > maxCursors || t.bytes > maxCursorBytes) { // never the one just made
		old := t.m[t.order[0]]
		t.bytes -= len(old.table) + len(old.after) + len(old.coll)
		delete(t.m, t.order[0])
		t.order = t.order[1:]
	}
	return id
}

func (t *cursorTable) get(id uint64) (cursor, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[id]
	return c, ok
}

// literalPrefix returns the part of a glob pattern before its first special character.
func literalPrefix(pat []byte) []byte {
	for i, c := range pat {
		if c == '*' || c == '?' || c == '[' || c == '\\' {
			return pat[:i]
		}
	}
	return pat
}

func cmdKeys(s *session, args [][]byte) {
	pat := args[1]
	var keys [][]byte
	q := kv.Query{Prefix: literalPrefix(pat), KeysOnly: true}
	for {
		q.Limit = 10000
		p, err := s.h.store.Scan(s.readCtx(), s.table(), q)
		if err != nil {
			s.w.Error(errText(err))
			return
		}
		for _, e := range p.Entries {
			if globMatch(pat, e.Key) {
				keys = append(keys, e.Key)
			}
		}
		if p.Next == nil {
			break
		}
		q.After = p.Next
	}
	s.w.ArrayHeader(len(keys))
	for _, k := range keys {
		s.w.Bulk(k)
	}
}

func cmdScan(s *session, args [][]byte) {
	id, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		s.w.Error("ERR invalid cursor")
		return
	}
	var pat []byte
	count := int64(10)
	typ := ""
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "match") && i+1 < len(args):
			pat = args[i+1]
		case eq(args[i], "count") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				s.w.Error(errNotInt)
				return
			}
			if n < 1 {
				s.w.Error(errSyntax)
				return
			}
			count = n
		case eq(args[i], "type") && i+1 < len(args):
			typ = lower(args[i+1])
		default:
			s.w.Error(errSyntax)
			return
		}
		i++
	}
	q := kv.Query{Prefix: literalPrefix(pat), KeysOnly: true, Limit: int(min(count, 100000))}
	if id != 0 {
		c, ok := s.h.cursors.get(id)
		if !ok || c.table != s.table() || c.inColl {
			// An unknown or expired cursor: Redis would return whatever; we say so.
			s.w.Error("ERR invalid cursor")
			return
		}
		q.After = c.after
	}
	p, err := s.h.store.Scan(s.readCtx(), s.table(), q)
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	var keys [][]byte
	for _, e := range p.Entries {
		if (pat == nil || globMatch(pat, e.Key)) && (typ == "" || typ == e.Item.Kind.String()) {
			keys = append(keys, e.Key)
		}
	}
	next := uint64(0)
	if p.Next != nil {
		next = s.h.cursors.put(cursor{table: s.table(), after: p.Next})
	}
	s.w.ArrayHeader(2)
	s.w.BulkString(strconv.FormatUint(next, 10))
	s.w.ArrayHeader(len(keys))
	for _, k := range keys {
		s.w.Bulk(k)
	}
}

// randomKeyExact is up to how many keys RANDOMKEY picks uniformly, from one scan of them all; in a bigger table it
// seeks to a random position, which favours keys after wide gaps.
const randomKeyExact = 1024

func cmdRandomKey(s *session, args [][]byte) {
	p, err := s.h.store.Scan(s.readCtx(), s.table(), kv.Query{Limit: randomKeyExact, KeysOnly: true})
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	if p.Next == nil {
		if len(p.Entries) == 0 {
			s.w.Null()
			return
		}
		s.w.Bulk(p.Entries[mrand.IntN(len(p.Entries))].Key)
		return
	}
	var start [8]byte
	rand.Read(start[:])
	for _, q := range []kv.Query{{Start: start[:], Limit: 1, KeysOnly: true}, {Limit: 1, KeysOnly: true}} {
		p, err := s.h.store.Scan(s.readCtx(), s.table(), q)
		if err != nil {
			s.w.Error(errText(err))
			return
		}
		if len(p.Entries) > 0 {
			s.w.Bulk(p.Entries[0].Key)
			return
		}
	}
	s.w.Null()
}

func cmdDBSize(s *session, args [][]byte) {
	n, err := s.h.store.Count(s.readCtx(), s.table(), kv.Query{})
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	s.w.Int(n)
}

// globMatch matches a key against a Redis glob pattern (*, ?, [abc], [^a-z], \x), with the results of Redis's
// stringmatchlen. It backtracks only to the last '*', so it runs in O(len(pat)*len(str)) even on patterns like
// "*a*a*a*b" that make a recursive matcher exponential (CVE-2022-36021).
func globMatch(pat, str []byte) bool {
	p, s := 0, 0
	starP, starS := -1, 0
	for s < len(str) {
		if p < len(pat) {
			switch c := pat[p]; c {
			case '*':
				for p < len(pat) && pat[p] == '*' {
					p++
				}
				if p == len(pat) {
					return true
				}
				starP, starS = p, s
				continue
			case '?':
				p, s = p+1, s+1
				continue
			case '[':
				if ok, next := matchClass(pat, p+1, str[s]); ok {
					p, s = next, s+1
					continue
				}
			case '\\':
				if p+1 < len(pat) {
					p++
				}
				fallthrough
			default:
				if pat[p] == str[s] {
					p, s = p+1, s+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++ // let the last '*' swallow one more byte and retry from there
		p, s = starP, starS
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// matchClass matches c against the class starting at pat[i] (just after '['); it returns whether c matched and
// where the pattern continues (after ']', or at the end of an unterminated class).
func matchClass(pat []byte, i int, c byte) (bool, int) {
	not := i < len(pat) && pat[i] == '^'
	if not {
		i++
	}
	match := false
	for i < len(pat) && pat[i] != ']' {
		switch {
		case pat[i] == '\\' && i+1 < len(pat):
			i++
			match = match || pat[i] == c
		case i+2 < len(pat) && pat[i+1] == '-':
			lo, hi := pat[i], pat[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (c >= lo && c <= hi)
			i += 2
		default:
			match = match || pat[i] == c
		}
		i++
	}
	if i < len(pat) {
		i++ // past ']'
	}
	return match != not, i
}
