package pebblestore

import (
	"context"
)

// The durability guard (SyncAlways only).
//
// Pebble's commit pipeline publishes a batch's sequence number, which makes its writes visible to every new read,
// and only then waits for the WAL fsync. Between the two a reader could see a write that a power loss would
// still erase, and act on it (reply to a client, replicate it) before the writer acknowledged anything. Engine.Get
// promises never to do that, so readers consult the group in flight:
//
//	writer:  (1) publish g in s.inflight   (2) db.Apply: visible, then fsync   (3) clear s.inflight, close g.done
//	reader:  (a) read Pebble               (b) load s.inflight; if g covers what was read, wait for g.done
//
// Suppose a reader returns a write of group G. It observed G in (a), so (a) happened after G became visible in
// (2), hence after (1): Pebble's visible sequence number is an atomic, so G's publication in s.inflight
// happens-before the read. The load in (b) comes later still, so it returns G itself, or a value stored after G's
// (1): nil or a later group, both stored only after G's (3), i.e. after G's fsync returned. In the first case the
// reader finds its key in G and waits for G's fsync; in the other G is already durable. Either way the write is
// durable before the reader returns it. Checking first and reading after would be wrong: the group could be
// published and committed between the check and the read.
//
// Several groups may be in flight (flight.go): the writer commits group N+1 while group N's fsync runs, and each
// leaves the set only after its own fsync returned. s.inflight holds the set as an immutable slice, replaced
// whole under a mutex by the writer (adding) and the syncer (removing), so the argument above holds for every
// group of it: a reader that saw G's writes loads a set stored after G was added, which holds G unless G is
// durable. A group is never modified after (1), so readers use its maps without locks; a read of a key not in
// flight costs one atomic load (and a map lookup per group while groups are in flight).

// group is one commit as readers see it while its fsync is pending.
type group struct {
	done chan struct{} // closed once the commit (and its fsync) returned
	err  error         // the commit's error, set before done is closed

	// minVersion is the first version the group could allocate: a stored item with a lower version was
	// written by an earlier, durable group, unless it is in a table the group flushes (a swap copies items with
	// their versions: see hides).
	minVersion uint64
	keys       map[string]ovEntry  // Pebble keys the group sets or deletes (only the keys matter here)
	tables     map[string]struct{} // tables the group writes to or flushes
	flushed    map[string]struct{} // tables the group flushes
	flushAll   bool
}

// hides reports whether a point read of Pebble key k in table, which found an item with version (or found
// nothing), may have observed this group's writes, so that the reader must wait for the group's fsync.
func (g *group) hides(k []byte, table string, found bool, version uint64) bool {
	if g.flushAll {
		return true
	}
	if _, ok := g.flushed[table]; ok {
		// Before the version test: a swap (SWAPDB, engine.OpSwap) flushes both its tables and writes their items
		// back with the versions they had, older than the group's, so an old version found in a flushed table
		// may be one of the group's writes.
		return true
	}
	if found && version < g.minVersion {
		return false // an older, durable item: the group has not changed this key (as far as the read saw)
	}
	_, ok := g.keys[string(k)]
	return ok
}

// touches reports whether the group changes table, or with anyTable whether it changes any table at all.
func (g *group) touches(table string, anyTable bool) bool {
	if g.flushAll {
		return true
	}
	if anyTable {
		return len(g.tables) > 0
	}
	_, ok := g.tables[table]
	return ok
}

// hiding returns the latest group in flight that may hide a point read (see group.hides), or nil. Groups become
// durable in order, so waiting for the latest covers the earlier ones.
func (s *Store) hiding(k []byte, table string, found bool, version uint64) *group {
	var last *group
	for _, g := range *s.inflight.Load() {
		if g.hides(k, table, found, version) {
			last = g
		}
	}
	return last
}

// touching returns the latest group in flight that changes table (any table, with anyTable), or nil.
func (s *Store) touching(table string, anyTable bool) *group {
	var last *group
	for _, g := range *s.inflight.Load() {
		if g.touches(table, anyTable) {
			last = g
		}
	}
	return last
}

// waitDurable waits until g's commit returned and reports its error.
func (s *Store) waitDurable(ctx context.Context, g *group) error {
	s.guardWaits.Add(1)
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
