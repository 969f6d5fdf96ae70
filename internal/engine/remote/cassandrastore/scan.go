package cassandrastore

import (
	"context"
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

const scanPage = 256

// Scan implements engine.Scanner in pages of 256 keys in clustering (byte) order. Each page is one
// single-partition read, a snapshot; a write between pages may or may not be seen.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	tbl := tblCol(table)
	cl := s.b.level(ctx)
	return remote.ScanPages(r, scanPage, func(from []byte, incl bool) ([]remote.Entry, error) {
		op := ">"
		if incl {
			op = ">="
		}
		q := "SELECT k, v, flags, expires, version FROM " + s.b.items + " WHERE p = ? AND tbl = ? AND k " + op + " ?"
		args := []any{s.b.p, tbl, from}
		if r.End != nil {
			q += " AND k < ?"
			args = append(args, r.End)
		}
		iter := s.b.s.Query(q+" LIMIT ?", append(args, scanPage)...).Consistency(cl).IterContext(ctx)
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
	}, func(k []byte, it engine.Item) bool {
		if !it.Live(now) { // filtered here, not in the page: a short page would end the walk
			return true
		}
		return fn(k, it)
	})
}

// Tables implements engine.TableLister: one read per table, each skipping to the next table's first row.
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	var names []string
	last := metaTbl
	for {
		var tbl []byte
		err := s.b.s.Query("SELECT tbl FROM "+s.b.items+" WHERE p = ? AND tbl > ? LIMIT 1", s.b.p, last).
			Consistency(s.b.level(ctx)).ScanContext(ctx, &tbl)
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

// Sweep implements engine.Sweeper: it finds up to budget items expired at now (a filtered read of the partition)
// and deletes them in one conditional BATCH, each IF its version is still the one examined. If one was rewritten
// meanwhile nothing is deleted, and the next Sweep tries again.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	iter := s.b.s.Query("SELECT tbl, k, version FROM "+s.b.items+" WHERE p = ? AND expires > 0 AND expires <= ? LIMIT ? ALLOW FILTERING",
		s.b.p, now, budget).IterContext(ctx)
	batch := s.b.s.Batch(gocql.UnloggedBatch)
	var tbl, k []byte
	var version int64
	n := 0
	for iter.Scan(&tbl, &k, &version) {
		batch.Query("DELETE FROM "+s.b.items+" WHERE p = ? AND tbl = ? AND k = ? IF version = ?",
			s.b.p, append([]byte(nil), tbl...), append([]byte(nil), k...), version)
		n++
	}
	if err := iter.Close(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	applied, it, err := batch.MapExecCASContext(ctx, map[string]any{})
	if it != nil {
		it.Close()
	}
	if err != nil || !applied {
		return 0, err
	}
	return n, nil
}
