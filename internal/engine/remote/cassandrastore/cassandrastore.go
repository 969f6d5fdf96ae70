// Package cassandrastore is the Apache Cassandra engine: anykv's items in a Cassandra table, committed with
// lightweight transactions (Paxos, SERIAL consistency).
//
// Layout: table anykv_items(p text, tbl blob, k blob, v blob, flags bigint, expires bigint, version bigint) with
// primary key (p, tbl, k): partition key p (the URL's partition, default "anykv"), clustering columns tbl and k.
// A lightweight transaction is atomic only within one partition, so every item of one anykv namespace lives in
// one partition: every batch, whatever tables and keys it touches, commits with one conditional BATCH on it, and
// blob clustering (bytewise order) gives ordered scans and the sorted table list. The price is that a namespace
// does not scale past one partition's replica set, and all writes to it go through Paxos on that partition.
// Several namespaces (partitions) may share the table. tbl holds 0x01+table so that the meta row (tbl 0x00,
// k empty), which no item can collide with, sorts first.
//
// The meta row's version is the namespace's version counter. A batch's read is one single-partition SELECT of
// the meta row and every key (one round trip, one snapshot: Cassandra isolates a partition's writes); the
// versions are the counter's next n values. The commit is one conditional BATCH: "IF version = c" on the meta
// row, which also advances the counter past the versions used, plus the puts, deletes and flushes. Every commit
// advances the counter, so an unchanged counter proves nothing the batch read has changed: the per-key stamps
// remote passes are implied by it. Two concurrent writing batches therefore conflict and one retries, like etcd.
//
// Every write, the sweeper's included, is a lightweight transaction, so every cell's timestamp is a Paxos ballot,
// ordered per partition: no client clock decides which write wins.
//
// A flush deletes clustering ranges: the gaps around the keys the same batch puts. The statements of a BATCH
// share one timestamp, and leaving the puts out of the deleted ranges keeps them whatever Cassandra does with a
// deletion and a write of equal timestamp (5.0.4 keeps such a put even inside the range, as the tests saw, but
// that is not a documented promise). A write timeout, an unknown CAS result or a lost connection after the BATCH
// was sent is remote.ErrUnknownOutcome and never retried.
package cassandrastore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the Cassandra engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
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

type backend struct {
	s     *gocql.Session
	items string // keyspace.anykv_items
	p     string // the partition holding this namespace
}

// metaTbl is the tbl column of the meta row (k empty), whose version is the counter; items' tbl start with 0x01.
var metaTbl = []byte{0}

func tblCol(table string) []byte { return append([]byte{1}, table...) }

var keyspaceName = regexp.MustCompile(`^[A-Za-z0-9_]{1,48}$`)

// Config turns cassandra://[user:pw@]host:port/keyspace[?partition=P] into the driver's configuration, the
// keyspace and the partition. Errors wrap remote.ErrBadURL.
func Config(raw string) (*gocql.ClusterConfig, string, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	if u.Scheme != "cassandra" {
		return nil, "", "", fmt.Errorf("%w: scheme %q, want cassandra", remote.ErrBadURL, u.Scheme)
	}
	ks := u.Path
	if len(ks) > 0 && ks[0] == '/' {
		ks = ks[1:]
	}
	if u.Hostname() == "" || !keyspaceName.MatchString(ks) {
		return nil, "", "", fmt.Errorf("%w: want cassandra://host:port/keyspace (keyspace: 1-48 letters, digits, _)", remote.ErrBadURL)
	}
	port := 9042
	if u.Port() != "" {
		if port, err = strconv.Atoi(u.Port()); err != nil || port <= 0 || port > 65535 {
			return nil, "", "", fmt.Errorf("%w: port %q", remote.ErrBadURL, u.Port())
		}
	}
	part := "anykv"
	for k, v := range u.Query() {
		if k != "partition" || v[0] == "" {
			return nil, "", "", fmt.Errorf("%w: unknown parameter %q (only partition, not empty)", remote.ErrBadURL, k)
		}
		part = v[0]
	}
	c := gocql.NewCluster(u.Hostname())
	c.Port = port
	c.Consistency = gocql.Quorum
	c.SerialConsistency = gocql.Serial
	c.Timeout, c.ConnectTimeout = 10*time.Second, 10*time.Second
	c.RetryPolicy = nil // a commit is never resent: its outcome may be unknown
	c.Logger = gocql.NewLogger(gocql.LogLevelNone)
	if u.User != nil {
		pw, _ := u.User.Password()
		c.Authenticator = gocql.PasswordAuthenticator{Username: u.User.Username(), Password: pw}
	}
	return c, ks, part, nil
}

// Open connects to the cluster at raw (see Config), creates the keyspace (SimpleStrategy, one replica: create
// it yourself for more), the table and the namespace's meta row if missing, and returns the engine.
func Open(ctx context.Context, raw string) (*Store, error) {
	cfg, ks, part, err := Config(raw)
	if err != nil {
		return nil, err
	}
	s, err := cfg.CreateSession()
	if err != nil {
		return nil, err
	}
	b := &backend{s: s, items: ks + ".anykv_items", p: part}
	for _, q := range []string{
		"CREATE KEYSPACE IF NOT EXISTS " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE IF NOT EXISTS " + b.items + ` (p text, tbl blob, k blob, v blob, flags bigint, expires bigint,
			version bigint, PRIMARY KEY (p, tbl, k))`,
	} {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if _, err := s.Query("INSERT INTO "+b.items+" (p, tbl, k, version) VALUES (?, ?, ?, 0) IF NOT EXISTS",
		part, metaTbl, []byte{}).MapScanCASContext(ctx, map[string]any{}); err != nil {
		s.Close()
		return nil, err
	}
	st := &Store{Engine: remote.New(b), b: b}
	st.Engine.Ranger = st // collection ops read ranges of members with the store's own scan
	return st, nil
}

// Read implements remote.Backend: one SELECT of the meta row and every slot in the namespace's partition.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	var q bytes.Buffer
	q.WriteString("SELECT tbl, k, v, flags, expires, version FROM " + b.items + " WHERE p = ? AND (tbl, k) IN ((?, ?)")
	args := []any{b.p, metaTbl, []byte{}}
	at := make(map[string]int, len(slots))
	for i, s := range slots {
		id := remote.SlotID(s.Table, s.Key)
		if _, dup := at[id]; dup {
			continue
		}
		at[id] = i
		q.WriteString(", (?, ?)")
		args = append(args, tblCol(s.Table), nonNil(s.Key))
	}
	q.WriteString(")")
	iter := b.s.Query(q.String(), args...).PageSize(readPage).IterContext(ctx)
	items := make([]remote.Stored, len(slots))
	var (
		tbl, k []byte
		it     engine.Item
		flags  int64
		ctr    int64 = -1
	)
	for iter.Scan(&tbl, &k, &it.Value, &flags, &it.Expires, &it.Version) {
		if bytes.Equal(tbl, metaTbl) {
			ctr = int64(it.Version)
			continue
		}
		if len(tbl) == 0 {
			continue // not an item row
		}
		if i, ok := at[remote.SlotID(string(tbl[1:]), k)]; ok {
			got := it
			got.Value = append([]byte(nil), it.Value...)
			remote.UnpackFlags(uint64(flags), &got)
			items[i] = remote.Stored{Item: got, Found: true, Stamp: got.Version}
		}
	}
	if err := iter.Close(); err != nil {
		return nil, nil, false, nil, err
	}
	for i, s := range slots { // a slot listed twice gets what its first listing got
		if j := at[remote.SlotID(s.Table, s.Key)]; j != i {
			items[i] = items[j]
		}
	}
	// The meta row sorts first, so the counter comes from the first page; more rows than a page hold are read
	// in several pages, which together are no snapshot.
	snapshot := len(at)+1 <= readPage
	if ctr < 0 {
		return nil, nil, false, nil, fmt.Errorf("cassandra: the version counter of partition %q is missing", b.p)
	}
	versions := make([]uint64, n)
	for i := range versions {
		versions[i] = uint64(ctr) + uint64(i) + 1
	}
	return items, versions, snapshot, &counter{value: uint64(ctr), n: n}, nil
}

// readPage is the number of rows a batch's read fetches per round trip.
const readPage = 5000

// counter is the version counter as Read saw it: Commit advances it only if it is unchanged.
type counter struct {
	value uint64
	n     int
}

// nonNil returns b, or an empty slice for nil (the driver would send nil as null).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Get implements remote.Backend.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	var it engine.Item
	var flags int64
	err := b.s.Query("SELECT v, flags, expires, version FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?",
		b.p, tblCol(s.Table), nonNil(s.Key)).ScanContext(ctx, &it.Value, &flags, &it.Expires, &it.Version)
	if errors.Is(err, gocql.ErrNotFound) {
		return engine.Item{}, false, nil
	}
	if err != nil {
		return engine.Item{}, false, err
	}
	remote.UnpackFlags(uint64(flags), &it)
	return it, true, nil
}

// Close implements remote.Backend.
func (b *backend) Close() error { b.s.Close(); return nil }

// Commit implements remote.Backend with one conditional BATCH on the partition: IF the counter is still what Read
// saw, advance it past every version used and apply w. With nothing to write it re-reads the counter at SERIAL
// consistency: unchanged, the batch's reads still hold together.
func (b *backend) Commit(ctx context.Context, _ []remote.Check, w *remote.Writes, token any) error {
	ctr, _ := token.(*counter)
	if ctr == nil {
		return errors.New("cassandra: commit without a read")
	}
	if w.Empty() {
		var now int64
		err := b.s.Query("SELECT version FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?", b.p, metaTbl, []byte{}).
			Consistency(gocql.Serial).ScanContext(ctx, &now)
		if err != nil {
			return err
		}
		if uint64(now) != ctr.value {
			return fmt.Errorf("%w: the namespace changed during the batch's reads", remote.ErrConflict)
		}
		return nil
	}
	if size := batchBytes(w); size > maxBatch {
		return fmt.Errorf("cassandra: %w: a batch of %d bytes, over the %d a Cassandra mutation may hold by default",
			engine.ErrTooLarge, size, maxBatch)
	}
	next := ctr.value + uint64(ctr.n)
	for _, p := range w.Put {
		next = max(next, p.Item.Version)
	}
	if next == ctr.value {
		next++ // every commit moves the counter: it is the stamp of the whole namespace
	}
	batch := b.s.Batch(gocql.UnloggedBatch)
	batch.Query("UPDATE "+b.items+" SET version = ? WHERE p = ? AND tbl = ? AND k = ? IF version = ?",
		int64(next), b.p, metaTbl, []byte{}, int64(ctr.value))
	b.flushes(batch, w)
	for _, d := range w.Delete {
		batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?", b.p, tblCol(d.Table), nonNil(d.Key))
	}
	for _, p := range w.Put {
		batch.Query("INSERT INTO "+b.items+" (p, tbl, k, v, flags, expires, version) VALUES (?, ?, ?, ?, ?, ?, ?)",
			b.p, tblCol(p.Table), nonNil(p.Key), nonNil(p.Item.Value), int64(remote.PackFlags(p.Item)), p.Item.Expires, int64(p.Item.Version))
	}
	if err := ctx.Err(); err != nil {
		return err // not sent
	}
	applied, iter, err := batch.MapExecCASContext(ctx, map[string]any{})
	if iter != nil {
		iter.Close()
	}
	switch {
	case err == nil && applied:
		return nil
	case err == nil:
		return fmt.Errorf("%w: the namespace changed since the batch's read", remote.ErrConflict)
	case refused(err):
		return fmt.Errorf("cassandra: commit refused: %w", err)
	}
	return fmt.Errorf("cassandra: %w: %v", remote.ErrUnknownOutcome, err)
}

// maxBatch bounds the bytes of a commit: Cassandra refuses a mutation over half a commit log segment (16 MiB with
// the default 32 MiB segments) and a frame over native_transport_max_frame_size (16 MiB), and a refused frame
// may cost the connection, leaving the outcome unknown. A larger batch is refused before anything is sent.
const maxBatch = 15 << 20

// batchBytes is roughly what w's statements carry: tables, keys and values, plus a little per row.
func batchBytes(w *remote.Writes) int {
	n := 0
	for _, p := range w.Put {
		n += len(p.Table) + len(p.Key) + len(p.Item.Value) + 64
	}
	for _, d := range w.Delete {
		n += len(d.Table) + len(d.Key) + 64
	}
	return n
}

// refused reports whether a commit error proves the BATCH was not applied: it was never sent, or the server
// refused it before running Paxos. Anything else (write timeout, unknown CAS result, a connection lost or a
// deadline passed while waiting for the answer) leaves the outcome unknown.
func refused(err error) bool {
	var (
		unavail  *gocql.RequestErrUnavailable
		invalid  *gocql.RequestErrInvalid
		syntax   *gocql.RequestErrSyntax
		unauth   *gocql.RequestErrUnauthorized
		config   *gocql.RequestErrConfig
		overload *gocql.RequestErrOverloaded
	)
	return errors.Is(err, gocql.ErrNoConnections) || errors.As(err, &unavail) || errors.As(err, &invalid) ||
		errors.As(err, &syntax) || errors.As(err, &unauth) || errors.As(err, &config) || errors.As(err, &overload)
}

// flushes adds the range deletes of w's flushes: every row of a flushed table (all tables for FlushAll) except
// the keys w puts there, as the gaps between them.
func (b *backend) flushes(batch *gocql.Batch, w *remote.Writes) {
	if !w.FlushAll && len(w.Flush) == 0 {
		return
	}
	puts := map[string][][]byte{} // tbl column -> keys put there, sorted (w.Put is)
	var putTables []string
	for _, p := range w.Put {
		t := string(tblCol(p.Table))
		if _, ok := puts[t]; !ok {
			putTables = append(putTables, t)
		}
		puts[t] = append(puts[t], nonNil(p.Key))
	}
	sort.Strings(putTables)
	flushTable := func(t string) {
		b.gaps(batch, "tbl = ? AND ", []any{[]byte(t)}, "k", puts[t], nil)
	}
	if !w.FlushAll {
		for _, t := range w.Flush {
			flushTable(string(tblCol(t)))
		}
		return
	}
	keep := make([][]byte, len(putTables))
	for i, t := range putTables {
		keep[i] = []byte(t)
		flushTable(t)
	}
	// Every table but the ones holding puts, and never the meta row (tbl 0x00).
	b.gaps(batch, "", nil, "tbl", keep, metaTbl)
}

// gaps deletes the rows (restricted by pre and its args) whose col lies above from (nil: unbounded) but outside
// keep (sorted): below the first, between two, above the last.
func (b *backend) gaps(batch *gocql.Batch, pre string, args []any, col string, keep [][]byte, from []byte) {
	del := func(cond string, vals ...any) {
		batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND "+pre+cond, append(append([]any{b.p}, args...), vals...)...)
	}
	lo := from
	for _, k := range keep {
		switch {
		case lo == nil && len(k) > 0:
			del(col+" < ?", k)
		case lo != nil && bytes.Compare(lo, k) < 0:
			del(col+" > ? AND "+col+" < ?", lo, k)
		}
		lo = k
	}
	if lo != nil {
		del(col+" > ?", lo)
		return
	}
	batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND "+pre[:len(pre)-len(" AND ")], append([]any{b.p}, args...)...)
}
