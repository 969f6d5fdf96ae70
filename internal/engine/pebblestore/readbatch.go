package pebblestore

import (
	"context"
	"errors"
	"fmt"

	"anykv/internal/engine"
)

// Batches that only read (engine.ReadsOnly: GETs, member reads, ZRANGE, LRANGE, XRANGE) are resolved without the
// writer: on a Pebble snapshot of their own, so they neither wait in the writer's queue nor for the next
// group's commit and fsync, and they cost the writer's goroutine nothing. The snapshot is one consistent state
// (a collection's meta and its members agree). What it read is then checked against the groups in flight as a
// point read is (guard.go): the snapshot is taken first, the set of groups in flight loaded after, and the batch
// waits for the latest group that wrote a key it read or a key inside a range it scanned. A resolution that wrote
// after all (ZRANGESTORE shares ZRANGE's function) is dropped and the batch goes to the writer.

// readSet is what a reading writer read: point reads with what they found, and scanned spans of Pebble keys.
type readSet struct {
	points []pointRead
	spans  []keySpan
}

type pointRead struct {
	key     []byte
	table   string
	found   bool
	version uint64
}

type keySpan struct {
	lower, upper string // Pebble keys, upper exclusive
	table        string
}

func (rs *readSet) point(k []byte, table string, found bool, version uint64) {
	rs.points = append(rs.points, pointRead{append([]byte(nil), k...), table, found, version})
}

func (rs *readSet) span(lower, upper []byte, table string) {
	rs.spans = append(rs.spans, keySpan{string(lower), string(upper), table})
}

// hiddenBy returns the latest group of gs whose writes the reads may have observed, or nil.
func (rs *readSet) hiddenBy(gs []*group) *group {
	var last *group
	for _, g := range gs {
		if rs.observes(g) {
			last = g
		}
	}
	return last
}

func (rs *readSet) observes(g *group) bool {
	for _, p := range rs.points {
		if g.hides(p.key, p.table, p.found, p.version) {
			return true
		}
	}
	for _, sp := range rs.spans {
		if !g.touches(sp.table, false) {
			continue // flushAll, a flush of the table and every key written count as touching it
		}
		if _, ok := g.flushed[sp.table]; ok || g.flushAll || len(g.keys) > spanCheckLimit {
			return true // a big group: waiting for its fsync costs less than looking through its keys
		}
		for k := range g.keys {
			if k >= sp.lower && k < sp.upper {
				return true
			}
		}
	}
	return false
}

// spanCheckLimit is the most keys of a group a scanned span is compared with; a bigger group that touches the
// span's table is waited for (at most one fsync) rather than searched.
const spanCheckLimit = 1024

// applyReads resolves a batch that only reads, as the package comment above says; ok is false when the batch
// must go to the writer instead.
func (s *Store) applyReads(ctx context.Context, b *engine.Batch) (res []engine.Result, ok bool, err error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	r := &writer{s: s, snap: snap, seen: &readSet{}}
	defer r.closeIters()
	writes, res, err := engine.Resolve(r, b, func() uint64 { return 0 })
	if err == nil && len(writes) > 0 {
		return nil, false, nil
	}
	if err != nil && !errors.Is(err, engine.ErrAborted) {
		err = fmt.Errorf("pebblestore: apply: %w", err) // as the writer reports it
	}
	if g := r.seen.hiddenBy(*s.inflight.Load()); g != nil {
		if werr := s.waitDurable(ctx, g); werr != nil {
			return nil, true, werr
		}
	}
	return res, true, err
}
