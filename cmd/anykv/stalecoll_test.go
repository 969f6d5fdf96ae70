package main

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Registers held in collections: the value of field f of a hash, the single element of a list, the score of
// member m of a sorted set. Their reads are the ones the read cache answers from its answers of key reads
// (HGET, HGETALL, LRANGE, LINDEX, ZSCORE, ZRANGE), and their writes include blocking pops and moves that wake
// up when another client pushes.

// collOp is one way the owner changes a collection register.
type collOp struct {
	name string
	when int // 0: any state, 1: the register holds a value, -1: it is absent
	// do performs the operation leaving value v (or the register absent, for a delete) and returns the state
	// the operation leaves; wait, if not nil, blocks until the state is final and returns what it is then.
	do func(c *goredis.Client, k, tmp string, v, cur int64) (st regState, wait func() (regState, error), err error)
}

type collKind struct {
	name  string
	ops   []collOp
	reads []func(c *goredis.Client, k string) (name string, vals []string, found []bool, err error)
}

func nilOK(err error) error {
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	return err
}

func value(v int64) regState { return regState{val: v} }

var absentState = regState{val: -1, absent: true}

func hashKind(helper *goredis.Client) collKind {
	vs := func(v int64) string { return strconv.FormatInt(v, 10) }
	return collKind{name: "hash", ops: []collOp{
		{"HSET", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.HSet(ctx, k, "f", vs(v), "g", "x").Err()
		}},
		{"HINCRBY", 1, func(c *goredis.Client, k, _ string, v, cur int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.HIncrBy(ctx, k, "f", v-cur).Err()
		}},
		{"HSETNX", -1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.HSetNX(ctx, k, "f", vs(v)).Err()
		}},
		{"EVAL undeclared HSET", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.Eval(ctx, "redis.call('SET', 'noise:h', ARGV[2]); return redis.call('HSET', ARGV[1], 'f', ARGV[2])", nil, k, vs(v)).Err()
		}},
		{"MULTI HSET", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, "noise:m", vs(v), 0)
				p.HSet(ctx, k, "f", vs(v))
				return nil
			})
			return value(v), nil, err
		}},
		{"RENAME", 0, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			if err := c.HSet(ctx, tmp, "f", vs(v)).Err(); err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.Rename(ctx, tmp, k).Err()
		}},
		{"COPY", 0, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			if err := c.HSet(ctx, tmp, "f", vs(v)).Err(); err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.Copy(ctx, tmp, k, collDB, true).Err()
		}},
		{"RESTORE", 0, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			c.Del(ctx, tmp)
			if err := c.HSet(ctx, tmp, "f", vs(v)).Err(); err != nil {
				return regState{}, nil, err
			}
			payload, err := c.Dump(ctx, tmp).Result()
			if err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.RestoreReplace(ctx, k, 0, payload).Err()
		}},
		{"HDEL", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.HDel(ctx, k, "f").Err()
		}},
		{"DEL", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.Del(ctx, k).Err()
		}},
		{"EVAL undeclared DEL", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.Eval(ctx, "redis.call('SET', 'noise:h', '1'); return redis.call('DEL', ARGV[1])", nil, k).Err()
		}},
		{"PEXPIRE", 1, func(c *goredis.Client, k, _ string, _, cur int64) (regState, func() (regState, error), error) {
			err := c.PExpire(ctx, k, 5*time.Millisecond).Err()
			return regState{val: cur, absent: true}, func() (regState, error) { time.Sleep(20 * time.Millisecond); return absentState, nil }, err
		}},
	}, reads: []func(c *goredis.Client, k string) (string, []string, []bool, error){
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			v, err := c.HGet(ctx, k, "f").Result()
			return "HGET", []string{v}, []bool{err == nil}, nilOK(err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			vs, err := c.HMGet(ctx, k, "f", "g").Result()
			if err != nil {
				return "HMGET", nil, nil, err
			}
			s, ok := vs[0].(string)
			return "HMGET", []string{s}, []bool{ok}, nil
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			m, err := c.HGetAll(ctx, k).Result()
			v, ok := m["f"]
			return "HGETALL", []string{v}, []bool{ok}, err
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			p := c.Pipeline()
			a := p.HGet(ctx, k, "f")
			p.Set(ctx, "noise:p", "1", 0)
			b := p.HGetAll(ctx, k)
			_, err := p.Exec(ctx)
			v, ok := b.Val()["f"]
			return "pipelined HGET/SET/HGETALL", []string{a.Val(), v}, []bool{a.Err() == nil, ok}, nilOK(err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			var a *goredis.StringCmd
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error { a = p.HGet(ctx, k, "f"); return nil })
			return "MULTI HGET", []string{a.Val()}, []bool{a.Err() == nil}, nilOK(err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			v, err := c.Eval(ctx, "return redis.call('HGET', KEYS[1], 'f')", []string{k}).Result()
			s, ok := v.(string)
			return "EVAL HGET", []string{s}, []bool{ok}, nilOK(err)
		},
	}}
}

func listKind(helper *goredis.Client) collKind {
	vs := func(v int64) string { return strconv.FormatInt(v, 10) }
	return collKind{name: "list", ops: []collOp{
		{"MULTI DEL RPUSH", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Del(ctx, k)
				p.RPush(ctx, k, vs(v))
				return nil
			})
			return value(v), nil, err
		}},
		{"LSET", 1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.LSet(ctx, k, 0, vs(v)).Err()
		}},
		{"RPUSH", -1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.RPush(ctx, k, vs(v)).Err()
		}},
		{"MULTI LPUSH RPOP", 1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.LPush(ctx, k, vs(v))
				p.RPop(ctx, k)
				return nil
			})
			return value(v), nil, err
		}},
		{"pipelined LPUSH RPOP", 1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			p := c.Pipeline()
			p.LPush(ctx, k, vs(v))
			p.RPop(ctx, k)
			_, err := p.Exec(ctx)
			return regState{val: v, absent: false}, nil, err
		}},
		{"EVAL undeclared", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.Eval(ctx, "redis.call('SET', 'noise:l', ARGV[2]); redis.call('DEL', ARGV[1]); return redis.call('RPUSH', ARGV[1], ARGV[2])", nil, k, vs(v)).Err()
		}},
		{"RPOPLPUSH", -1, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			c.Del(ctx, tmp)
			if err := c.RPush(ctx, tmp, vs(v)).Err(); err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.Do(ctx, "RPOPLPUSH", tmp, k).Err()
		}},
		{"RENAME", 0, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			c.Del(ctx, tmp)
			if err := c.RPush(ctx, tmp, vs(v)).Err(); err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.Rename(ctx, tmp, k).Err()
		}},
		{"BLMOVE woken", -1, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			c.Del(ctx, tmp)
			done := make(chan error, 1)
			go func() { done <- helper.BLMove(ctx, tmp, k, "RIGHT", "LEFT", 10*time.Second).Err() }()
			time.Sleep(2 * time.Millisecond) // usually blocked by now; if not, it finds the element
			err := c.RPush(ctx, tmp, vs(v)).Err()
			return regState{val: v, absent: true}, func() (regState, error) { return value(v), <-done }, err
		}},
		{"BLPOP woken", 1, func(c *goredis.Client, k, tmp string, v, cur int64) (regState, func() (regState, error), error) {
			// Empty the list, have a client wait on it, and push: the waiter pops it empty again.
			if err := c.Del(ctx, k).Err(); err != nil {
				return regState{}, nil, err
			}
			done := make(chan error, 1)
			go func() { done <- helper.BLPop(ctx, 10*time.Second, k).Err() }()
			time.Sleep(2 * time.Millisecond)
			err := c.RPush(ctx, k, vs(v)).Err()
			return regState{val: v, absent: true}, func() (regState, error) { return absentState, <-done }, err
		}},
		{"LPOP", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.LPop(ctx, k).Err()
		}},
		{"LTRIM empty", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.LTrim(ctx, k, 1, 0).Err()
		}},
		{"UNLINK", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.Unlink(ctx, k).Err()
		}},
		{"PEXPIRE", 1, func(c *goredis.Client, k, _ string, _, cur int64) (regState, func() (regState, error), error) {
			err := c.PExpire(ctx, k, 5*time.Millisecond).Err()
			return regState{val: cur, absent: true}, func() (regState, error) { time.Sleep(20 * time.Millisecond); return absentState, nil }, err
		}},
	}, reads: []func(c *goredis.Client, k string) (string, []string, []bool, error){
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			l, err := c.LRange(ctx, k, 0, -1).Result()
			return listRead("LRANGE", l, err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			l, err := c.LRange(ctx, k, 0, 0).Result()
			return listRead("LRANGE 0 0", l, err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			v, err := c.LIndex(ctx, k, 0).Result()
			return "LINDEX", []string{v}, []bool{err == nil}, nilOK(err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			p := c.Pipeline()
			a := p.LRange(ctx, k, 0, -1)
			p.Set(ctx, "noise:p", "1", 0)
			b := p.LIndex(ctx, k, 0)
			_, err := p.Exec(ctx)
			if err = nilOK(err); err != nil {
				return "", nil, nil, err
			}
			_, v, f, err := listRead("", a.Val(), nil)
			return "pipelined LRANGE/SET/LINDEX", append(v, b.Val()), append(f, b.Err() == nil), err
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			var a *goredis.StringSliceCmd
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error { a = p.LRange(ctx, k, 0, -1); return nil })
			if err != nil {
				return "", nil, nil, err
			}
			return listRead("MULTI LRANGE", a.Val(), nil)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			v, err := c.Eval(ctx, "return redis.call('LRANGE', KEYS[1], 0, -1)", []string{k}).StringSlice()
			return listRead("EVAL LRANGE", v, err)
		},
	}}
}

func listRead(name string, l []string, err error) (string, []string, []bool, error) {
	switch {
	case err != nil:
		return name, nil, nil, err
	case len(l) == 0:
		return name, []string{""}, []bool{false}, nil
	case len(l) > 1:
		return name, nil, nil, fmt.Errorf("the list holds %q", l)
	}
	return name, l, []bool{true}, nil
}

func zsetKind(helper *goredis.Client) collKind {
	return collKind{name: "zset", ops: []collOp{
		{"ZADD", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.ZAdd(ctx, k, goredis.Z{Score: float64(v), Member: "m"}, goredis.Z{Score: 1, Member: "other"}).Err()
		}},
		{"ZINCRBY", 1, func(c *goredis.Client, k, _ string, v, cur int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.ZIncrBy(ctx, k, float64(v-cur), "m").Err()
		}},
		{"EVAL undeclared ZADD", 0, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			return value(v), nil, c.Eval(ctx, "redis.call('SET', 'noise:z', ARGV[2]); return redis.call('ZADD', ARGV[1], ARGV[2], 'm')", nil, k, strconv.FormatInt(v, 10)).Err()
		}},
		{"ZUNIONSTORE", 0, func(c *goredis.Client, k, tmp string, v, _ int64) (regState, func() (regState, error), error) {
			c.Del(ctx, tmp)
			if err := c.ZAdd(ctx, tmp, goredis.Z{Score: float64(v), Member: "m"}).Err(); err != nil {
				return regState{}, nil, err
			}
			return value(v), nil, c.ZUnionStore(ctx, k, &goredis.ZStore{Keys: []string{tmp}}).Err()
		}},
		{"ZREM", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.ZRem(ctx, k, "m").Err()
		}},
		{"BZPOPMIN woken", -1, func(c *goredis.Client, k, _ string, v, _ int64) (regState, func() (regState, error), error) {
			// An empty set, a waiter on it, and a ZADD of m with a low score and of other with the value: the
			// waiter takes m... so the register (m's score) reads v only if m stayed. Use m's score as the value
			// and have the waiter pop the lowest, other.
			if err := c.Del(ctx, k).Err(); err != nil {
				return regState{}, nil, err
			}
			done := make(chan error, 1)
			go func() { done <- helper.BZPopMin(ctx, 10*time.Second, k).Err() }()
			time.Sleep(2 * time.Millisecond)
			err := c.ZAdd(ctx, k, goredis.Z{Score: -1, Member: "low"}, goredis.Z{Score: float64(v), Member: "m"}).Err()
			return value(v), func() (regState, error) { return value(v), <-done }, err
		}},
		{"DEL", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.Del(ctx, k).Err()
		}},
		{"FCALL DEL", 1, func(c *goredis.Client, k, _ string, _, _ int64) (regState, func() (regState, error), error) {
			return absentState, nil, c.FCall(ctx, "delany", nil, k).Err()
		}},
	}, reads: []func(c *goredis.Client, k string) (string, []string, []bool, error){
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			v, err := c.ZScore(ctx, k, "m").Result()
			return "ZSCORE", []string{strconv.FormatFloat(v, 'f', -1, 64)}, []bool{err == nil}, nilOK(err)
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			zs, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
			for _, z := range zs {
				if z.Member == "m" {
					return "ZRANGE", []string{strconv.FormatFloat(z.Score, 'f', -1, 64)}, []bool{true}, err
				}
			}
			return "ZRANGE", []string{""}, []bool{false}, err
		},
		func(c *goredis.Client, k string) (string, []string, []bool, error) {
			var a *goredis.FloatCmd
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error { a = p.ZScore(ctx, k, "m"); return nil })
			return "MULTI ZSCORE", []string{strconv.FormatFloat(a.Val(), 'f', -1, 64)}, []bool{a.Err() == nil}, nilOK(err)
		},
	}}
}

// collOwner runs the operations of register r, a collection of kind at key k, until stop.
func (e *staleEnv) collOwner(id int, kind collKind, k string, r *register, stop *atomic.Bool, fail func(string, ...any)) {
	rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: collDB, ReadTimeout: 15 * time.Second})
	defer c.Close()
	tmp := k + ":tmp"
	cur, exists := int64(-1), false
	epoch := e.flushes[r.db].Load()
	for !stop.Load() {
		op := kind.ops[rng.Intn(len(kind.ops))]
		e.flushMu.RLock()
		if n := e.flushes[r.db].Load(); n != epoch {
			epoch, exists = n, false // a flush may have emptied the key
		}
		if op.when == 1 && !exists || op.when == -1 && exists {
			e.flushMu.RUnlock()
			continue
		}
		seq := r.next()
		// Issued before the request goes, as what it may leave (a write leaves seq, a delete nothing; PEXPIRE
		// leaves the value as it is until it expires), and narrowed to what it does leave once acknowledged.
		pre := regState{val: seq, absent: true, name: op.name + " (in flight)"}
		if op.name == "PEXPIRE" {
			pre.val = cur
		}
		r.issue(seq, pre)
		st, wait, err := op.do(c, k, tmp, seq, cur)
		if err = nilOK(err); err != nil {
			e.flushMu.RUnlock()
			if !stop.Load() {
				fail("owner %s seq %d (%s): %v", k, seq, op.name, err)
			}
			return
		}
		st.name = op.name
		r.issue(seq, st)
		r.ack(seq)
		if wait != nil {
			final, err := wait()
			if err = nilOK(err); err != nil {
				e.flushMu.RUnlock()
				if !stop.Load() {
					fail("owner %s seq %d (%s, waiting): %v", k, seq, op.name, err)
				}
				return
			}
			seq := r.next()
			final.name, final.pseudo = op.name+" (done)", true
			r.issue(seq, final)
			r.ack(seq)
			st = final
		}
		if exists = !st.absent; exists {
			cur = st.val
		}
		e.flushMu.RUnlock()
	}
}

func (e *staleEnv) collReader(id int, kinds []collKind, keys [][]string, regs [][]*register, stop *atomic.Bool, reads *atomic.Int64, fail func(string, ...any)) {
	rng := rand.New(rand.NewSource(int64(id)*7919 + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: collDB, ReadTimeout: 10 * time.Second})
	defer c.Close()
	for !stop.Load() {
		ki := rng.Intn(len(kinds))
		i := rng.Intn(len(keys[ki]))
		k, r := keys[ki][i], regs[ki][i]
		read := kinds[ki].reads[rng.Intn(len(kinds[ki].reads))]
		lo, _ := r.bounds()
		name, vals, found, err := read(c, k)
		if err != nil {
			if !stop.Load() {
				fail("reader %s (%s): %v", k, name, err)
			}
			return
		}
		if !checkReads(r, k, name, lo, vals, found, false, 0, fail) {
			return
		}
		reads.Add(1)
	}
}

// collDB is the database of the collection registers: FLUSHALL empties it, the other flushes do not.
const collDB = 4

// collWorkload starts the owners and readers of registers held in collections; after they stopped, its result
// reports what they did.
func (e *staleEnv) collWorkload(wg *sync.WaitGroup, stop *atomic.Bool, fail func(string, ...any)) func() string {
	helper := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 16, DB: collDB, ReadTimeout: 15 * time.Second})
	e.t.Cleanup(func() { helper.Close() })
	kinds := []collKind{hashKind(helper), listKind(helper), zsetKind(helper)}
	const perKind, readers = 2, 6
	keys := make([][]string, len(kinds))
	regs := make([][]*register, len(kinds))
	for ki, kd := range kinds {
		for i := 0; i < perKind; i++ {
			keys[ki] = append(keys[ki], fmt.Sprintf("%s%d", kd.name, i))
			r := newRegister()
			r.db = collDB
			regs[ki] = append(regs[ki], r)
			e.regs = append(e.regs, r)
		}
	}
	var reads atomic.Int64
	for ki := range kinds {
		for i := range keys[ki] {
			wg.Add(1)
			go func() { defer wg.Done(); e.collOwner(ki*100+i, kinds[ki], keys[ki][i], regs[ki][i], stop, fail) }()
		}
	}
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); e.collReader(i, kinds, keys, regs, stop, &reads, fail) }()
	}
	return func() string {
		var ops int64
		for _, rs := range regs {
			for _, r := range rs {
				ops += r.acked
			}
		}
		return fmt.Sprintf("collections: %d operations, %d checked reads", ops, reads.Load())
	}
}
