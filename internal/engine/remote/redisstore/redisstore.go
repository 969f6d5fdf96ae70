// Package redisstore is the Redis engine: anykv's items in a Redis (or compatible) server people already run.
//
// Layout, under a key prefix (default "anykv:"): each item is a hash P+"k:"+len(table)+":"+table+key with fields
// v (value), f (flags, with the item's kind above them: remote.PackFlags), e (absolute expiry, unix ms), s (version). The table name is length-prefixed so no table
// or key can make two items collide. Each table has an index, the sorted set P+"i:"+len(table)+":"+table of its
// keys, all at score 0, so ZRANGEBYLEX lists them in byte order (engine.Scanner), and P+"tables" is the set of
// tables holding an item (engine.TableLister). Versions come from INCRBY on P+"version", so they keep growing
// across restarts and across front ends; the s field doubles as the key's stamp for remote's optimistic check.
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
	c      *redis.Client
	prefix string
}

// Open connects to the server at rawURL (redis://[user:pw@]host:port/db, with an optional prefix=P query
// parameter naming the key prefix) and returns the engine once the server answers PING.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	q := u.Query()
	prefix := "anykv:"
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	// Dial once by hand first: an unreachable server is then one error, not go-redis's retry log lines.
	var d net.Dialer
	conn, err := d.DialContext(ctx, opt.Network, opt.Addr)
	if err != nil {
		return nil, err
	}
	conn.Close()
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	b := &backend{c: c, prefix: prefix}
	s := &Store{Engine: remote.New(b), b: b}
	s.Engine.Ranger = s // collection ops read ranges of members with the store's own scan
	return s, nil
}

func (b *backend) tablePart(t string) string { return strconv.Itoa(len(t)) + ":" + t }
func (b *backend) itemKey(s remote.Slot) string {
	return b.prefix + "k:" + b.tablePart(s.Table) + string(s.Key)
}
func (b *backend) indexKey(t string) string { return b.prefix + "i:" + b.tablePart(t) }

var readScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local nk = #KEYS
if n > 0 then nk = nk - 1 end
local out = {}
for i = 1, nk do
	out[i] = redis.call('HMGET', KEYS[i], 'v', 'f', 'e', 's')
end
if n > 0 then out[nk + 1] = redis.call('INCRBY', KEYS[nk + 1], n) end
return out`)

// Read implements remote.Backend with one atomic script.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	keys := make([]string, 0, len(slots)+1)
	for _, s := range slots {
		keys = append(keys, b.itemKey(s))
	}
	if n > 0 {
		keys = append(keys, b.prefix+"version")
	}
	v, err := readScript.Run(ctx, b.c, keys, n).Slice()
	if err != nil {
		return nil, nil, false, nil, err
	}
	items := make([]remote.Stored, len(slots))
	for i := range slots {
		fields, _ := v[i].([]any)
		if items[i], err = decode(fields); err != nil {
			return nil, nil, false, nil, fmt.Errorf("redis: %s: %w", keys[i], err)
		}
	}
	var versions []uint64
	if n > 0 {
		last, ok := v[len(slots)].(int64)
		if !ok {
			return nil, nil, false, nil, fmt.Errorf("redis: version counter answered %v", v[len(slots)])
		}
		for i := n - 1; i >= 0; i-- {
			versions = append(versions, uint64(last)-uint64(i))
		}
	}
	return items, versions, true, nil, nil
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

// commitScript: KEYS are the checked items, then the deleted, then the put ones. ARGV: prefix, counts (checks,
// deletes, puts, flushed tables, flush all), the checked stamps, the flushed tables, (table, key) per delete,
// (table, key, value, flags, expiry, version) per put.
var commitScript = redis.NewScript(`
local p = ARGV[1]
local nc, nd, np, nf = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local a = 7
for i = 1, nc do
	local s = redis.call('HGET', KEYS[i], 's')
	if (s or '0') ~= ARGV[a] then return 0 end
	a = a + 1
end
local tables = p .. 'tables'
local function part(t) return #t .. ':' .. t end
local function flush(t)
	local idx = p .. 'i:' .. part(t)
	local ks = redis.call('ZRANGE', idx, 0, -1)
	for i = 1, #ks do redis.call('DEL', p .. 'k:' .. part(t) .. ks[i]) end
	redis.call('DEL', idx)
	redis.call('SREM', tables, t)
end
if ARGV[6] == '1' then
	local ts = redis.call('SMEMBERS', tables)
	for i = 1, #ts do flush(ts[i]) end
end
for i = 1, nf do flush(ARGV[a]); a = a + 1 end
for i = 1, nd do
	local t, k = ARGV[a], ARGV[a + 1]
	local idx = p .. 'i:' .. part(t)
	redis.call('DEL', KEYS[nc + i])
	redis.call('ZREM', idx, k)
	if redis.call('ZCARD', idx) == 0 then redis.call('SREM', tables, t) end
	a = a + 2
end
for i = 1, np do
	local t, k = ARGV[a], ARGV[a + 1]
	redis.call('HSET', KEYS[nc + nd + i], 'v', ARGV[a + 2], 'f', ARGV[a + 3], 'e', ARGV[a + 4], 's', ARGV[a + 5])
	redis.call('ZADD', p .. 'i:' .. part(t), 0, k)
	redis.call('SADD', tables, t)
	a = a + 6
end
return 1`)

// Commit implements remote.Backend with one atomic script.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, _ any) error {
	keys := make([]string, 0, len(checks)+len(w.Delete)+len(w.Put))
	flushAll := "0"
	if w.FlushAll {
		flushAll = "1"
	}
	args := []any{b.prefix, len(checks), len(w.Delete), len(w.Put), len(w.Flush), flushAll}
	for _, c := range checks {
		keys = append(keys, b.itemKey(c.Slot))
		args = append(args, strconv.FormatUint(c.Stamp, 10))
	}
	for _, t := range w.Flush {
		args = append(args, t)
	}
	for _, d := range w.Delete {
		keys = append(keys, b.itemKey(d))
		args = append(args, d.Table, d.Key)
	}
	for _, p := range w.Put {
		keys = append(keys, b.itemKey(p.Slot))
		v := p.Item.Value
		if v == nil {
			v = []byte{}
		}
		args = append(args, p.Table, p.Key, v, strconv.FormatUint(remote.PackFlags(p.Item), 10), p.Item.Expires,
			strconv.FormatUint(p.Item.Version, 10))
	}
	ok, err := commitScript.Run(ctx, b.c, keys, args...).Int()
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
	v, err := b.c.HMGet(ctx, b.itemKey(s), "v", "f", "e", "s").Result()
	if err != nil {
		return engine.Item{}, false, err
	}
	st, err := decode(v)
	return st.Item, st.Found, err
}

// Close implements remote.Backend.
func (b *backend) Close() error { return b.c.Close() }

const scanPage = 256

// fetch reads the items at keys of table in one pipeline.
func (b *backend) fetch(ctx context.Context, table string, keys []string) ([]remote.Stored, error) {
	cmds := make([]*redis.SliceCmd, len(keys))
	_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
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
// pipeline. It is not a snapshot: an item written or deleted during the scan may or may not be seen.
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
		keys, err := s.b.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.b.indexKey(table), Start: lo, Stop: hi, ByLex: true, Count: scanPage}).Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		items, err := s.b.fetch(ctx, table, keys)
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

// Tables implements engine.TableLister.
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	names, err := s.b.c.SMembers(ctx, s.b.prefix+"tables").Result()
	sort.Strings(names)
	return names, err
}

// sweepScript deletes one item if its version (ARGV[3]) is still the one the sweeper saw expired.
var sweepScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 's') ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[1]) end
return 1`)

// Sweep implements engine.Sweeper: it walks the tables' indexes from where the last call stopped, examining
// up to budget items, and deletes those expired at now unless rewritten since they were read.
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
		keys, err := s.b.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.b.indexKey(t), Start: lo, Stop: "+", ByLex: true, Count: int64(budget)}).Result()
		if err != nil {
			return removed, err
		}
		cmds := make([]*redis.SliceCmd, len(keys))
		_, err = s.b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys { // expiry and version only: values stay on the server
				cmds[i] = p.HMGet(ctx, s.b.itemKey(remote.Slot{Table: t, Key: []byte(k)}), "e", "s")
			}
			return nil
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
			n, err := sweepScript.Run(ctx, s.b.c, []string{ik, s.b.indexKey(t), s.b.prefix + "tables"}, t, k, ver).Int()
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
