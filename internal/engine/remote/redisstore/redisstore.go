// Package redisstore is the Redis engine: anykv's items in a Redis (or compatible) server people already run.
//
// Layout, under a key prefix (default "anykv:"): each item is a hash P+"k:"+len(table)+":"+table+key with fields
// v (value), f (flags, with the item's kind above them: remote.PackFlags), e (absolute expiry, unix ms), s (version). The table name is length-prefixed so no table
// or key can make two items collide. Each table has an index, the sorted set P+"i:"+len(table)+":"+table of its
// keys, all at score 0, so ZRANGEBYLEX lists them in byte order (engine.Scanner), and P+"tables" is the set of
// tables holding an item (engine.TableLister). Versions come from INCRBY on P+"version", so they keep growing
// across restarts and across front ends; the s field doubles as the key's stamp for remote's optimistic check.
// A Redis that lost the counter (no persistence, the last second of an AOF fsynced every second, a FLUSHALL, a
// failover to a replica behind) would hand out versions again, and an old CAS token would match a new item: so
// each reservation first raises the counter to Redis's time in microseconds times 1024 (versionLua), above
// every version handed out before unless more than 1,024 were taken per microsecond or Redis's clock stepped
// back, as memcachedstore does for its counter.
//
// Reads and commits are Lua scripts, which Redis runs atomically: the read script returns every item a batch
// touches and reserves its versions in one round trip, and the commit script compares every stamp read and
// applies nothing if one moved, else applies the flushes (a table's index says which hashes to delete, so a
// flush is atomic with the rest of the batch), deletes and puts. anykv judges expiry: Redis's own TTL is not set,
// and Sweep reclaims expired items.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the Redis engine: remote's optimistic Apply plus ordered scans, table listing and sweeping.
type Store struct {
	*remote.Engine
	b *backend

	warning     string // from checkEviction, logged at start
	mu          sync.Mutex
	sweepTable  string
	sweepAfter  string
	sweepActive bool
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
)

type backend struct {
	c  redis.UniversalClient // writes and linearizable reads
	ro redis.UniversalClient // serializable reads: c on one server, replicas in a cluster
	layout
	cl *clusterSide // nil on one server
}

// layout names the keys of one namespace. On one server they are as the package doc says; in a cluster
// (tagged) every key of a table, and of its collections' member table, starts with the hash tag
// {prefix+len:table}, so a table lives in one hash slot and a batch within it can be one script; the version
// counter and the tables set have a tag of their own.
type layout struct {
	prefix string
	tagged bool
}

func part(t string) string { return strconv.Itoa(len(t)) + ":" + t }

// tag is the hash tag of table t's keys in a cluster: a member table shares its table's.
func (l *layout) tag(t string) string {
	if u, ok := engine.UserTable(t); ok {
		t = u
	}
	return "{" + l.prefix + part(t) + "}"
}

// keyPrefix is what every item key of table t starts with.
func (l *layout) keyPrefix(t string) string {
	if l.tagged {
		return l.tag(t) + "k:" + part(t)
	}
	return l.prefix + "k:" + part(t)
}

func (l *layout) itemKey(s remote.Slot) string { return l.keyPrefix(s.Table) + string(s.Key) }

func (l *layout) indexKey(t string) string {
	if l.tagged {
		return l.tag(t) + "i:" + part(t)
	}
	return l.prefix + "i:" + part(t)
}

func (l *layout) global(name string) string {
	if l.tagged {
		return "{" + l.prefix + "}" + name
	}
	return l.prefix + name
}

// Open connects to the server at rawURL (redis://[user:pw@]host:port/db, with an optional prefix=P query
// parameter naming the key prefix) and returns the engine once the server answers PING.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	prefix := takePrefix(u)
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	if err := reachable(ctx, opt.Network, opt.Addr); err != nil {
		return nil, err
	}
	// go-redis resends a command after a dropped connection unless told not to: a commit script whose answer
	// was lost would run again, meet its own writes as a conflict, and be retried from the read, applied twice.
	opt.MaxRetries = -1
	// go-redis ignores a context's deadline on the socket unless told: without this, the engine's Timeout
	// (remote.Engine.Timeout) bounded nothing here, and a stalled server held a request for ReadTimeout (5 s).
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	warning, err := checkEviction(ctx, c, opt.Addr)
	if err != nil {
		c.Close()
		return nil, err
	}
	s := newStore(&backend{c: c, ro: c, layout: layout{prefix: prefix}})
	s.warning = warning
	s.Engine.GroupMuts = 128 // one script commits any keys of the database atomically
	return s, nil
}

// Warning is what the operator must know before serving from this server ("" if nothing): see checkEviction.
func (s *Store) Warning() string { return s.warning }

// takePrefix removes the prefix=P query parameter from u and returns P, by default "anykv:".
func takePrefix(u *url.URL) string {
	q := u.Query()
	if !q.Has("prefix") {
		return "anykv:"
	}
	prefix := q.Get("prefix")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	return prefix
}

// reachable dials addr once by hand: an unreachable server is then one error, not go-redis's retry log lines.
func reachable(ctx context.Context, network, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

func newStore(b *backend) *Store {
	s := &Store{Engine: remote.New(b), b: b}
	s.Engine.Ranger = s // collection ops read ranges of members with the store's own scan
	return s
}

// versionLua defines reserve(key, n), which takes n versions from the counter at key after raising it to the
// time in microseconds times 1024 (see the package comment), and returns the last as a string. The microseconds
// are below 2^53 and the factor a power of two, so the double holds the product exactly and %.0f prints it whole;
// a counter read back above 2^53 rounds, monotonically, so the comparison can only raise the counter, never lower
// it. The counter itself goes back as the string GET reads: INCRBY's answer is a Lua number, a double, which
// rounded it to a multiple of 256, so once the counter ran ahead of the clock (after the clock stepped back) up
// to 256 reservations in a row got the same version, and a stale CAS token, WATCH or the commit's check passed.
const versionLua = `
local function reserve(key, n)
	local t = redis.call('TIME')
	local base = (tonumber(t[1]) * 1000000 + tonumber(t[2])) * 1024
	local cur = tonumber(redis.call('GET', key) or '0')
	if cur < base then redis.call('SET', key, string.format('%.0f', base)) end
	redis.call('INCRBY', key, n)
	return redis.call('GET', key)
end
`

var readScript = redis.NewScript(versionLua + `
local n = tonumber(ARGV[1])
local nk = #KEYS
if n > 0 then nk = nk - 1 end
local out = {}
for i = 1, nk do
	out[i] = redis.call('HMGET', KEYS[i], 'v', 'f', 'e', 's')
end
if n > 0 then out[nk + 1] = reserve(KEYS[nk + 1], n) end
return out`)

// Read implements remote.Backend with one atomic script (in a cluster, one per slot: see clusterSide.read).
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	keys := make([]string, 0, len(slots)+1)
	for _, s := range slots {
		keys = append(keys, b.itemKey(s))
	}
	if b.cl != nil { // the counter is in another slot: reserve apart, alongside the read
		return b.cl.read(ctx, keys, n)
	}
	if n > 0 {
		keys = append(keys, b.global("version"))
	}
	v, err := readScript.Run(ctx, b.c, keys, n).Slice()
	if err != nil {
		return nil, nil, false, nil, err
	}
	items, err := decodeAll(keys[:len(slots)], v)
	if err != nil {
		return nil, nil, false, nil, err
	}
	var versions []uint64
	if n > 0 {
		str, _ := v[len(slots)].(string)
		last, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return nil, nil, false, nil, fmt.Errorf("redis: version counter answered %v", v[len(slots)])
		}
		versions = reserved(last, n)
	}
	return items, versions, true, nil, nil
}

// decodeAll decodes the read script's answers for keys.
func decodeAll(keys []string, v []any) ([]remote.Stored, error) {
	items := make([]remote.Stored, len(keys))
	for i := range keys {
		fields, _ := v[i].([]any)
		var err error
		if items[i], err = decode(fields); err != nil {
			return nil, fmt.Errorf("redis: %s: %w", keys[i], err)
		}
	}
	return items, nil
}

// reserved lists the n versions an INCRBY n that answered last reserved.
func reserved(last int64, n int) []uint64 {
	versions := make([]uint64, 0, n)
	for i := n - 1; i >= 0; i-- {
		versions = append(versions, uint64(last)-uint64(i))
	}
	return versions
}

// decode turns the answer to HMGET v f e s into a stored item.
func decode(fields []any) (remote.Stored, error) {
	if len(fields) != 4 || fields[0] == nil {
		return remote.Stored{}, nil
	}
	str := func(x any) string { s, _ := x.(string); return s }
	flags, err1 := strconv.ParseUint(str(fields[1]), 10, 64)
	exp, err2 := strconv.ParseInt(str(fields[2]), 10, 64)
	ver, err3 := strconv.ParseUint(str(fields[3]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return remote.Stored{}, fmt.Errorf("not an anykv item: %w", err)
	}
	it := engine.Item{Value: []byte(str(fields[0])), Expires: exp, Version: ver}
	remote.UnpackFlags(flags, &it)
	return remote.Stored{Item: it, Found: true, Stamp: ver}, nil
}

// commitScript: KEYS are the checked items, then the deleted, then the put ones, then an anchor: on one server
// the tables set (maintained when ARGV[2] is '1'), in a cluster the table's index, so the script runs in its slot.
// ARGV: prefix, '1' to maintain the tables set, counts (checks, deletes, puts, flushed tables), flush all, the
// number of ranges, the checked stamps, per range read (index, key prefix, ZRANGEBYLEX bounds, key count, then
// each key and its stamp), (table, key prefix, index) per flushed table, (table, key, index) per delete, (table,
// key, index, value, flags, expiry, version) per put.
var commitScript = redis.NewScript(`
local p, list = ARGV[1], ARGV[2] == '1'
local nc, nd, np, nf = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tables = KEYS[#KEYS]
local a = 9
for i = 1, nc do
	local s = redis.call('HGET', KEYS[i], 's')
	if (s or '0') ~= ARGV[a] then return 0 end
	a = a + 1
end
for i = 1, tonumber(ARGV[8]) do
	local idx, kp, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 4])
	local ks = redis.call('ZRANGEBYLEX', idx, ARGV[a + 2], ARGV[a + 3])
	a = a + 5
	if #ks ~= n then return 0 end
	for j = 1, n do
		if ks[j] ~= ARGV[a] or (redis.call('HGET', kp .. ks[j], 's') or '0') ~= ARGV[a + 1] then return 0 end
		a = a + 2
	end
end
-- Every key the commit writes must hold anykv's kind of value (or nothing) before the first write: a foreign
-- value would fail a write halfway, and a script's earlier writes stay.
local function foreign(k, kind)
	local t = redis.call('TYPE', k)['ok']
	if t ~= 'none' and t ~= kind then return k .. ' holds a ' .. t end
end
local bad = list and foreign(tables, 'set')
local all = {}
if ARGV[7] == '1' then
	all = redis.call('SMEMBERS', tables)
	for i = 1, #all do bad = bad or foreign(p .. 'i:' .. #all[i] .. ':' .. all[i], 'zset') end
end
local b = a
for i = 1, nf do bad = bad or foreign(ARGV[b + 2], 'zset'); b = b + 3 end
for i = 1, nd do bad = bad or foreign(KEYS[nc + i], 'hash') or foreign(ARGV[b + 2], 'zset'); b = b + 3 end
for i = 1, np do bad = bad or foreign(KEYS[nc + nd + i], 'hash') or foreign(ARGV[b + 2], 'zset'); b = b + 7 end
if bad then return redis.error_reply('WRONGTYPE anykv: ' .. bad .. ', not anykv data; nothing was written') end
local function flush(t, kp, idx)
	local ks = redis.call('ZRANGE', idx, 0, -1)
	for i = 1, #ks do redis.call('DEL', kp .. ks[i]) end
	redis.call('DEL', idx)
	if list then redis.call('SREM', tables, t) end
end
for i = 1, #all do
	local part = #all[i] .. ':' .. all[i]
	flush(all[i], p .. 'k:' .. part, p .. 'i:' .. part)
end
for i = 1, nf do flush(ARGV[a], ARGV[a + 1], ARGV[a + 2]); a = a + 3 end
for i = 1, nd do
	local t, k, idx = ARGV[a], ARGV[a + 1], ARGV[a + 2]
	redis.call('DEL', KEYS[nc + i])
	redis.call('ZREM', idx, k)
	if list and redis.call('ZCARD', idx) == 0 then redis.call('SREM', tables, t) end
	a = a + 3
end
for i = 1, np do
	local t, k, idx = ARGV[a], ARGV[a + 1], ARGV[a + 2]
	redis.call('HSET', KEYS[nc + nd + i], 'v', ARGV[a + 3], 'f', ARGV[a + 4], 'e', ARGV[a + 5], 's', ARGV[a + 6])
	redis.call('ZADD', idx, 0, k)
	if list then redis.call('SADD', tables, t) end
	a = a + 7
end
return 1`)

// Commit implements remote.Backend with one atomic script.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	return b.CommitRanges(ctx, checks, nil, w, tok)
}

// CommitRanges implements remote.RangeCommitter: the commit script also lists each range's keys from the table's
// index and requires the keys and stamps the batch read. In a cluster a table's index and items share its slot,
// where the script runs: a batch that read a table in another slot than the one it commits in (a script that
// SELECTed another database to read it) is refused with ErrCrossSlot, as the script could not check that read.
func (b *backend) CommitRanges(ctx context.Context, checks []remote.Check, ranges []remote.RangeCheck, w *remote.Writes, _ any) error {
	if b.tagged {
		if err := b.oneSlot(checks, ranges, w); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(checks)+len(w.Delete)+len(w.Put)+1)
	list, flushAll := "1", "0"
	if b.tagged {
		list = "0"
	}
	if w.FlushAll {
		flushAll = "1"
	}
	args := []any{b.prefix, list, len(checks), len(w.Delete), len(w.Put), len(w.Flush), flushAll, len(ranges)}
	anchor := b.global("tables")
	for _, c := range checks {
		keys = append(keys, b.itemKey(c.Slot))
		args = append(args, strconv.FormatUint(c.Stamp, 10))
		anchor = b.indexOnTag(anchor, c.Table)
	}
	for _, r := range ranges {
		lo, hi := "-", "+"
		if len(r.Start) > 0 {
			lo = "[" + string(r.Start)
		}
		if r.End != nil {
			hi = "(" + string(r.End)
		}
		args = append(args, b.indexKey(r.Table), b.keyPrefix(r.Table), lo, hi, len(r.Keys))
		anchor = b.indexOnTag(anchor, r.Table)
		for i, k := range r.Keys {
			args = append(args, k, strconv.FormatUint(r.Versions[i], 10))
		}
	}
	for _, t := range w.Flush {
		args = append(args, t, b.keyPrefix(t), b.indexKey(t))
		anchor = b.indexOnTag(anchor, t)
	}
	for _, d := range w.Delete {
		keys = append(keys, b.itemKey(d))
		args = append(args, d.Table, d.Key, b.indexKey(d.Table))
		anchor = b.indexOnTag(anchor, d.Table)
	}
	for _, p := range w.Put {
		keys = append(keys, b.itemKey(p.Slot))
		v := p.Item.Value
		if v == nil {
			v = []byte{}
		}
		args = append(args, p.Table, p.Key, b.indexKey(p.Table), v, strconv.FormatUint(remote.PackFlags(p.Item), 10),
			p.Item.Expires, strconv.FormatUint(p.Item.Version, 10))
		anchor = b.indexOnTag(anchor, p.Table)
	}
	keys = append(keys, anchor)
	if b.cl != nil {
		return b.cl.commit(ctx, b, w, keys, args)
	}
	ok, err := commitScript.Run(ctx, b.c, keys, args...).Int()
	return commitOutcome(ok, err)
}

// oneSlot returns ErrCrossSlot, naming two tables, unless every table a commit checks, reads a range of or writes
// is in one slot (writes of two tables are refused earlier, engine.TableScoped).
func (b *backend) oneSlot(checks []remote.Check, ranges []remote.RangeCheck, w *remote.Writes) error {
	first := ""
	other := func(t string) bool {
		if first == "" {
			first = t
		}
		return b.tag(t) != b.tag(first)
	}
	tables := make([]string, 0, len(checks)+len(ranges)+len(w.Flush)+len(w.Delete)+len(w.Put))
	for _, c := range checks {
		tables = append(tables, c.Table)
	}
	for _, r := range ranges {
		tables = append(tables, r.Table)
	}
	tables = append(tables, w.Flush...)
	for _, d := range w.Delete {
		tables = append(tables, d.Table)
	}
	for _, p := range w.Put {
		tables = append(tables, p.Table)
	}
	for _, t := range tables {
		if other(t) {
			return fmt.Errorf("redis-cluster engine: %w: the batch read table %q and table %q, whose slots differ, "+
				"and one commit script checks one slot", engine.ErrCrossSlot, first, t)
		}
	}
	return nil
}

// indexOnTag is the commit's anchor key: in a cluster the index of table t (every key of a batch is in t's
// slot), else anchor unchanged.
func (b *backend) indexOnTag(anchor, t string) string {
	if b.tagged {
		return b.indexKey(t)
	}
	return anchor
}

// commitOutcome maps the commit script's answer to Commit's.
func commitOutcome(ok int, err error) error {
	switch {
	case err == nil && ok == 1:
		return nil
	case err == nil:
		return remote.ErrConflict
	case isServerError(err):
		return err // the server refused the script: nothing ran
	}
	return fmt.Errorf("redis: %w: %v", remote.ErrUnknownOutcome, err)
}

func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// Get implements remote.Backend.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	v, err := b.at(ctx).HMGet(ctx, b.itemKey(s), "v", "f", "e", "s").Result()
	if err != nil {
		return engine.Item{}, false, err
	}
	st, err := decode(v)
	return st.Item, st.Found, err
}

// Close implements remote.Backend.
func (b *backend) Close() error {
	if b.ro != b.c {
		b.ro.Close()
	}
	return b.c.Close()
}

// at is the client for the read level ctx asks: the replicas' for a serializable read in a cluster.
func (b *backend) at(ctx context.Context) redis.UniversalClient {
	if c, _ := engine.ConsistencyOf(ctx); c == engine.Serializable {
		return b.ro
	}
	return b.c
}

const scanPage = 256

// fetch reads the items at keys of table in one pipeline.
func (b *backend) fetch(ctx context.Context, table string, keys []string) ([]remote.Stored, error) {
	cmds := make([]*redis.SliceCmd, len(keys))
	_, err := b.at(ctx).Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, b.itemKey(remote.Slot{Table: table, Key: []byte(k)}), "v", "f", "e", "s")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]remote.Stored, len(keys))
	for i, c := range cmds {
		if out[i], err = decode(c.Val()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Scan implements engine.Scanner: pages of 256 keys from the table's index, each page's items read in one
// pipeline. It is not a snapshot: an item written or deleted during the scan may or may not be seen. Each of a
// page's two round trips (the index's ZRANGE, the items' pipeline) is bounded by the engine's Timeout
// (remote.Engine.RoundTrip), not the scan as a whole.
func (s *Store) Scan(ctx context.Context, table string, r engine.Range, now int64, fn func([]byte, engine.Item) bool) error {
	if err := s.Open(); err != nil {
		return err
	}
	lo, hi := "-", "+"
	if r.Start != nil {
		lo = "[" + string(r.Start)
	}
	if r.End != nil {
		hi = "(" + string(r.End)
	}
	for {
		keys, err := remote.Call(ctx, s.Engine, func(ctx context.Context) ([]string, error) {
			return s.b.at(ctx).ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.b.indexKey(table), Start: lo, Stop: hi, ByLex: true, Count: scanPage}).Result()
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		items, err := remote.Call(ctx, s.Engine, func(ctx context.Context) ([]remote.Stored, error) {
			return s.b.fetch(ctx, table, keys)
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			if items[i].Found && items[i].Item.Live(now) && !fn([]byte(k), items[i].Item) {
				return nil
			}
		}
		if len(keys) < scanPage {
			return nil
		}
		lo = "(" + keys[len(keys)-1]
	}
}

// Tables implements engine.TableLister: one SMEMBERS (on a cluster, then one pipeline), each round trip bounded
// by the engine's Timeout (remote.Engine.RoundTrip).
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	if s.b.cl != nil {
		return s.b.cl.tables(ctx, s.Engine, s.b)
	}
	names, err := remote.Call(ctx, s.Engine, func(ctx context.Context) ([]string, error) {
		return s.b.c.SMembers(ctx, s.b.global("tables")).Result()
	})
	sort.Strings(names)
	return names, err
}

// sweepScript deletes one item if its version (ARGV[3]) is still the one the sweeper saw expired.
// KEYS: the item, its table's index and, on one server, the tables set.
var sweepScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 's') ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if #KEYS > 2 and redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[1]) end
return 1`)

// Sweep implements engine.Sweeper: it walks the tables' indexes from where the last call stopped, examining
// up to budget items, and deletes those expired at now unless rewritten since they were read. Each round trip
// (the table list, a table's ZRANGE, its HMGET pipeline, each item's delete script) is bounded by the engine's
// Timeout (remote.Engine.RoundTrip), not the sweep as a whole.
func (s *Store) Sweep(ctx context.Context, now int64, budget int) (int, error) {
	if err := s.Open(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if budget <= 0 {
		return 0, nil
	}
	tables, err := s.Tables(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, t := range tables {
		if s.sweepActive && t < s.sweepTable {
			continue
		}
		lo := "-"
		if s.sweepActive && t == s.sweepTable {
			lo = "(" + s.sweepAfter
		}
		keys, err := remote.Call(ctx, s.Engine, func(ctx context.Context) ([]string, error) {
			return s.b.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.b.indexKey(t), Start: lo, Stop: "+", ByLex: true, Count: int64(budget)}).Result()
		})
		if err != nil {
			return removed, err
		}
		cmds := make([]*redis.SliceCmd, len(keys))
		err = s.RoundTrip(ctx, func(ctx context.Context) error {
			_, err := s.b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, k := range keys { // expiry and version only: values stay on the server
					cmds[i] = p.HMGet(ctx, s.b.itemKey(remote.Slot{Table: t, Key: []byte(k)}), "e", "s")
				}
				return nil
			})
			return err
		})
		if err != nil {
			return removed, err
		}
		for i, k := range keys {
			f := cmds[i].Val()
			es, _ := f[0].(string)
			ver, _ := f[1].(string)
			exp, err := strconv.ParseInt(es, 10, 64)
			if err != nil || ver == "" || exp == 0 || exp > now {
				continue
			}
			ik := s.b.itemKey(remote.Slot{Table: t, Key: []byte(k)})
			keys := []string{ik, s.b.indexKey(t)}
			if !s.b.tagged {
				keys = append(keys, s.b.global("tables"))
			}
			n, err := remote.Call(ctx, s.Engine, func(ctx context.Context) (int, error) {
				return sweepScript.Run(ctx, s.b.c, keys, t, k, ver).Int()
			})
			if err != nil {
				return removed, err
			}
			removed += n
		}
		budget -= len(keys)
		if budget <= 0 {
			s.sweepActive, s.sweepTable, s.sweepAfter = true, t, keys[len(keys)-1]
			return removed, nil
		}
	}
	s.sweepActive = false // a full pass ended: start over next time
	return removed, nil
}
