// Package etcdstore is the etcd engine: anykv's items in an etcd cluster people already run.
//
// Layout, under a key prefix (default "anykv/"): each item is the etcd key P+"i/"+uvarint(len(table))+table+key,
// its value flags (4 bytes), absolute expiry (8), version (8) and the item's value. The length prefix keeps every
// table's keys one contiguous range, sorted bytewise like anykv's keys, so a table is flushed by one DeleteRange
// inside the commit's Txn (atomic with the rest of the batch), scanned in order (engine.Scanner) at one revision,
// and the tables are listed by skipping from one table's range to the next (engine.TableLister). Item versions
// come from the counter key P+"version", read with the batch and advanced in the commit's own Txn, so they keep
// growing across restarts and front ends. A key's stamp for remote's optimistic check is its mod_revision (0 when
// absent); the commit Txn compares them all and the counter's, so every two concurrent writing batches conflict
// and one retries: correct, but writes do not scale with front ends.
//
// etcd bounds a Txn's operations (--max-txn-ops, 128 by default): a batch reads more keys in several Txns at one
// revision, but one needing more compares or writes fails with etcd's "too many operations in txn request"
// (engine.ErrBatchTooBig) and applies nothing; a group of batches refused so is applied one batch at a time. anykv judges expiry; leases are not used,
// and Sweep reclaims expired items.
//
// Get and Scan read at the context's engine.Consistency: linearizable (etcd's default, a quorum round) or
// serializable (clientv3.WithSerializable: the member answers from its own state, possibly stale, also when cut
// off from the others). A batch's reads are always linearizable.
package etcdstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the etcd engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
type Store struct {
	*remote.Engine
	b *backend

	mu    sync.Mutex
	sweep string // etcd key where the next Sweep resumes ("": from the start)
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
	_ engine.ReadLeveler = (*Store)(nil)
)

type backend struct {
	c       *clientv3.Client
	items   string // prefix of every item key
	counter string
}

// Open connects to etcd at rawURL (etcd://[user:pw@]host:port[,host:port...][?prefix=P]) and returns the engine
// once the cluster answers.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	prefix := "anykv/"
	if u.Query().Has("prefix") {
		prefix = u.Query().Get("prefix")
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: no host:port", remote.ErrBadURL)
	}
	// Keepalive pings find a member that stopped answering (hung, or cut off) without closing its connections:
	// gRPC then marks the connection broken and the client moves to another endpoint. Without them a request
	// sent to a stopped member waited out the engine's timeout, and so did the next, for as long as it was
	// stopped (an audit: one SIGSTOPped member of three stalled every front end). 10 s is gRPC's least. Only
	// while a request is in flight, which is when a hung member matters: etcd refuses pings on an idle
	// connection (PermitWithoutStream false on its side), answers too_many_pings after three, and gRPC then
	// doubles the client's interval for good.
	cfg := clientv3.Config{DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 3 * time.Second}
	for _, h := range strings.Split(u.Host, ",") {
		cfg.Endpoints = append(cfg.Endpoints, "http://"+h)
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	b := &backend{c: c, items: prefix + "i/", counter: prefix + "version"}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Get(pctx, b.counter); err != nil {
		c.Close()
		return nil, err
	}
	s := &Store{Engine: remote.New(b), b: b}
	// Group commit: a Txn has room for 32 mutations' checks and puts within etcd's default --max-txn-ops.
	s.Engine.GroupMuts = 32
	s.Engine.Ranger = s // collection ops read ranges of members with the store's own scan
	return s, nil
}

func (b *backend) tablePrefix(t string) string {
	return b.items + string(binary.AppendUvarint(nil, uint64(len(t)))) + t
}

func (b *backend) key(s remote.Slot) string { return b.tablePrefix(s.Table) + string(s.Key) }

// split parses an etcd key back into its table and key.
func (b *backend) split(k []byte) (string, []byte, bool) {
	rest := k[len(b.items):]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return "", nil, false
	}
	return string(rest[w : w+int(n)]), rest[w+int(n):], true
}

// encode writes an item as remote's envelope (flags and kind, expiry, version, value).
func encode(it engine.Item) string { return string(remote.AppendItem(nil, it)) }

func decode(v []byte) (engine.Item, error) {
	it, err := remote.DecodeItem(v)
	if err != nil {
		return it, fmt.Errorf("etcd: %w", err)
	}
	return it, nil
}

// counterState is the version counter as read with a batch: Commit advances it only if it is unchanged.
type counterState struct {
	value uint64
	rev   int64
	n     int
}

// maxOps is etcd's default --max-txn-ops; reads are split into Txns of this size.
const maxOps = 128

// Read implements remote.Backend: Txns of Gets, one round trip (and one revision) for up to 127 keys.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	ops := make([]clientv3.Op, 0, len(slots)+1)
	for _, s := range slots {
		ops = append(ops, clientv3.OpGet(b.key(s)))
	}
	if n > 0 {
		ops = append(ops, clientv3.OpGet(b.counter))
	}
	// A Txn reads at most maxOps keys: more are read in parts, the later ones at the first part's revision, so
	// that the parts are still one snapshot and a batch that only reads (MGET of 200 keys) needs no commit.
	var resps []*clientv3.TxnResponse
	var rev int64
	for start := 0; start < len(ops); start += maxOps {
		part := ops[start:min(start+maxOps, len(ops))]
		if rev != 0 {
			pinned := make([]clientv3.Op, len(part))
			for i, op := range part {
				pinned[i] = clientv3.OpGet(string(op.KeyBytes()), clientv3.WithRev(rev))
			}
			part = pinned
		}
		r, err := b.c.Txn(ctx).Then(part...).Commit()
		if errors.Is(err, rpctypes.ErrCompacted) { // compacted between the parts: read again
			return nil, nil, false, nil, fmt.Errorf("etcd: %w: %v", remote.ErrConflict, err)
		}
		if readAgain(ctx, err) { // sent again; past the attempts, the client is told the datastore is unavailable
			return nil, nil, false, nil, fmt.Errorf("etcd: %w (%w): %v", engine.ErrUnavailable, remote.ErrConflict, err)
		}
		if tooBig(err) { // long keys: the Gets are more than gRPC sends in one message
			return nil, nil, false, nil, fmt.Errorf("etcd: %w: %v", engine.ErrBatchTooBig, err)
		}
		if err != nil {
			return nil, nil, false, nil, err
		}
		if rev == 0 {
			rev = r.Header.Revision
		}
		resps = append(resps, r)
	}
	items := make([]remote.Stored, len(slots))
	var ctr *counterState
	for i := range ops {
		rr := resps[i/maxOps].Responses[i%maxOps].GetResponseRange()
		var kv *struct {
			v   []byte
			rev int64
		}
		if len(rr.Kvs) > 0 {
			kv = &struct {
				v   []byte
				rev int64
			}{rr.Kvs[0].Value, rr.Kvs[0].ModRevision}
		}
		if i == len(slots) { // the counter
			ctr = &counterState{n: n}
			if kv != nil {
				if len(kv.v) != 8 {
					return nil, nil, false, nil, errors.New("etcd: version counter is not 8 bytes")
				}
				ctr.value, ctr.rev = binary.BigEndian.Uint64(kv.v), kv.rev
			}
			continue
		}
		if kv != nil {
			it, err := decode(kv.v)
			if err != nil {
				return nil, nil, false, nil, err
			}
			items[i] = remote.Stored{Item: it, Found: true, Stamp: uint64(kv.rev)}
		}
	}
	var versions []uint64
	if ctr != nil {
		for i := 1; i <= n; i++ {
			versions = append(versions, ctr.value+uint64(i))
		}
	}
	return items, versions, true, ctr, nil
}

// BatchHint implements engine.BatchHinter: a Txn holds at most maxOps compares and maxOps writes, one each per
// mutation of a string (and the version counter's), so pipelines are applied in batches of half that.
func (s *Store) BatchHint() int { return maxOps / 2 }

// Commit implements remote.Backend with one Txn.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, token any) error {
	cmps := make([]clientv3.Cmp, 0, len(checks)+1)
	for _, c := range checks {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(b.key(c.Slot)), "=", int64(c.Stamp)))
	}
	var ops []clientv3.Op
	if ctr, _ := token.(*counterState); ctr != nil && !w.Empty() {
		next := ctr.value + uint64(ctr.n)
		for _, p := range w.Put { // a collection op may have used versions beyond the n reserved
			next = max(next, p.Item.Version)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(b.counter), "=", ctr.rev))
		ops = append(ops, clientv3.OpPut(b.counter, string(binary.BigEndian.AppendUint64(nil, next))))
	}
	puts := make([]string, len(w.Put))
	for i, p := range w.Put {
		puts[i] = b.key(p.Slot)
		ops = append(ops, clientv3.OpPut(puts[i], encode(p.Item)))
	}
	sort.Strings(puts)
	// etcd refuses a Txn whose put falls inside one of its delete ranges, so a flush deletes the gaps between
	// the keys the batch puts afterwards.
	switch {
	case w.FlushAll:
		ops = append(ops, deleteGaps(b.items, clientv3.GetPrefixRangeEnd(b.items), puts)...)
	default:
		for _, t := range w.Flush {
			tp := b.tablePrefix(t)
			ops = append(ops, deleteGaps(tp, clientv3.GetPrefixRangeEnd(tp), puts)...)
		}
	}
	for _, d := range w.Delete {
		ops = append(ops, clientv3.OpDelete(b.key(d)))
	}
	r, err := b.c.Txn(ctx).If(cmps...).Then(ops...).Commit()
	switch {
	case err == nil && r.Succeeded:
		return nil
	case err == nil:
		return remote.ErrConflict
	case tooBig(err):
		return fmt.Errorf("etcd: %w: %v", engine.ErrBatchTooBig, err)
	case outcomeUnknown(err):
		return fmt.Errorf("etcd: %w: %v", remote.ErrUnknownOutcome, err)
	}
	return err
}

// tooBig reports whether etcd refused a Txn, before applying anything, for its number of operations
// (--max-txn-ops) or its size (--max-request-bytes, or gRPC's message limit; ResourceExhausted also means a full
// database or too many requests, which smaller parts would not help).
func tooBig(err error) bool {
	return errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) ||
		status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "larger than max") // not NOSPACE
}

// deleteGaps deletes [lo, hi) except the keys in keep (sorted).
func deleteGaps(lo, hi string, keep []string) []clientv3.Op {
	var ops []clientv3.Op
	for _, k := range keep {
		if k < lo || k >= hi {
			continue
		}
		if lo < k {
			ops = append(ops, clientv3.OpDelete(lo, clientv3.WithRange(k)))
		}
		lo = k + "\x00"
	}
	return append(ops, clientv3.OpDelete(lo, clientv3.WithRange(hi)))
}

// readAgain reports whether a read-only Txn that failed with err should be sent again (it changed nothing): the
// member it went to was unreachable (a keepalive ping found it stopped, its connection broke) or lost its
// leader, and the client will send the next request to another. Its context must still be live.
func readAgain(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) {
		return true
	}
	return status.Code(err) == codes.Unavailable
}

// outcomeUnknown reports whether a Txn error leaves open whether it was applied: the request may have reached
// the cluster (timeouts, lost connections), as opposed to a refusal the server answered.
func outcomeUnknown(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal:
		return true
	}
	return false
}

// readOpts are the options of a read at ctx's level: Serializable lets the member the client talks to answer
// from its own state, without the quorum round (ReadIndex through the leader) of a linearizable read.
func readOpts(ctx context.Context, opts ...clientv3.OpOption) []clientv3.OpOption {
	if c, _ := engine.ConsistencyOf(ctx); c == engine.Serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	return opts
}

// ReadLevels implements engine.ReadLeveler: Get and Scan serve linearizable (etcd's default) and serializable
// reads; Apply's reads are always linearizable.
func (s *Store) ReadLevels() []engine.Consistency {
	return []engine.Consistency{engine.Linearizable, engine.Serializable}
}

// Get implements remote.Backend at ctx's read level.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	r, err := b.c.Get(ctx, b.key(s), readOpts(ctx)...)
	if err != nil || len(r.Kvs) == 0 {
		return engine.Item{}, false, err
	}
	it, err := decode(r.Kvs[0].Value)
	return it, err == nil, err
}

// Close implements remote.Backend.
func (b *backend) Close() error { return b.c.Close() }

const scanPage = 256

// Scan implements engine.Scanner at ctx's read level: pages of 256 keys, all read at the revision of the first
// page, so the scan is one consistent snapshot (while etcd has not compacted that revision away). A serializable
// page that reaches a member behind that revision fails with etcd's "future revision" error. Each page's Get is
// bounded by the engine's Timeout (remote.Engine.RoundTrip), not the scan as a whole.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	tp := s.b.tablePrefix(table)
	from, end := tp+string(r.Start), clientv3.GetPrefixRangeEnd(tp)
	if r.End != nil {
		end = tp + string(r.End)
	}
	var rev int64
	for {
		opts := readOpts(ctx, clientv3.WithRange(end), clientv3.WithLimit(scanPage))
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.b.c.Get(ctx, from, opts...)
		})
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			it, err := decode(kv.Value)
			if err != nil {
				return err
			}
			if it.Live(now) && !fn(kv.Key[len(tp):], it) {
				return nil
			}
		}
		if !resp.More {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Tables implements engine.TableLister: one round trip per table, jumping over each table's range, each bounded
// by the engine's Timeout (remote.Engine.RoundTrip).
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	var names []string
	from, end := s.b.items, clientv3.GetPrefixRangeEnd(s.b.items)
	for {
		resp, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.b.c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		})
		if err != nil {
			return nil, err
		}
		if len(resp.Kvs) == 0 {
			sort.Strings(names)
			return names, nil
		}
		t, _, ok := s.b.split(resp.Kvs[0].Key)
		if !ok {
			return nil, fmt.Errorf("etcd: malformed item key %q", resp.Kvs[0].Key)
		}
		names = append(names, t)
		from = clientv3.GetPrefixRangeEnd(s.b.tablePrefix(t))
	}
}

// Sweep implements engine.Sweeper: it examines up to budget items from where the last call stopped and deletes
// each one expired at now with a Txn that requires its mod_revision unchanged (so a rewrite is kept). The Get and
// each Txn are bounded by the engine's Timeout (remote.Engine.RoundTrip), not the sweep as a whole.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if budget <= 0 {
		return 0, nil
	}
	from := s.sweep
	if from == "" {
		from = s.b.items
	}
	resp, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.b.c.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.b.items)), clientv3.WithLimit(int64(budget)))
	})
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, kv := range resp.Kvs {
		it, err := decode(kv.Value)
		if err != nil || it.Live(now) {
			continue
		}
		k := string(kv.Key)
		r, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return s.b.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
				Then(clientv3.OpDelete(k)).Commit()
		})
		if err != nil {
			return removed, err
		}
		if r.Succeeded {
			removed++
		}
	}
	s.sweep = ""
	if resp.More {
		s.sweep = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return removed, nil
}
