package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"anykv/internal/engine"
)

// Query selects keys of a table: a prefix and/or a [Start, End) range, at most Limit of them (0: no limit),
// resuming after the key After (exclusive) when After is set.
type Query struct {
	Prefix, Start, End, After []byte
	Limit                     int
	// KeysOnly skips copying values.
	KeysOnly bool
}

// Entry is one item a scan returned. Key is never nil, also for the empty key, so that it can resume a scan
// (Page.Next, Query.After). Its bytes may be shared with the query cache: callers must not modify them.
type Entry struct {
	Key  []byte
	Item engine.Item
	// Size is the length of the item's value, also when the scan was KeysOnly (memcached's stats cachedump
	// prints it: copying every value of a page only to measure it took 2 GB for a one-line answer).
	Size int
}

// Page is one page of a scan; Next is the key to pass as After for the next page, nil when the scan ended (and
// empty, not nil, when the page ended at the empty key). The Entries slice belongs to the caller; the bytes of
// keys and values do not (see Entry).
type Page struct {
	Entries []Entry
	Next    []byte
}

// Range is the key range the query reads: its prefix and start/end bounds intersected, its start moved past
// After. A caller that pages through a batch's view of a table (engine.Tx.Scan) reads the same keys with it.
func (q *Query) Range() engine.Range { return q.rangeOf() }

// rangeOf intersects the prefix and start/end bounds and moves the start past After.
func (q *Query) rangeOf() engine.Range {
	r := engine.PrefixRange(q.Prefix)
	if q.Start != nil && (r.Start == nil || bytes.Compare(q.Start, r.Start) > 0) {
		r.Start = q.Start
	}
	if q.End != nil && (r.End == nil || bytes.Compare(q.End, r.End) < 0) {
		r.End = q.End
	}
	if q.After != nil {
		after := append(append([]byte(nil), q.After...), 0) // the smallest key above After
		if r.Start == nil || bytes.Compare(after, r.Start) > 0 {
			r.Start = after
		}
	}
	return r
}

func (s *Store) scanner() (engine.Scanner, error) {
	sc, ok := s.eng.(engine.Scanner)
	if !ok {
		return nil, fmt.Errorf("%w: %s keeps no ordered keys (KEYS, SCAN, range queries and counts need them)",
			engine.ErrNotSupported, s.name)
	}
	return sc, nil
}

// cacheKey names the query within its table for the query cache: what it asks (a page or a count) and every
// field that changes the answer, each length-prefixed and marked present or nil (nil and empty differ).
func (q *Query) cacheKey(kind byte) []byte {
	b := []byte{kind}
	for _, f := range [][]byte{q.Prefix, q.Start, q.End, q.After} {
		if f == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(append(b, 1), uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(max(q.Limit, 0)))
	if q.KeysOnly {
		b = append(b, 1)
	}
	return b
}

// answer is a cached query result: a page or a count.
type answer struct {
	page  Page
	count int64
}

// firstExpiry tracks the earliest expiry among the items a query saw: its answer is stale from then on.
type firstExpiry int64

func (f *firstExpiry) see(it engine.Item) {
	if it.Expires > 0 && (*f == 0 || it.Expires < int64(*f)) {
		*f = firstExpiry(it.Expires)
	}
}

// Scan returns one page of live items of table in key order. An error of the engine's scan is returned as it
// is, with an empty page: only a complete page is an answer. A repeated query is answered from the query cache
// until a write to the table (or the expiry of an item it saw) makes the answer stale.
func (s *Store) Scan(ctx context.Context, table string, q Query) (Page, error) {
	if err := checkTable(table); err != nil {
		return Page{}, err
	}
	sc, err := s.scanner()
	if err != nil {
		return Page{}, err
	}
	if ctx, err = s.levels.read(ctx); err != nil {
		return Page{}, err
	}
	var p Page
	r := q.rangeOf()
	if r.End != nil && r.Start != nil && bytes.Compare(r.Start, r.End) >= 0 {
		return p, nil
	}
	key, now := q.cacheKey('p'), s.Now()
	a, hit, tok := s.queries.Lookup(table, key, now)
	if hit {
		return Page{Entries: slices.Clone(a.page.Entries), Next: a.page.Next}, nil
	}
	var until firstExpiry
	size := int64(0)
	err = sc.Scan(ctx, table, r, now, func(key []byte, it engine.Item) bool {
		until.see(it)
		if q.Limit > 0 && len(p.Entries) == q.Limit {
			p.Next = append([]byte{}, p.Entries[len(p.Entries)-1].Key...)
			return false
		}
		e := Entry{Key: append([]byte{}, key...), Item: it, Size: len(it.Value)} // Key never nil: the empty key is a key, and a Next
		if q.KeysOnly || it.Kind != engine.KindString {                          // a collection's meta is no value to show
			e.Item.Value = nil
		} else {
			e.Item.Value = append([]byte{}, it.Value...)
		}
		size += int64(len(e.Key) + len(e.Item.Value) + 64)
		p.Entries = append(p.Entries, e)
		return true
	})
	if err != nil {
		return Page{}, err // a partial page would read as "these are all the keys"
	}
	if fresh(ctx) {
		s.queries.Fill(tok, table, key, answer{page: Page{Entries: slices.Clone(p.Entries), Next: p.Next}}, size, now, int64(until))
	}
	return p, nil
}

// Count returns how many live items of table the query selects (Limit and After are ignored); on an error of
// the engine's scan, 0 and the error. A repeated count is answered from the query cache, as Scan.
func (s *Store) Count(ctx context.Context, table string, q Query) (int64, error) {
	if err := checkTable(table); err != nil {
		return 0, err
	}
	sc, err := s.scanner()
	if err != nil {
		return 0, err
	}
	if ctx, err = s.levels.read(ctx); err != nil {
		return 0, err
	}
	q.After, q.Limit, q.KeysOnly = nil, 0, false
	key, now := q.cacheKey('c'), s.Now()
	a, hit, tok := s.queries.Lookup(table, key, now)
	if hit {
		return a.count, nil
	}
	var n int64
	var until firstExpiry
	err = sc.Scan(ctx, table, q.rangeOf(), now, func(_ []byte, it engine.Item) bool { n++; until.see(it); return true })
	if err != nil {
		return 0, err
	}
	if fresh(ctx) {
		s.queries.Fill(tok, table, key, answer{count: n}, 0, now, int64(until))
	}
	return n, nil
}

// Census is what one scan of a table counts: its live items, those with an expiry, and the mean time those have
// left (INFO keyspace's keys, expires and avg_ttl).
type Census struct {
	Keys, Expires int64
	AvgTTL        int64 // milliseconds, 0 without expiring items
}

// Census counts table's live items and their expiries in one scan (O(items)); on an error of the engine's scan,
// a zero Census and the error.
func (s *Store) Census(ctx context.Context, table string) (Census, error) {
	if err := checkTable(table); err != nil {
		return Census{}, err
	}
	sc, err := s.scanner()
	if err != nil {
		return Census{}, err
	}
	now := s.Now()
	var c Census
	var ttl int64
	err = sc.Scan(ctx, table, engine.Range{}, now, func(_ []byte, it engine.Item) bool {
		c.Keys++
		if it.Expires != 0 {
			c.Expires++
			ttl += it.Expires - now
		}
		return true
	})
	if err != nil {
		return Census{}, err
	}
	if c.Expires > 0 {
		c.AvgTTL = ttl / c.Expires
	}
	return c, nil
}

// Tables lists the tables that hold items (not the engine's own member tables).
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	tl, ok := s.eng.(engine.TableLister)
	if !ok {
		return nil, fmt.Errorf("%w: %s cannot list its tables", engine.ErrNotSupported, s.name)
	}
	all, err := tl.Tables(ctx)
	out := all[:0]
	for _, t := range all {
		if !engine.IsInternalTable(t) {
			out = append(out, t)
		}
	}
	return out, err
}
