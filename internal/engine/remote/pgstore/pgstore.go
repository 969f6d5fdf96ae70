// Package pgstore is the PostgreSQL engine: anykv's items in one table of a database people already run.
//
// Layout: one table anykv_items(tbl bytea, key bytea, value, flags, expires, version) with primary key (tbl, key);
// flags holds the item's kind above the client flags (remote.PackFlags).
// Tables are a column, not SQL tables, so flushing a table is one DELETE inside the commit's transaction (atomic
// with the rest of the batch) and a table name may hold any byte, NUL included. bytea compares bytewise, so the
// primary key index gives ordered scans (engine.Scanner) and DISTINCT tbl the sorted table list. Item versions
// come from the sequence anykv_version, so they keep growing across restarts and across front ends; the version
// column doubles as the key's stamp for remote's optimistic check.
//
// A commit is one pipelined round trip, one implicit transaction: anykv_lock takes transaction-scoped advisory
// locks, first on the tables (shared for every table the commit reads or writes and for "all tables",
// exclusive for a table it flushes or, with FLUSHALL, for "all tables"), then on every key read or written,
// each phase in hash order so that two commits never deadlock on them; it locks the rows read (FOR UPDATE) and
// raises serialization_failure if a version changed; a batch that read a range of a table's keys (KEYS, SCAN,
// DBSIZE in a script or MULTI) takes that table's lock exclusively and checks the range still holds the keys and
// versions it read (anykv_ranges, remote.RangeCommitter); then the deletes and one INSERT ... ON CONFLICT DO UPDATE
// of all puts. The table locks order a flush against every commit touching its table: a flush's DELETE, at READ
// COMMITTED, sees only rows committed before it began, so without them a RENAME's new key committed meanwhile
// survived a FLUSHDB both reported as done. An error raised by the server rolls everything back. Expired rows
// stay invisible (anykv judges expiry) and are reclaimed by Sweep.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the PostgreSQL engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
type Store struct {
	*remote.Engine
	b *backend
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
)

type backend struct{ pool *pgxpool.Pool }

const schema = `
SELECT pg_advisory_xact_lock(4242424242);
CREATE TABLE IF NOT EXISTS anykv_items (
	tbl bytea NOT NULL, key bytea NOT NULL, value bytea NOT NULL,
	flags bigint NOT NULL, expires bigint NOT NULL, version bigint NOT NULL,
	PRIMARY KEY (tbl, key));
CREATE INDEX IF NOT EXISTS anykv_items_expires ON anykv_items (expires) WHERE expires <> 0;
CREATE SEQUENCE IF NOT EXISTS anykv_version;
CREATE OR REPLACE FUNCTION anykv_check(locks bigint[], t bytea[], k bytea[], v bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE l bigint;
BEGIN
	FOREACH l IN ARRAY locks LOOP
		PERFORM pg_advisory_xact_lock(l);
	END LOOP;
	PERFORM 1 FROM anykv_items i, unnest(t, k) AS w(tbl, key) WHERE i.tbl = w.tbl AND i.key = w.key FOR UPDATE OF i;
	IF EXISTS (SELECT 1 FROM unnest(t, k, v) AS w(tbl, key, ver)
			LEFT JOIN anykv_items i ON i.tbl = w.tbl AND i.key = w.key
			WHERE coalesce(i.version, 0) <> w.ver) THEN
		RAISE EXCEPTION 'anykv: concurrent write' USING ERRCODE = 'serialization_failure';
	END IF;
END $$;
CREATE OR REPLACE FUNCTION anykv_lock(tl bigint[], excl boolean[], locks bigint[], t bytea[], k bytea[], v bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. coalesce(array_length(tl, 1), 0) LOOP
		IF excl[i] THEN
			PERFORM pg_advisory_xact_lock(tl[i]);
		ELSE
			PERFORM pg_advisory_xact_lock_shared(tl[i]);
		END IF;
	END LOOP;
	PERFORM anykv_check(locks, t, k, v);
END $$;
CREATE OR REPLACE FUNCTION anykv_ranges(rt bytea[], rlo bytea[], rhi bytea[], ei bigint[], ek bytea[], ev bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (
		(SELECT r.i, it.key, it.version FROM unnest(rt, rlo, rhi) WITH ORDINALITY AS r(tbl, lo, hi, i)
			JOIN anykv_items it ON it.tbl = r.tbl AND it.key >= r.lo AND (r.hi IS NULL OR it.key < r.hi)
		EXCEPT ALL SELECT * FROM unnest(ei, ek, ev))
		UNION ALL
		(SELECT * FROM unnest(ei, ek, ev)
		EXCEPT ALL SELECT r.i, it.key, it.version FROM unnest(rt, rlo, rhi) WITH ORDINALITY AS r(tbl, lo, hi, i)
			JOIN anykv_items it ON it.tbl = r.tbl AND it.key >= r.lo AND (r.hi IS NULL OR it.key < r.hi))
	) THEN
		RAISE EXCEPTION 'anykv: concurrent write in a range read' USING ERRCODE = 'serialization_failure';
	END IF;
END $$;`

// Open connects to the database at url (postgres://user:pw@host:port/db?...), creates the table, sequence and
// function if missing, and returns the engine.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	// A commit checks versions after anykv_lock waited for its locks, which needs a snapshot per statement: READ
	// COMMITTED, whatever default the server, database or role sets. At REPEATABLE READ the implicit transaction's
	// snapshot dates from before the wait, and a key another commit inserted meanwhile looked still absent.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, poolTx{pool}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	b := &backend{pool: pool}
	s := &Store{Engine: remote.New(b), b: b}
	// Group commit: one transaction commits any keys.
	s.Engine.GroupMuts = 128
	s.Engine.Ranger = s // collection ops read ranges of members with the store's own scan
	return s, nil
}

// poolTx lets pgx.BeginFunc start a transaction on the pool.
type poolTx struct{ p *pgxpool.Pool }

func (p poolTx) Begin(ctx context.Context) (pgx.Tx, error) { return p.p.Begin(ctx) }

// nonNil is b, or an empty slice for nil: pgx sends a nil []byte as NULL, which equals no key, not the empty key.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func slotArrays(slots []remote.Slot) (t, k [][]byte) {
	t, k = make([][]byte, len(slots)), make([][]byte, len(slots))
	for i, s := range slots {
		t[i], k[i] = []byte(s.Table), nonNil(s.Key)
	}
	return t, k
}

const readSQL = `SELECT w.i, it.value, it.flags, it.expires, it.version
FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS w(tbl, key, i)
JOIN anykv_items it ON it.tbl = w.tbl AND it.key = w.key`

// Read implements remote.Backend: one statement reads every slot (one snapshot) and, in the same pipelined
// round trip, n values are drawn from the sequence.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) (items []remote.Stored, versions []uint64, ok bool, tag any, err error) {
	err = b.readAgain(ctx, func() error {
		items, versions, ok, tag, err = b.read(ctx, slots, n)
		return err
	})
	return items, versions, ok, tag, err
}

// readAgain runs a read, and once more on a new connection if the first failed because its connection was
// dead: a pooled connection that PostgreSQL closed (a restart, pg_terminate_backend) fails its next query with
// 57P01, and the client saw that raw error for a read that is safe to repeat (a version reservation that is
// lost only skips versions). The pool's other connections are likely dead too: they are all dropped. A read
// whose own context ended (pgx counts that safe to retry too) is not run again, nor the pool dropped for it.
func (b *backend) readAgain(ctx context.Context, read func() error) error {
	err := read()
	var pe *pgconn.PgError
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		(pgconn.SafeToRetry(err) || errors.As(err, &pe) && strings.HasPrefix(pe.Code, "57P0")) {
		b.pool.Reset()
		err = read()
	}
	return err
}

// read is Read, once.
func (b *backend) read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	items := make([]remote.Stored, len(slots))
	var versions []uint64
	batch := &pgx.Batch{}
	if len(slots) > 0 {
		t, k := slotArrays(slots)
		batch.Queue(readSQL, t, k).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var i int64
				var it engine.Item
				var flags, exp, ver int64
				if err := rows.Scan(&i, &it.Value, &flags, &exp, &ver); err != nil {
					return err
				}
				remote.UnpackFlags(uint64(flags), &it)
				it.Expires, it.Version = exp, uint64(ver)
				items[i-1] = remote.Stored{Item: it, Found: true, Stamp: uint64(ver)}
			}
			return rows.Err()
		})
	}
	if n > 0 {
		batch.Queue(`SELECT nextval('anykv_version') FROM generate_series(1, $1)`, n).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var v int64
				if err := rows.Scan(&v); err != nil {
					return err
				}
				versions = append(versions, uint64(v))
			}
			return rows.Err()
		})
	}
	if err := b.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, nil, false, nil, err
	}
	slices.Sort(versions) // concurrent nextval calls may interleave; each value is still fresh
	return items, versions, true, nil, nil
}

func lockOf(s remote.Slot) int64 {
	h := fnv.New64a()
	h.Write([]byte(s.Table))
	h.Write([]byte{0})
	h.Write(s.Key)
	return int64(h.Sum64())
}

// allTablesLock is the advisory lock every commit takes shared and FLUSHALL exclusively.
const allTablesLock = int64(4242424243)

// tableLockOf is the advisory lock of a table (flushes take it exclusively, other commits shared).
func tableLockOf(table string) int64 {
	h := fnv.New64a()
	h.Write([]byte("anykv table\x00"))
	h.Write([]byte(table))
	return int64(h.Sum64())
}

// tableLocks lists the table locks of a commit in lock order, each with whether it is taken exclusively.
func tableLocks(checks []remote.Check, ranges []remote.RangeCheck, w *remote.Writes) ([]int64, []bool) {
	mode := map[int64]bool{allTablesLock: w.FlushAll}
	shared := func(table string) { // unless it is taken exclusively already
		if l := tableLockOf(table); !mode[l] {
			mode[l] = false
		}
	}
	for _, t := range w.Flush {
		mode[tableLockOf(t)] = true
	}
	for _, r := range ranges {
		mode[tableLockOf(r.Table)] = true
	}
	for _, c := range checks {
		shared(c.Table)
	}
	for _, p := range w.Put {
		shared(p.Table)
	}
	for _, d := range w.Delete {
		shared(d.Table)
	}
	ids := make([]int64, 0, len(mode))
	for l := range mode {
		ids = append(ids, l)
	}
	slices.Sort(ids)
	excl := make([]bool, len(ids))
	for i, l := range ids {
		excl[i] = mode[l]
	}
	return ids, excl
}

// Commit implements remote.Backend.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	return b.CommitRanges(ctx, checks, nil, w, tok)
}

// CommitRanges implements remote.RangeCommitter: Commit that also takes each range's table lock exclusively (no
// other commit of the table runs until this one ends, and every one before it is visible) and then requires the
// range to hold exactly the keys and versions the batch read (anykv_ranges), else a serialization failure.
func (b *backend) CommitRanges(ctx context.Context, checks []remote.Check, ranges []remote.RangeCheck, w *remote.Writes, _ any) error {
	batch := &pgx.Batch{}
	locks := make([]int64, 0, len(checks)+len(w.Put)+len(w.Delete))
	ct, ck, cv := make([][]byte, len(checks)), make([][]byte, len(checks)), make([]int64, len(checks))
	for i, c := range checks {
		ct[i], ck[i], cv[i] = []byte(c.Table), nonNil(c.Key), int64(c.Stamp)
		locks = append(locks, lockOf(c.Slot))
	}
	for _, p := range w.Put {
		locks = append(locks, lockOf(p.Slot))
	}
	for _, d := range w.Delete {
		locks = append(locks, lockOf(d))
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	tl, excl := tableLocks(checks, ranges, w)
	batch.Queue(`SELECT anykv_lock($1, $2, $3, $4, $5, $6)`, tl, excl, locks, ct, ck, cv)
	if len(ranges) > 0 {
		queueRanges(batch, ranges)
	}
	switch {
	case w.FlushAll:
		batch.Queue(`DELETE FROM anykv_items`)
	case len(w.Flush) > 0:
		ft := make([][]byte, len(w.Flush))
		for i, t := range w.Flush {
			ft[i] = []byte(t)
		}
		batch.Queue(`DELETE FROM anykv_items WHERE tbl = ANY($1::bytea[])`, ft)
	}
	if len(w.Delete) > 0 {
		t, k := slotArrays(w.Delete)
		batch.Queue(`DELETE FROM anykv_items it USING unnest($1::bytea[], $2::bytea[]) AS w(tbl, key)
			WHERE it.tbl = w.tbl AND it.key = w.key`, t, k)
	}
	if n := len(w.Put); n > 0 {
		t, k, v := make([][]byte, n), make([][]byte, n), make([][]byte, n)
		f, e, ver := make([]int64, n), make([]int64, n), make([]int64, n)
		for i, p := range w.Put {
			t[i], k[i], v[i] = []byte(p.Table), nonNil(p.Key), p.Item.Value
			if v[i] == nil {
				v[i] = []byte{}
			}
			f[i], e[i], ver[i] = int64(remote.PackFlags(p.Item)), p.Item.Expires, int64(p.Item.Version)
		}
		batch.Queue(`INSERT INTO anykv_items (tbl, key, value, flags, expires, version)
			SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bigint[])
			ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value, flags = EXCLUDED.flags,
				expires = EXCLUDED.expires, version = EXCLUDED.version`, t, k, v, f, e, ver)
	}
	if batch.Len() == 1 && len(checks) == 0 { // (a range check is a statement of its own)
		return nil // nothing to check or write: the locks alone would order nothing
	}
	return classify(b.pool.SendBatch(ctx, batch).Close())
}

// queueRanges queues the check of ranges (anykv_ranges): each range's rows, by the range's position, against the
// keys and versions read.
func queueRanges(batch *pgx.Batch, ranges []remote.RangeCheck) {
	rt, rlo, rhi := make([][]byte, len(ranges)), make([][]byte, len(ranges)), make([][]byte, len(ranges))
	var ei, ev []int64
	var ek [][]byte
	for i, r := range ranges {
		rt[i], rlo[i], rhi[i] = []byte(r.Table), r.Start, r.End // a nil End is NULL: to the table's end
		if rlo[i] == nil {
			rlo[i] = []byte{}
		}
		for j, k := range r.Keys {
			if k == nil {
				k = []byte{} // the empty key: a nil would be NULL, which no row's key equals
			}
			ei, ek, ev = append(ei, int64(i+1)), append(ek, k), append(ev, int64(r.Versions[j]))
		}
	}
	batch.Queue(`SELECT anykv_ranges($1, $2, $3, $4, $5, $6)`, rt, rlo, rhi, ei, ek, ev)
}

// classify maps a commit error: a refused or rolled-back transaction (the server said so) is final, a key over
// the index's limit the client's bad input, a serialization failure or deadlock is a conflict to retry, and
// anything else after sending is unknown.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01"):
		return fmt.Errorf("%w: %s", remote.ErrConflict, pe.Message)
	case errors.As(err, &pe) && pe.Code == "54000":
		// program_limit_exceeded: a key the primary key's index cannot hold (a btree row of over 2704 bytes, an
		// incompressible key of some 2.7 KiB, within anykv's key limit): the client's bad input, this batch's own.
		return fmt.Errorf("%w: a key too long for PostgreSQL's index (%s)", engine.ErrInvalid, pe.Message)
	case errors.As(err, &pe):
		return err
	case pgconn.SafeToRetry(err):
		return fmt.Errorf("%w: %v", remote.ErrConflict, err) // never sent: retrying is safe
	}
	return fmt.Errorf("postgres: %w: %v", remote.ErrUnknownOutcome, err)
}

// Get implements remote.Backend.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	var it engine.Item
	var flags, ver int64
	err := b.readAgain(ctx, func() error {
		return b.pool.QueryRow(ctx, `SELECT value, flags, expires, version FROM anykv_items WHERE tbl = $1 AND key = $2`,
			[]byte(s.Table), nonNil(s.Key)).Scan(&it.Value, &flags, &it.Expires, &ver)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.Item{}, false, nil
	}
	if err != nil {
		return engine.Item{}, false, err
	}
	remote.UnpackFlags(uint64(flags), &it)
	it.Version = uint64(ver)
	return it, true, nil
}

// Close implements remote.Backend.
func (b *backend) Close() error { b.pool.Close(); return nil }

const scanPage = 256

// Scan implements engine.Scanner in pages of 256 keys through the primary key index. Each page is one
// snapshot; a write between pages may or may not be seen, as with a Redis SCAN. Each page's query, its rows
// included, is bounded by the engine's Timeout (remote.Engine.RoundTrip), not the scan as a whole.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	return remote.ScanPages(r, scanPage, func(from []byte, incl bool) ([]remote.Entry, error) {
		op := ">"
		if incl {
			op = ">="
		}
		q := `SELECT key, value, flags, expires, version FROM anykv_items
			WHERE tbl = $1 AND key ` + op + ` $2 AND ($3::bytea IS NULL OR key < $3)
			AND (expires = 0 OR expires > $4) ORDER BY key LIMIT $5`
		return remote.Call(ctx, s.Engine, func(ctx context.Context) ([]remote.Entry, error) {
			rows, err := s.b.pool.Query(ctx, q, []byte(table), nonNil(from), r.End, now, scanPage)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(row pgx.CollectableRow) (remote.Entry, error) {
				var e remote.Entry
				var flags, ver int64
				if err := row.Scan(&e.Key, &e.Item.Value, &flags, &e.Item.Expires, &ver); err != nil {
					return e, err
				}
				remote.UnpackFlags(uint64(flags), &e.Item)
				e.Item.Version = uint64(ver)
				return e, nil
			})
		})
	}, fn)
}

// Tables implements engine.TableLister with one query, bounded as a whole by the engine's Timeout
// (remote.Engine.RoundTrip): pgx takes one context per query, so there is no finer bound than the query.
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	return remote.Call(ctx, s.Engine, func(ctx context.Context) ([]string, error) {
		rows, err := s.b.pool.Query(ctx, `SELECT DISTINCT tbl FROM anykv_items ORDER BY tbl`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var b []byte
			err := r.Scan(&b)
			return string(b), err
		})
	})
}

// Sweep implements engine.Sweeper: it deletes up to budget items expired at now, found through the expiry
// index. A row rewritten meanwhile has a new row version and is left alone. The one statement is bounded by
// the engine's Timeout (remote.Engine.RoundTrip).
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	tag, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (pgconn.CommandTag, error) {
		return s.b.pool.Exec(ctx, `DELETE FROM anykv_items WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM anykv_items WHERE expires <> 0 AND expires <= $1 LIMIT $2))
		AND expires <> 0 AND expires <= $1`, now, budget)
	})
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
