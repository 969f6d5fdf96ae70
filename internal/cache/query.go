package cache

import (
	"anykv/internal/clockmap"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// Queries caches the answers of ordered queries (pages of a scan, counts) over the tables of one store, so a
// repeated query costs a map lookup instead of a walk of the table. V is the answer's type.
//
// Every table has a generation (shared by the tables that hash to the same one of tableWords words, which only
// costs some extra misses). Each batch that writes a table advances it twice in the same step as it marks the
// table as written-to, once when it starts and once when the engine has applied it (Begin and End around the
// commit); a flush of every table advances a global word. An answer is stored with the words read before the
// query read the engine, and only if no batch was in flight then; it is served only while both words are
// unchanged. So no query is ever answered with a result older than a write that completed before it started.
// Answers also carry the first expiry among the items they counted: time alone makes them stale then.
//
// The words are single atomics holding the generation and the number of batches in flight together, so a query
// reads both in one load and a batch changes both in one add; Begin and End take no lock.
type Queries[V any] struct {
	max   int64
	seed  maphash.Seed
	words [tableWords]atomic.Uint64
	all   atomic.Uint64 // flushes of every table
	// doubted marks the words (doubtAll: every word) of tables a batch of unknown outcome wrote: it may land at
	// any time, so no answer over them is stored again (Doubt).
	doubted  [tableWords]atomic.Bool
	doubtAll atomic.Bool

	mu sync.Mutex
	m  clockmap.Map[answer[V]]

	hits, misses, evictions, fills atomic.Int64
}

const (
	tableWords = 4096
	// A word is generation<<pendingBits | batches in flight.
	pendingBits = 24
	oneBatch    = 1<<pendingBits + 1 // Begin: generation and in-flight count up by one
	batchDone   = 1<<pendingBits - 1 // End: generation up, in-flight count down
	pendingMask = 1<<pendingBits - 1
)

type answer[V any] struct {
	word, all   uint64
	from, until int64 // served for now in [from, until)
	val         V
}

// NewQueries returns a query cache of about maxBytes; 0 or less gives one that stores nothing.
func NewQueries[V any](maxBytes int64) *Queries[V] {
	return &Queries[V]{max: maxBytes, seed: maphash.MakeSeed(), m: clockmap.New[answer[V]]()}
}

func (q *Queries[V]) word(table string) *atomic.Uint64 {
	return &q.words[maphash.String(q.seed, table)%tableWords]
}

// Enabled reports whether the cache stores answers at all (callers may then skip listing a batch's tables); a
// nil cache (a store without an engine) stores none.
func (q *Queries[V]) Enabled() bool { return q != nil && q.max > 0 }

// Begin marks the tables a batch may change, before the engine sees it (all: every table, a flush).
func (q *Queries[V]) Begin(tables []string, all bool) { q.move(tables, all, oneBatch) }

// End lifts Begin's marks once the engine has applied the batch (or failed to).
func (q *Queries[V]) End(tables []string, all bool) { q.move(tables, all, batchDone) }

// Doubt says the batch that Begin marked these tables for has an unknown outcome (a datastore's commit timed
// out after it was sent): it may land at any time, so no answer over them is stored again, for good. End is
// still called.
func (q *Queries[V]) Doubt(tables []string, all bool) {
	if all {
		q.doubtAll.Store(true)
		return
	}
	for _, t := range tables {
		q.doubted[maphash.String(q.seed, t)%tableWords].Store(true)
	}
}

func (q *Queries[V]) move(tables []string, all bool, delta uint64) {
	if q.max <= 0 {
		return // nothing is ever stored, so no answer can go stale
	}
	if all {
		q.all.Add(delta)
		return
	}
	for _, t := range tables {
		q.word(t).Add(delta)
	}
}

// Token is what a query learned before it read the engine; Fill stores its answer only if the token still holds.
type Token struct {
	word, all uint64
	w         *atomic.Uint64
}

// Lookup returns the answer stored under key for table, if it is still current at now; otherwise it returns a
// Token to fill the answer with once the query has read the engine. key names the query within the table.
func (q *Queries[V]) Lookup(table string, key []byte, now int64) (V, bool, Token) {
	w := q.word(table)
	tok := Token{word: w.Load(), all: q.all.Load(), w: w}
	var zero V
	if q.max <= 0 {
		return zero, false, tok
	}
	var buf [128]byte
	b := appendSlot(buf[:0], table, key)
	q.mu.Lock()
	e, ok := q.m.Get(b)
	var a answer[V]
	if ok {
		a = e.Val
	}
	q.mu.Unlock()
	if ok && a.word == tok.word && a.all == tok.all && now >= a.from && now < a.until {
		q.hits.Add(1)
		return a.val, true, tok
	}
	q.misses.Add(1)
	return zero, false, tok
}

// Fill stores val, the answer computed at now after Lookup gave tok, unless a batch was in flight when the token
// was taken or has begun since. until is the first expiry among the items the answer counted (0: none expire);
// size approximates its memory.
func (q *Queries[V]) Fill(tok Token, table string, key []byte, val V, size, now, until int64) {
	if q.max <= 0 || tok.w == nil || tok.word&pendingMask != 0 || tok.all&pendingMask != 0 || q.doubtAll.Load() ||
		q.doubted[maphash.String(q.seed, table)%tableWords].Load() {
		return
	}
	if until <= 0 {
		until = 1<<63 - 1
	}
	s := slot(table, key)
	size += int64(len(s) + entryOverhead)
	if size > q.max/4 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if tok.w.Load() != tok.word || q.all.Load() != tok.all {
		return // a batch began since: the answer may already be old
	}
	q.evictions.Add(int64(q.m.Put(s, answer[V]{word: tok.word, all: tok.all, from: now, until: until, val: val}, size, q.max)))
	q.fills.Add(1)
}

// Stats reports the cache's figures under names prefixed with prefix.
func (q *Queries[V]) Stats(prefix string, out map[string]int64) {
	q.mu.Lock()
	n, bytes := q.m.Len(), q.m.Bytes()
	q.mu.Unlock()
	out[prefix+"items"], out[prefix+"bytes"] = int64(n), bytes
	out[prefix+"hits"], out[prefix+"misses"] = q.hits.Load(), q.misses.Load()
	out[prefix+"evictions"], out[prefix+"fills"] = q.evictions.Load(), q.fills.Load()
}
