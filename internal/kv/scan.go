package kv

import (
	"bytes"
	"context"

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

// Entry is one item a scan returned; the Store copies keys and values, so the caller owns them. Key is never nil,
// also for the empty key, so that it can resume a scan (Page.Next, Query.After).
type Entry struct {
	Key  []byte
	Item engine.Item
}

// Page is one page of a scan; Next is the key to pass as After for the next page, nil when the scan ended (and
// empty, not nil, when the page ended at the empty key).
type Page struct {
	Entries []Entry
	Next    []byte
}

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
		return nil, engine.ErrNotSupported
	}
	return sc, nil
}

// Scan returns one page of live items of table in key order. An error of the engine's scan is returned as it
// is, with an empty page: only a complete page is an answer.
func (s *Store) Scan(ctx context.Context, table string, q Query) (Page, error) {
	if err := checkTable(table); err != nil {
		return Page{}, err
	}
	sc, err := s.scanner()
	if err != nil {
		return Page{}, err
	}
	var p Page
	r := q.rangeOf()
	if r.End != nil && r.Start != nil && bytes.Compare(r.Start, r.End) >= 0 {
		return p, nil
	}
	err = sc.Scan(ctx, table, r, s.Now(), func(key []byte, it engine.Item) bool {
		if q.Limit > 0 && len(p.Entries) == q.Limit {
			p.Next = append([]byte{}, p.Entries[len(p.Entries)-1].Key...)
			return false
		}
		e := Entry{Key: append([]byte{}, key...), Item: it} // never nil: the empty key is a key, and a Next
		if q.KeysOnly || it.Kind != engine.KindString {     // a collection's meta is no value to show
			e.Item.Value = nil
		} else {
			e.Item.Value = append([]byte{}, it.Value...)
		}
		p.Entries = append(p.Entries, e)
		return true
	})
	if err != nil {
		return Page{}, err // a partial page would read as "these are all the keys"
	}
	return p, nil
}

// Count returns how many live items of table the query selects (Limit and After are ignored); on an error of
// the engine's scan, 0 and the error.
func (s *Store) Count(ctx context.Context, table string, q Query) (int64, error) {
	if err := checkTable(table); err != nil {
		return 0, err
	}
	sc, err := s.scanner()
	if err != nil {
		return 0, err
	}
	q.After, q.Limit = nil, 0
	var n int64
	err = sc.Scan(ctx, table, q.rangeOf(), s.Now(), func([]byte, engine.Item) bool { n++; return true })
	if err != nil {
		return 0, err
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
		return nil, engine.ErrNotSupported
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
