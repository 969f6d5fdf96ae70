package redis

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"strconv"

	"anykv/internal/engine"
	"anykv/internal/glob"
	"anykv/internal/kv"
)

func init() {
	register(
		&command{name: "keys", arity: 2, flags: flagReadonly, firstKey: -1, imm: cmdKeys, inScript: true, summary: "Returns all key names that match a pattern."},
		&command{name: "scan", arity: -2, flags: flagReadonly, firstKey: -1, imm: cmdScan, inScript: true, summary: "Iterates over the key names in the database."},
		&command{name: "randomkey", arity: 1, flags: flagReadonly, firstKey: -1, imm: cmdRandomKey, inScript: true, summary: "Returns a random key name from the database."},
		&command{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, firstKey: -1, imm: cmdDBSize, inScript: true, summary: "Returns the number of keys in the database."},
	)
}

// keyLister pages through the keys of a database (kv.Store.Scan's queries and pages).
type keyLister func(q kv.Query) (kv.Page, error)

// listKeys pages through the keys of the session's database: the store's, or in a script the batch's (tx).
func (s *session) listKeys(q kv.Query) (kv.Page, error) {
	if s.tx != nil {
		return txKeyLister(s.tx, s.table())(q)
	}
	return s.h.store.Scan(s.readCtx(), s.table(), q)
}

// applyHere applies mutations on their own (XREAD's ranges, a blocking pop's try): through the batch the session
// runs in (tx: a script's, or a transaction's for the immediate commands it queued), else through the store.
func (s *session) applyHere(muts []engine.Mutation) ([]engine.Result, error) {
	if s.tx != nil {
		return s.tx.Apply(muts)
	}
	return s.h.store.Apply(s.writeCtx(), muts)
}

// cursorTable is where SCAN keeps its cursors: the handler's, or in a script the handler's that runs it.
func (s *session) cursorTable() *cursorTable {
	if s.cursors != nil {
		return s.cursors
	}
	return &s.h.cursors
}

// txKeyLister lists the keys of table as tx's batch sees them (its earlier writes included, expired keys not).
func txKeyLister(tx *engine.Tx, table string) keyLister {
	return func(q kv.Query) (kv.Page, error) {
		var p kv.Page
		err := tx.Scan(table, q.Range(), func(key []byte, it engine.Item) bool {
			if q.Limit > 0 && len(p.Entries) == q.Limit {
				p.Next = append([]byte{}, p.Entries[len(p.Entries)-1].Key...)
				return false
			}
			p.Entries = append(p.Entries, kv.Entry{Key: append([]byte{}, key...), Item: engine.Item{Kind: it.Kind,
				Version: it.Version, Expires: it.Expires}, Size: len(it.Value)})
			return true
		})
		return p, err
	}
}

// scriptTimeUp reports whether, in a script (s.tx set; s.ctx is the script's), its time limit passed. KEYS and
// DBSIZE check it every 10,000 keys: the script is otherwise checked between calls, and KEYS over millions of
// keys ran far past the limit in one.
func (s *session) scriptTimeUp() bool { return s.tx != nil && scriptDone(s.ctx) != nil }

// errScriptTimeUp answers a script's KEYS or DBSIZE stopped by its time limit (the script then stops with the
// time limit's error: scriptRun.call).
const errScriptTimeUp = "ERR the script's time limit passed during the command"

// literalPrefix returns the part of a glob pattern before its first special character.
func literalPrefix(pat []byte) []byte {
	for i, c := range pat {
		if c == '*' || c == '?' || c == '[' || c == '\\' {
			return pat[:i]
		}
	}
	return pat
}

// errPatternTooComplex answers a pattern whose match against a key ran past glob.Limit: a long literal after a
// '*' against a long key of near misses, which would take len(pattern)*len(key) steps.
const errPatternTooComplex = "ERR pattern too complex to match against a key this long"

// compilePattern compiles a KEYS, SCAN or xSCAN pattern (nil for "*", every key), or writes an error and returns
// false for one longer than maxPattern.
func (s *session) compilePattern(pat []byte) (*glob.Pattern, bool) {
	if string(pat) == "*" {
		return nil, true // every key, the empty one too, as Redis's KEYS and SCAN answer "*" without matching
	}
	if len(pat) > s.h.maxPattern() {
		s.w.Error(errPatternTooLong)
		return nil, false
	}
	return glob.Compile(pat), true
}

// errPatternTooLong answers a pattern longer than maxPattern.
const errPatternTooLong = "ERR pattern longer than four times max-key-size"

// maxPattern bounds a pattern's length: four times the longest key (a key written with escapes or classes is
// longer than itself), where a pattern could be as long as a request and cost its length in memory per byte.
func (h *Handler) maxPattern() int { return 4 * h.store.Limits().MaxKey }

func cmdKeys(s *session, args [][]byte) {
	pat := args[1]
	g, ok := s.compilePattern(pat)
	if !ok {
		return
	}
	var keys [][]byte
	q := kv.Query{Prefix: literalPrefix(pat), KeysOnly: true}
	for {
		q.Limit = 10000
		p, err := s.listKeys(q)
		if err != nil {
			s.w.Error(errText(err))
			return
		}
		for _, e := range p.Entries {
			m, complete := g.Match(e.Key)
			if !complete {
				s.w.Error(errPatternTooComplex)
				return
			}
			if m {
				keys = append(keys, e.Key)
			}
		}
		if p.Next == nil {
			break
		}
		if s.scriptTimeUp() {
			s.w.Error(errScriptTimeUp)
			return
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
	var g *glob.Pattern
	if pat != nil {
		var ok bool
		if g, ok = s.compilePattern(pat); !ok {
			return
		}
	}
	q := kv.Query{Prefix: literalPrefix(pat), KeysOnly: true, Limit: int(min(count, 100000))}
	if id != 0 {
		c, ok := s.cursorTable().get(id)
		if !ok || c.table != s.table() || c.inColl {
			// An unknown or expired cursor: Redis would return whatever; we say so.
			s.w.Error("ERR invalid cursor")
			return
		}
		q.After = c.after
	}
	p, err := s.listKeys(q)
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	var keys [][]byte
	for _, e := range p.Entries {
		m, complete := g.Match(e.Key)
		if !complete {
			s.w.Error(errPatternTooComplex)
			return
		}
		if m && (typ == "" || typ == e.Item.Kind.String()) {
			keys = append(keys, e.Key)
		}
	}
	next := uint64(0)
	if p.Next != nil {
		next = s.cursorTable().put(cursor{table: s.table(), after: p.Next, owner: s.id})
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
	p, err := s.listKeys(kv.Query{Limit: randomKeyExact, KeysOnly: true})
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
		p, err := s.listKeys(q)
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
	if s.tx != nil { // in a script: counted as the batch sees the keys, none copied
		n, up := int64(0), false
		err := s.tx.Scan(s.table(), engine.Range{}, func([]byte, engine.Item) bool {
			n++
			up = n%10000 == 0 && s.scriptTimeUp()
			return !up
		})
		switch {
		case err != nil:
			s.w.Error(errText(err))
		case up:
			s.w.Error(errScriptTimeUp)
		default:
			s.w.Int(n)
		}
		return
	}
	n, err := s.h.store.Count(s.readCtx(), s.table(), kv.Query{})
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	s.w.Int(n)
}
