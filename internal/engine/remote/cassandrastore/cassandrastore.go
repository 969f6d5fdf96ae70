// Package cassandrastore is the Apache Cassandra engine: anykv's items in a Cassandra table, committed with
// lightweight transactions (Paxos, SERIAL consistency).
//
// Layout: table anykv_items(p text, tbl blob, k blob, v blob, flags bigint, expires bigint, version bigint) with
// primary key (p, tbl, k): partition key p (the URL's partition, default "anykv"), clustering columns tbl and k.
// A lightweight transaction is atomic only within one partition, so every item of one anykv namespace lives in
// one partition: every batch, whatever tables and keys it touches, commits with one conditional BATCH on it, and
// blob clustering (bytewise order) gives ordered scans and the sorted table list. The price is that a namespace
// does not scale past one partition's replica set, and all writes to it go through Paxos on that partition.
// With ?slots=N (N > 1) the namespace is spread over N partitions ("P\x00i"), each with a meta row of its own,
// and a batch must stay in one of them (remote's shards: keys hash to a slot, {hash tags} keep keys together,
// a collection's members go with it); writes of different slots run their Paxos rounds side by side. A
// namespace keeps the slot count it was created with (the "slots" row of partition P).
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
// Reads (Get, Scan, Tables) run at the context's level: linearizable at QUORUM (?read=serial: SERIAL),
// serializable at ONE; a batch's own reads at QUORUM, checked by its LWT (ReadLevels, level, docs/scale.md).
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
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the Cassandra engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
type Store struct {
	*remote.Engine
	b         *backend
	sweepFrom atomic.Uint32 // the slot the next Sweep starts at (modulo the slots)
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
	_ engine.ReadLeveler = (*Store)(nil)
)

type backend struct {
	s     *gocql.Session
	items string // keyspace.anykv_items
	p     string // the partition holding this namespace (with slots > 1, the prefix of its partitions)
	slots int    // partitions the namespace is spread over (1: p alone)
	// linear is the consistency of linearizable reads (QUORUM or SERIAL); one: every read at ONE.
	linear gocql.Consistency
	one    bool
}

// metaTbl is the tbl column of the meta row (k empty), whose version is the counter; items' tbl start with 0x01.
var metaTbl = []byte{0}

func tblCol(table string) []byte { return append([]byte{1}, table...) }

var keyspaceName = regexp.MustCompile(`^[A-Za-z0-9_]{1,48}$`)

// Settings is what a cassandra:// URL says beyond the driver's configuration.
type Settings struct {
	Keyspace  string
	Partition string // the partition holding the namespace (?partition=, default anykv)
	Slots     int    // partitions the namespace is spread over (?slots=, default 1; see the package comment)
	RF        int    // replication factor of a keyspace created at start (?rf=; default 1, 3 with several hosts)
	// Linearizable is the consistency of linearizable reads (?read=quorum, the default, or serial). ReadOne
	// (?read=one): the engine offers serializable reads only (at ONE), so front ends refuse linearizable ones.
	Linearizable gocql.Consistency
	ReadOne      bool
}

// Config turns cassandra://[user:pw@]host:port[,host:port...]/keyspace[?partition=P&slots=N&rf=N&read=quorum|serial|one&pin=true]
// into the driver's configuration and the Settings. With pin=true the driver talks to the listed hosts only
// (no others it discovers), so they coordinate every request. Errors wrap remote.ErrBadURL.
func Config(raw string) (*gocql.ClusterConfig, Settings, error) {
	var set Settings
	bad := func(format string, args ...any) (*gocql.ClusterConfig, Settings, error) {
		return nil, set, fmt.Errorf("%w: "+format, append([]any{remote.ErrBadURL}, args...)...)
	}
	// net/url takes one host: the host list is cut out of the authority and parsed here.
	rest, ok := strings.CutPrefix(raw, "cassandra://")
	if !ok {
		return bad("want cassandra://host:port[,host:port...]/keyspace")
	}
	authority, path, _ := strings.Cut(rest, "/")
	user, hostList := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		user, hostList = authority[:i+1], authority[i+1:]
	}
	u, err := url.Parse("cassandra://" + user + "hosts/" + path)
	if err != nil {
		return bad("%v", err)
	}
	set.Keyspace = strings.TrimPrefix(u.Path, "/")
	if hostList == "" || !keyspaceName.MatchString(set.Keyspace) {
		return bad("want cassandra://host:port[,host:port...]/keyspace (keyspace: 1-48 letters, digits, _)")
	}
	var hosts, names []string
	for _, h := range strings.Split(hostList, ",") {
		host, port := h, "9042"
		if strings.Contains(h, ":") {
			if host, port, err = net.SplitHostPort(h); err != nil {
				return bad("host %q: %v", h, err)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
			return bad("host %q", h)
		}
		hosts, names = append(hosts, net.JoinHostPort(host, port)), append(names, host)
	}
	set.Partition, set.Slots, set.RF, set.Linearizable = "anykv", 1, 1, gocql.Quorum
	if len(hosts) > 1 {
		set.RF = 3
	}
	pin := false
	for k, v := range u.Query() {
		switch {
		case k == "partition" && v[0] != "" && !strings.Contains(v[0], "\x00"):
			set.Partition = v[0] // no NUL: it separates a namespace's name from its slot's number
		case k == "slots":
			if set.Slots, err = strconv.Atoi(v[0]); err != nil || set.Slots < 1 || set.Slots > maxSlots {
				return bad("slots=%q: want a number of partitions from 1 to %d", v[0], maxSlots)
			}
		case k == "rf":
			if set.RF, err = strconv.Atoi(v[0]); err != nil || set.RF < 1 {
				return bad("rf=%q: want a replication factor of at least 1", v[0])
			}
		case k == "read" && v[0] == "quorum":
		case k == "read" && v[0] == "serial":
			set.Linearizable = gocql.Serial
		case k == "read" && v[0] == "one":
			set.ReadOne = true
		case k == "pin" && (v[0] == "true" || v[0] == "false"):
			pin = v[0] == "true"
		case k == "partition" || k == "read" || k == "pin":
			return bad("%s=%q: want partition=NAME, read=quorum|serial|one or pin=true|false", k, v[0])
		default:
			return bad("unknown parameter %q (known: partition, slots, rf, read, pin)", k)
		}
	}
	c := gocql.NewCluster(hosts...)
	if pin {
		c.HostFilter = onlyHosts(names)
	}
	c.Consistency = gocql.Quorum
	c.SerialConsistency = gocql.Serial
	c.Timeout, c.ConnectTimeout = 10*time.Second, 10*time.Second
	c.ReconnectInterval = time.Second // a node back from a restart serves again within a second, not gocql's 60
	c.RetryPolicy = nil               // a commit is never resent: its outcome may be unknown
	c.Logger = gocql.NewLogger(gocql.LogLevelNone)
	if u.User != nil {
		pw, _ := u.User.Password()
		c.Authenticator = gocql.PasswordAuthenticator{Username: u.User.Username(), Password: pw}
	}
	return c, set, nil
}

// onlyHosts is a host filter passing the hosts named (gocql's WhiteListHostFilter panics on a name it cannot
// resolve; a name here is resolved when the driver asks, and one that does not resolve passes nothing).
func onlyHosts(names []string) gocql.HostFilter {
	return gocql.HostFilterFunc(func(h *gocql.HostInfo) bool {
		for _, n := range names {
			ips, _ := net.LookupIP(n)
			for _, ip := range ips {
				if ip.Equal(h.ConnectAddress()) {
					return true
				}
			}
		}
		return false
	})
}

// Open connects to the cluster at raw (see Config), creates the keyspace (SimpleStrategy with the URL's
// replication factor; an existing keyspace is used as it is), the table and the namespace's meta row if
// missing, and returns the engine.
func Open(ctx context.Context, raw string) (*Store, error) {
	cfg, set, err := Config(raw)
	if err != nil {
		return nil, err
	}
	s, err := cfg.CreateSession()
	if err != nil {
		return nil, err
	}
	b := &backend{s: s, items: set.Keyspace + ".anykv_items", p: set.Partition, slots: set.Slots, linear: set.Linearizable, one: set.ReadOne}
	for _, q := range []string{
		fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}",
			set.Keyspace, set.RF),
		"CREATE TABLE IF NOT EXISTS " + b.items + ` (p text, tbl blob, k blob, v blob, flags bigint, expires bigint,
			version bigint, PRIMARY KEY (p, tbl, k)) WITH ID = '` + tableID(set.Keyspace) + `'`,
	} {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := awaitTable(ctx, s, func() error {
		if err := b.claimSlots(ctx); err != nil {
			return err
		}
		for i := range b.slots {
			if _, err := s.Query("INSERT INTO "+b.items+" (p, tbl, k, version) VALUES (?, ?, ?, 0) IF NOT EXISTS",
				b.partition(i), metaTbl, []byte{}).MapScanCASContext(ctx, map[string]any{}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		s.Close()
		return nil, err
	}
	st := &Store{Engine: remote.New(b), b: b}
	st.Engine.Shards = b.slots
	// Group commit: one Paxos round for the batches of a group instead of one each, which would conflict on the
	// namespace's counter. The group stays well under Cassandra's default BATCH limit of 50 KiB.
	st.Engine.GroupMuts, st.Engine.GroupBytes = 32, 16<<10
	st.Engine.Ranger = st // collection ops read ranges of members with the store's own scan
	return st, nil
}

// tableID is the id every front end creates keyspace's anykv_items with: a name-based UUID (SHA-1, version 5) of
// the keyspace. Front ends starting at once on a new keyspace each run CREATE TABLE IF NOT EXISTS, possibly on
// different coordinators; with one id they create the same table, not two that the schema merge must choose
// between (one front end was seen failing with "table anykv_items does not exist").
func tableID(keyspace string) string {
	h := sha1.Sum([]byte("anykv_items." + keyspace))
	h[6] = h[6]&0x0f | 0x50 // version 5
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// awaitTable runs f once the nodes agree on the schema, again while it fails because a node does not know the
// table yet (a front end that did not create it may reach such a node first), for up to 30 s.
func awaitTable(ctx context.Context, s *gocql.Session, f func() error) error {
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "does not exist") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// maxSlots bounds ?slots=: a scan or table listing outside a batch reads every slot's partition.
const maxSlots = 256

// slotsKey is the k of the row, in partition P, whose version is the namespace's slot count.
var slotsKey = []byte("slots")

// partition is the Cassandra partition of slot i: P itself for a namespace of one slot.
func (b *backend) partition(i int) string {
	if b.slots <= 1 {
		return b.p
	}
	return b.p + "\x00" + strconv.Itoa(i)
}

// claimSlots records the namespace's slot count when it is new and refuses a URL asking for another count
// than the one it was created with (the keys would be looked for in other partitions). A namespace made before
// slots existed has its counter at P and no slots row: it has one slot.
func (b *backend) claimSlots(ctx context.Context) error {
	if b.slots > 1 {
		var v int64
		err := b.s.Query("SELECT version FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?", b.p, metaTbl, []byte{}).
			Consistency(gocql.Serial).ScanContext(ctx, &v)
		switch {
		case err == nil:
			return fmt.Errorf("cassandra: %w: namespace %q was created with one slot; the URL asks for slots=%d",
				remote.ErrBadURL, b.p, b.slots)
		case !errors.Is(err, gocql.ErrNotFound):
			return err
		}
	}
	got := map[string]any{}
	applied, err := b.s.Query("INSERT INTO "+b.items+" (p, tbl, k, version) VALUES (?, ?, ?, ?) IF NOT EXISTS",
		b.p, metaTbl, slotsKey, int64(b.slots)).MapScanCASContext(ctx, got)
	if err != nil || applied {
		return err
	}
	if n, _ := got["version"].(int64); n != int64(b.slots) {
		return fmt.Errorf("cassandra: %w: namespace %q was created with slots=%d; the URL asks for slots=%d",
			remote.ErrBadURL, b.p, n, b.slots)
	}
	return nil
}

// shard returns the slot a batch's read or commit works in: the one Apply confined ctx to, else the one of the
// slots given (which must share it), else 0. Every slot given must be in it.
func (b *backend) shard(ctx context.Context, slots []remote.Slot) (int, error) {
	i, ok := remote.ShardFrom(ctx)
	if !ok && len(slots) > 0 {
		i = remote.ShardOf(slots[0], b.slots)
	}
	return i, remote.InShard(slots, i, b.slots)
}

// ReadLevels implements engine.ReadLeveler: linearizable reads at QUORUM (or SERIAL with ?read=serial) and
// serializable ones at ONE; with ?read=one only serializable ones.
func (s *Store) ReadLevels() []engine.Consistency {
	if s.b.one {
		return []engine.Consistency{engine.Serializable}
	}
	return []engine.Consistency{engine.Linearizable, engine.Serializable}
}

// level is the Cassandra consistency of a plain read (Get, Scan, Tables) at ctx's level: ONE for serializable,
// else QUORUM or SERIAL (?read=). Every write is a Paxos round committed at QUORUM, so a QUORUM read overlaps
// every acknowledged commit's replicas, and blocking read repair leaves what it returned on a quorum (see
// docs/scale.md). With ?read=one, ReadLevels keeps clients' linearizable reads out; the batches' own range reads
// (collections), always linearizable, still run at QUORUM.
func (b *backend) level(ctx context.Context) gocql.Consistency {
	if c, _ := engine.ConsistencyOf(ctx); c == engine.Serializable {
		return gocql.One
	}
	return b.linear
}

// Read implements remote.Backend: one SELECT of the meta row and every slot in the namespace's partition.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	shard, err := b.shard(ctx, slots)
	if err != nil {
		return nil, nil, false, nil, err
	}
	p := b.partition(shard)
	var q bytes.Buffer
	q.WriteString("SELECT tbl, k, v, flags, expires, version FROM " + b.items + " WHERE p = ? AND (tbl, k) IN ((?, ?)")
	args := []any{p, metaTbl, []byte{}}
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
		return nil, nil, false, nil, fmt.Errorf("cassandra: the version counter of partition %q is missing", p)
	}
	versions := make([]uint64, n)
	for i := range versions {
		versions[i] = b.version(shard, uint64(ctr)+uint64(i)+1)
	}
	return items, versions, snapshot, &counter{shard: shard, value: uint64(ctr), n: n}, nil
}

// readPage is the number of rows a batch's read fetches per round trip.
const readPage = 5000

// counter is the version counter as Read saw it: Commit advances it only if it is unchanged.
type counter struct {
	shard int // the slot whose counter it is
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
		b.partition(remote.ShardOf(s, b.slots)), tblCol(s.Table), nonNil(s.Key)).Consistency(b.level(ctx)).ScanContext(ctx, &it.Value, &flags, &it.Expires, &it.Version)
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
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, token any) error {
	ctr, _ := token.(*counter)
	if ctr == nil {
		return errors.New("cassandra: commit without a read")
	}
	if err := b.inShard(ctr.shard, checks, w); err != nil {
		return err
	}
	p := b.partition(ctr.shard)
	if w.Empty() {
		var now int64
		err := b.s.Query("SELECT version FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?", p, metaTbl, []byte{}).
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
			engine.ErrBatchTooBig, size, maxBatch)
	}
	next := ctr.value + uint64(ctr.n)
	for _, put := range w.Put {
		next = max(next, put.Item.Version/uint64(b.slots))
	}
	if next == ctr.value {
		next++ // every commit moves the counter: it is the stamp of the whole namespace
	}
	batch := b.s.Batch(gocql.UnloggedBatch)
	batch.Query("UPDATE "+b.items+" SET version = ? WHERE p = ? AND tbl = ? AND k = ? IF version = ?",
		int64(next), p, metaTbl, []byte{}, int64(ctr.value))
	b.flushes(batch, p, w)
	for _, d := range w.Delete {
		batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND tbl = ? AND k = ?", p, tblCol(d.Table), nonNil(d.Key))
	}
	for _, put := range w.Put {
		batch.Query("INSERT INTO "+b.items+" (p, tbl, k, v, flags, expires, version) VALUES (?, ?, ?, ?, ?, ?, ?)",
			p, tblCol(put.Table), nonNil(put.Key), nonNil(put.Item.Value), int64(remote.PackFlags(put.Item)), put.Item.Expires, int64(put.Item.Version))
	}
	if n := batch.Size(); n > gocql.BatchSizeMaximum { // gocql would refuse it unsent (ErrTooManyStmts)
		return fmt.Errorf("cassandra: %w: a batch of %d statements, over the %d a BATCH may hold",
			engine.ErrBatchTooBig, n, gocql.BatchSizeMaximum)
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

// version is the item version that value c of slot shard's counter stands for: c itself with one slot, else c
// interleaved with the other slots' (c*slots+shard), so no two slots hand out the same version. A key's
// versions grow with its slot's counter; versions of keys in different slots are not ordered by time.
func (b *backend) version(shard int, c uint64) uint64 { return c*uint64(b.slots) + uint64(shard) }

// inShard checks that every slot a commit checks or writes is in shard (a key a script read late may not be).
func (b *backend) inShard(shard int, checks []remote.Check, w *remote.Writes) error {
	if b.slots <= 1 {
		return nil
	}
	slots := append([]remote.Slot(nil), w.Delete...)
	for _, c := range checks {
		slots = append(slots, c.Slot)
	}
	for _, p := range w.Put {
		slots = append(slots, p.Slot)
	}
	return remote.InShard(slots, shard, b.slots)
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

// Unreachable implements remote.Unreachable: no connection to any node, too few replicas alive or a node
// overloaded (the request was refused), or a read that got no answer or lost its connection.
func (b *backend) Unreachable(err error) bool {
	var timeout *gocql.RequestErrReadTimeout
	return refusedUnavailable(err) || errors.As(err, &timeout) || errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse)
}

// refusedUnavailable reports whether err refused a request because the cluster cannot serve it now.
func refusedUnavailable(err error) bool {
	var (
		unavail  *gocql.RequestErrUnavailable
		overload *gocql.RequestErrOverloaded
	)
	return errors.Is(err, gocql.ErrNoConnections) || errors.As(err, &unavail) || errors.As(err, &overload)
}

// refused reports whether a commit error proves the BATCH was not applied: it was never sent, or the server
// refused it before running Paxos. Anything else (write timeout, unknown CAS result, a connection lost or a
// deadline passed while waiting for the answer) leaves the outcome unknown. So does an Unavailable at any other
// consistency than the Paxos round's (SERIAL, LOCAL_SERIAL, checked before the round): Paxos v1, Cassandra 5.0's
// default, checks the replicas again at the commit's (QUORUM) after a quorum accepted the proposal, which the
// partition's next round then completes.
func refused(err error) bool {
	if unavail := (*gocql.RequestErrUnavailable)(nil); errors.As(err, &unavail) {
		return unavail.Consistency == gocql.Serial || unavail.Consistency == gocql.LocalSerial
	}
	var (
		invalid *gocql.RequestErrInvalid
		syntax  *gocql.RequestErrSyntax
		unauth  *gocql.RequestErrUnauthorized
		config  *gocql.RequestErrConfig
	)
	return refusedUnavailable(err) || errors.As(err, &invalid) || errors.As(err, &syntax) || errors.As(err, &unauth) ||
		errors.As(err, &config)
}

// flushes adds the range deletes of w's flushes: every row of a flushed table (all tables for FlushAll) except
// the keys w puts there, as the gaps between them.
func (b *backend) flushes(batch *gocql.Batch, part string, w *remote.Writes) {
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
		b.gaps(batch, part, "tbl = ? AND ", []any{[]byte(t)}, "k", puts[t], nil)
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
	b.gaps(batch, part, "", nil, "tbl", keep, metaTbl)
}

// gaps deletes the rows (restricted by pre and its args) whose col lies above from (nil: unbounded) but outside
// keep (sorted): below the first, between two, above the last.
func (b *backend) gaps(batch *gocql.Batch, part, pre string, args []any, col string, keep [][]byte, from []byte) {
	del := func(cond string, vals ...any) {
		batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND "+pre+cond, append(append([]any{part}, args...), vals...)...)
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
	batch.Query("DELETE FROM "+b.items+" WHERE p = ? AND "+pre[:len(pre)-len(" AND ")], append([]any{part}, args...)...)
}
