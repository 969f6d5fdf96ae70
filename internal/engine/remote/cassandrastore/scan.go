package cassandrastore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sort"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

const scanPage = 256

// Scan implements engine.Scanner in pages of 256 keys in clustering (byte) order. Each page is one
// single-partition read, a snapshot; a write between pages may or may not be seen. Over several slots a page
// is the first 256 keys of every slot's next 256, merged: each slot's read is a snapshot, the page is not. Each
// slot's read of a page (one query of at most 256 rows, one round trip) is bounded by the engine's Timeout
// (remote.Engine.RoundTrip), not the scan as a whole.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	parts, err := s.b.scanParts(ctx, table, r)
	if err != nil {
		return err
	}
	return remote.ScanPages(r, scanPage, func(from []byte, incl bool) ([]remote.Entry, error) {
		var out []remote.Entry
		for _, p := range parts {
			got, err := remote.Call(ctx, s.Engine, func(ctx context.Context) ([]remote.Entry, error) {
				return s.page(ctx, p, table, r, from, incl)
			})
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
		}
		if len(parts) > 1 {
			sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Key, out[j].Key) < 0 })
			out = out[:min(len(out), scanPage)]
		}
		return out, nil
	}, func(k []byte, it engine.Item) bool {
		if !it.Live(now) { // filtered here, not in the page: a short page would end the walk
			return true
		}
		return fn(k, it)
	})
}

// scanParts returns the partitions a scan of table over r reads: every slot's outside a batch; inside one
// (Apply confined ctx to a slot), that slot's, which must hold the range: the members of one collection.
func (b *backend) scanParts(ctx context.Context, table string, r engine.Range) ([]string, error) {
	if b.slots <= 1 {
		return []string{b.p}, nil
	}
	shard, inBatch := remote.ShardFrom(ctx)
	if !inBatch {
		parts := make([]string, b.slots)
		for i := range parts {
			parts[i] = b.partition(i)
		}
		return parts, nil
	}
	// Batches read ranges of members, each within one collection, whose members all live in its slot.
	if _, members := engine.UserTable(table); members {
		if _, _, _, err := engine.SplitMemberKey(r.Start); err == nil {
			if err := remote.InShard([]remote.Slot{{Table: table, Key: r.Start}}, shard, b.slots); err != nil {
				return nil, err
			}
			return []string{b.partition(shard)}, nil
		}
	}
	return nil, remote.CrossSlot(b.slots, "a range of keys in a transaction or script")
}

// page reads up to scanPage items of table in partition p from from (incl: included) to r.End.
func (s *Store) page(ctx context.Context, p, table string, r engine.Range, from []byte, incl bool) ([]remote.Entry, error) {
	op := ">"
	if incl {
		op = ">="
	}
	q := "SELECT k, v, flags, expires, version FROM " + s.b.items + " WHERE p = ? AND tbl = ? AND k " + op + " ?"
	args := []any{p, tblCol(table), from}
	if r.End != nil {
		q += " AND k < ?"
		args = append(args, r.End)
	}
	iter := s.b.s.Query(q+" LIMIT ?", append(args, scanPage)...).Consistency(s.b.level(ctx)).IterContext(ctx)
	var out []remote.Entry
	var e remote.Entry
	var flags int64
	for iter.Scan(&e.Key, &e.Item.Value, &flags, &e.Item.Expires, &e.Item.Version) {
		got := remote.Entry{Key: append([]byte(nil), e.Key...), Item: e.Item}
		got.Item.Value = append([]byte(nil), e.Item.Value...)
		remote.UnpackFlags(uint64(flags), &got.Item)
		out = append(out, got)
	}
	return out, iter.Close()
}

// Tables implements engine.TableLister: per slot, one read per table, each skipping to the next table's first
// row; the slots' lists merged. Each read is bounded by the engine's Timeout (remote.Engine.RoundTrip).
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	var names []string
	for i := range s.b.slots {
		got, err := s.tables(ctx, s.b.partition(i))
		if err != nil {
			return nil, err
		}
		names = append(names, got...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// tables lists the tables with rows in partition p.
func (s *Store) tables(ctx context.Context, p string) ([]string, error) {
	var names []string
	last := metaTbl
	for {
		var tbl []byte
		err := s.RoundTrip(ctx, func(ctx context.Context) error {
			return s.b.s.Query("SELECT tbl FROM "+s.b.items+" WHERE p = ? AND tbl > ? LIMIT 1", p, last).
				Consistency(s.b.level(ctx)).ScanContext(ctx, &tbl)
		})
		if errors.Is(err, gocql.ErrNotFound) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if len(tbl) == 0 || tbl[0] != 1 {
			return nil, errors.New("cassandra: a row with a malformed tbl column")
		}
		names = append(names, string(tbl[1:]))
		last = tbl
	}
}

// Sweep implements engine.Sweeper: in each slot's partition, starting one further each call, it finds up to
// the budget left of items expired at now (a filtered read) and deletes them in one conditional BATCH, each IF
// its version is still the one examined. If one was rewritten meanwhile nothing of that slot is deleted, and
// the next Sweep tries again. Each slot's filtered read (a query of at most budget rows, bounded as a whole) and
// its BATCH are bounded by the engine's Timeout (remote.Engine.RoundTrip), not the sweep as a whole.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	// Each call starts at the next slot, and a slot that fails does not stop the others: no slot is starved by
	// one that holds a whole budget of expired rows or keeps failing.
	total, start := 0, int(s.sweepFrom.Add(1))
	var first error
	for j := 0; j < s.b.slots && total < budget; j++ {
		n, err := s.sweep(ctx, s.b.partition((start+j)%s.b.slots), now, budget-total)
		if err != nil && first == nil {
			first = err
		}
		total += n
	}
	return total, first
}

// sweep deletes up to budget items of partition p expired at now.
func (s *Store) sweep(ctx context.Context, p string, now int64, budget int) (int, error) {
	batch := s.b.s.Batch(gocql.UnloggedBatch)
	n := 0
	err := s.RoundTrip(ctx, func(ctx context.Context) error {
		iter := s.b.s.Query("SELECT tbl, k, version FROM "+s.b.items+" WHERE p = ? AND expires > 0 AND expires <= ? LIMIT ? ALLOW FILTERING",
			p, now, budget).IterContext(ctx)
		var tbl, k []byte
		var version int64
		for iter.Scan(&tbl, &k, &version) {
			batch.Query("DELETE FROM "+s.b.items+" WHERE p = ? AND tbl = ? AND k = ? IF version = ?",
				p, append([]byte(nil), tbl...), append([]byte(nil), k...), version)
			n++
		}
		return iter.Close()
	})
	if err != nil || n == 0 {
		return 0, err
	}
	applied, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (bool, error) {
		applied, it, err := batch.MapExecCASContext(ctx, map[string]any{})
		if it != nil {
			it.Close()
		}
		return applied, err
	})
	if err != nil || !applied {
		return 0, err
	}
	return n, nil
}
