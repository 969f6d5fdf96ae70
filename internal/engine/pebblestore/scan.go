package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// Scan implements engine.Scanner with a Pebble iterator bounded by the table's span and r. key and it.Value
// alias the iterator and are valid only during fn. fn may call the store.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if r.Start != nil && r.End != nil && bytes.Compare(r.Start, r.End) >= 0 {
		return nil
	}
	prefix := appendTablePrefix(nil, table)
	lower := append(prefix[:len(prefix):len(prefix)], r.Start...)
	upper := prefixEnd(prefix)
	if r.End != nil {
		upper = append(prefix[:len(prefix):len(prefix)], r.End...)
	}
	iter, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebblestore: scan: %w", err)
	}
	defer iter.Close()
	// The iterator's view is fixed at its creation; see guard.go for why checking after that is race-free.
	if g := s.touching(table, false); g != nil {
		if err := s.waitDurable(ctx, g); err != nil {
			return err
		}
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := iter.ValueAndErr()
		if err != nil {
			return fmt.Errorf("pebblestore: scan: %w", err)
		}
		it, err := decodeValue(v)
		if err != nil {
			return err
		}
		if !it.Live(now) {
			continue
		}
		if !fn(iter.Key()[len(prefix):], it) {
			break
		}
	}
	if err := iter.Error(); err != nil {
		return fmt.Errorf("pebblestore: scan: %w", err)
	}
	return ctx.Err()
}

// Tables implements engine.TableLister: it visits one key per table, seeking past each table's span, so its cost
// grows with the number of tables, not of items. Tables with only expired items are listed until swept.
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	iter, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: dataStart, UpperBound: dataEnd})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: tables: %w", err)
	}
	defer iter.Close()
	if g := s.touching("", true); g != nil {
		if err := s.waitDurable(ctx, g); err != nil {
			return nil, err
		}
	}
	names := []string{}
	for valid := iter.First(); valid; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, _, plen, err := splitKey(iter.Key())
		if err != nil {
			return nil, err
		}
		names = append(names, string(name))
		valid = iter.SeekGE(prefixEnd(iter.Key()[:plen]))
	}
	if err := iter.Error(); err != nil {
		return nil, fmt.Errorf("pebblestore: tables: %w", err)
	}
	sort.Strings(names) // Pebble orders tables by name length first
	return names, nil
}

// Sweep implements engine.Sweeper. It reads up to budget items from where the last call stopped, then asks the
// writer to delete those expired at now, each only if its version is unchanged, so a concurrent rewrite survives.
// A pass that reaches the end of the data starts over at the next call.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	return s.SweepReport(ctx, now, budget, nil)
}

// SweepReport implements engine.SweepReporter: Sweep, then the table and key of each item of a user table it
// removed, once the removal is committed.
func (s *Store) SweepReport(ctx context.Context, now int64, budget int, removed func(table string, key []byte)) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if budget <= 0 {
		return 0, nil
	}
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	if s.sweepQuiet {
		if s.expiring.Load() == s.sweepPassAt {
			return 0, nil // no item can have expired since the last pass found none with an expiry
		}
		s.sweepQuiet = false
	}
	lower := dataStart
	if s.sweepCursor != nil {
		lower = s.sweepCursor
	} else {
		s.sweepPassAt, s.sweepSawTTL = s.expiring.Load(), false // before the pass's first iterator
	}
	iter, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: dataEnd})
	if err != nil {
		return 0, fmt.Errorf("pebblestore: sweep: %w", err)
	}
	var targets []sweepTarget
	seen := 0
	valid := iter.First()
	for ; valid && seen < budget; valid = iter.Next() {
		seen++
		v, err := iter.ValueAndErr()
		if err != nil {
			break
		}
		it, err := decodeValue(v)
		if err == nil && it.Expires != 0 {
			s.sweepSawTTL = true
		}
		if err != nil || it.Live(now) {
			continue // a corrupt record is not the sweeper's to judge; reads report it
		}
		table, _, _, err := splitKey(iter.Key())
		if err != nil {
			continue
		}
		targets = append(targets, sweepTarget{key: bytes.Clone(iter.Key()), table: string(table), version: it.Version})
	}
	s.sweepCursor = nil
	if valid {
		s.sweepCursor = bytes.Clone(iter.Key()) // the first item not examined
	}
	err = iter.Error()
	_ = iter.Close()
	if err != nil {
		return 0, fmt.Errorf("pebblestore: sweep: %w", err)
	}
	s.sweepQuiet = !valid && !s.sweepSawTTL // a whole pass, and no item with an expiry in it
	s.sweepSeen.Add(int64(seen))
	if len(targets) == 0 {
		return 0, nil
	}
	r := &request{sweep: targets, done: make(chan struct{}), reportSwept: removed != nil}
	if err := s.submit(ctx, r); err != nil {
		return 0, err
	}
	s.sweepRemoved.Add(int64(r.removed))
	if r.err == nil {
		for _, t := range r.swept {
			if table, key, _, err := splitKey(t.key); err == nil && !engine.IsInternalTable(string(table)) {
				removed(string(table), key)
			}
		}
	}
	return r.removed, r.err
}

// keysEstimateTTL bounds how often Stats walks the sstable list for the key estimate.
const keysEstimateTTL = 5 * time.Second

// Stats implements engine.Statser with Pebble's metrics and the writer's own figures:
//
//	keys_estimate    stored items, estimated (see keysEstimate)
//	version          highest allocated version
//	fsyncs           WAL syncs the store asked for (one per SyncAlways group, one per SyncInterval tick)
//	apply_batches, commit_groups, group_size_mean, group_size_max   group commit figures (batches the writer
//	                 took: batches that only read are resolved outside it, readbatch.go)
//	guard_waits      reads that waited for an in-flight fsync
//	groups_rejudged  groups resolved again because an item they found alive expired while they were resolved
//	writer_cache_hits, writer_cache_misses   reads of the writer answered by its item cache or not (itemcache.go)
//	writer_filter_asked, writer_filter_absent, writer_filter_bytes   misses of that cache that the member filters
//	                 were asked about, those they answered "absent" without reading Pebble, and the filters' size
//	                 (memberfilter.go)
//	sweep_removed, sweep_examined   expired items sweeps deleted, and items they examined (none while no item has
//	                 an expiry: see Store.expiring)
func (s *Store) Stats() map[string]int64 {
	if s.enter() != nil {
		return map[string]int64{}
	}
	defer s.exit()
	m := s.db.Metrics()
	batches, groups := s.batches.Load(), s.groups.Load()
	mean := int64(0)
	if groups > 0 {
		mean = (batches + groups/2) / groups
	}
	var readAmp, flushed, compacted int64
	for _, l := range m.Levels {
		readAmp += int64(l.Sublevels)
		flushed += int64(l.TableBytesFlushed)
		compacted += int64(l.TableBytesCompacted)
	}
	st := map[string]int64{
		"keys_estimate":            s.keysEstimate(),
		"version":                  int64(s.version.Load()),
		"disk_bytes":               int64(m.DiskSpaceUsage()),
		"memtable_bytes":           int64(m.MemTable.Size),
		"wal_files":                m.WAL.Files,
		"wal_bytes":                int64(m.WAL.Size),
		"wal_bytes_written":        int64(m.WAL.BytesWritten),
		"fsyncs":                   s.fsyncs.Load(),
		"apply_batches":            batches,
		"commit_groups":            groups,
		"group_size_mean":          mean,
		"group_size_max":           s.maxGroup.Load(),
		"guard_waits":              s.guardWaits.Load(),
		"groups_rejudged":          s.rejudged.Load(),
		"sweep_removed":            s.sweepRemoved.Load(),
		"sweep_examined":           s.sweepSeen.Load(),
		"flushes":                  m.Flush.Count,
		"compactions":              m.Compact.Count,
		"flush_bytes_written":      flushed,
		"compaction_bytes_written": compacted,
		"compaction_debt_bytes":    int64(m.Compact.EstimatedDebt),
		"read_amplification":       readAmp,
		"block_cache_bytes":        m.BlockCache.Size,
		"block_cache_hits":         m.BlockCache.Hits,
		"block_cache_misses":       m.BlockCache.Misses,
		"bloom_filter_hits":        m.Filter.Hits,
		"bloom_filter_misses":      m.Filter.Misses,
		"sstables":                 tableCount(m),
		"range_deletions_pending":  int64(m.Keys.TombstoneCount),
	}
	if c := s.itemCache; c != nil {
		st["writer_cache_hits"], st["writer_cache_misses"] = c.hits.Load(), c.misses.Load()
	}
	if f := s.memberFilters; f != nil {
		st["writer_filter_asked"], st["writer_filter_absent"], st["writer_filter_bytes"] = f.asked.Load(),
			f.proved.Load(), f.held.Load()
	}
	s.space.stats(st)
	s.addVerifyStats(st)
	return st
}

func tableCount(m *pebble.Metrics) int64 {
	var n int64
	for _, l := range m.Levels {
		n += l.TablesCount
	}
	return n
}

// keysEstimate estimates the stored items: entries minus deletions over the sstables' properties (recomputed
// at most every keysEstimateTTL, and after every memtable flush) plus the net point writes still in memtables.
// Overwritten items count once per copy until compactions merge them, and a flushed table's items until
// compactions apply its range deletion (Pebble flushes a memtable holding one within FlushDelayDeleteRange and
// drops sstables it wholly covers without rewriting them).
func (s *Store) keysEstimate() int64 {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if s.sstStale.Swap(false) || s.sstKeysAt.IsZero() || time.Since(s.sstKeysAt) >= keysEstimateTTL {
		if levels, err := s.db.SSTables(pebble.WithProperties()); err == nil {
			var n int64
			for _, l := range levels {
				for _, t := range l {
					if p := t.Properties; p != nil {
						n += int64(p.NumEntries) - int64(p.NumDeletions) - metaEntries(t.Smallest.UserKey)
					}
				}
			}
			s.sstKeys, s.sstKeysAt = n, time.Now()
		} else {
			s.sstKeysAt = time.Time{} // counted again at the next call
		}
	}
	return max(s.sstKeys+s.memNet.Load(), 0)
}

// metaEntries guesses how many meta records an sstable starting at smallest holds: the meta namespace sorts
// first, the format record before the version record, and nearly every flushed memtable holds the version record.
func metaEntries(smallest []byte) int64 {
	switch {
	case len(smallest) == 0 || smallest[0] != nsMeta:
		return 0
	case string(smallest) == string(metaFormatKey):
		return 2
	}
	return 1
}

// flushEnded is Pebble's FlushEnd event: the flushed memtables' writes are now counted by the sstables.
func (s *Store) flushEnded(info pebble.FlushInfo) {
	s.yield.flushed(info)
	if info.Err != nil || info.Ingest {
		return
	}
	s.memNet.Store(0)
	s.sstStale.Store(true) // not statsMu: see sstStale
}
