package main

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	goredis "github.com/redis/go-redis/v9"
)

// owner runs the operations of register r at key k until stop.
func (e *staleEnv) owner(id int, k string, r *register, stop *atomic.Bool, fail func(string, ...any)) {
	db, other := r.db, 1
	if r.db != 0 {
		other = 0
	}
	t := e.t
	rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: db, ReadTimeout: 10 * time.Second})
	defer c.Close()
	c1 := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: other, ReadTimeout: 10 * time.Second})
	defer c1.Close()
	mc := memcache.New(e.s.Memcache)
	mc.Timeout = 10 * time.Second
	raw := dialMC(t, e.s.Memcache)
	tmp := k + ":tmp"
	cur, exists := int64(-1), false // the owner's own knowledge of the key
	url := "http://" + e.s.HTTP + "/v1/tables/" + table(db) + "/keys/" + k
	epoch := e.flushes[db].Load()
	for !stop.Load() {
		e.flushMu.RLock()
		if n := e.flushes[db].Load(); n != epoch {
			epoch, exists = n, false // a flush may have emptied the key
		}
		seq := r.next()
		v := decimal(seq)
		var err error
		st := regState{val: seq}
		op := rng.Intn(40)
		if exists && op >= 26 || !exists && op >= 26 && op < 33 {
			// deletes (only of a present key: the WATCH reader counts on every operation changing it)
			st = regState{val: -1, absent: true}
		}
		if !exists && op >= 33 {
			op = rng.Intn(26)
		}
		if st.absent {
			if !exists {
				op = 26 + rng.Intn(3) // expiring writes of an absent key
			}
		}
		if db != 0 && mcOps[op] {
			switch {
			case st.absent && !exists:
				op = 26
			case st.absent:
				op = 29
			default:
				op = 0
			}
		}
		name := ""
		issue := func(n string) { // the operation n is about to be sent: from now on readers may see it
			name, st.name = n, n
			r.issue(seq, st)
		}
		var waitExpiry time.Duration
		switch op {
		case 0:
			issue("SET")
			err = c.Set(ctx, k, v, 0).Err()
		case 1:
			issue("pipelined SET")
			p := c.Pipeline()
			p.Get(ctx, "noise:a")
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			p.Set(ctx, k, v, 0)
			p.Get(ctx, k)
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			_, err = p.Exec(ctx)
		case 2:
			issue("MSET")
			err = c.MSet(ctx, k, v, "noise:"+strconv.Itoa(rng.Intn(50)), v).Err()
		case 3:
			issue("EVAL declared")
			err = c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{k}, v).Err()
		case 4:
			issue("EVAL undeclared")
			err = c.Eval(ctx, "redis.call('SET', 'noise:'..ARGV[3], ARGV[2]); return redis.call('SET', ARGV[1], ARGV[2])", nil, k, v, strconv.Itoa(rng.Intn(50))).Err()
		case 5:
			issue("FCALL")
			err = c.FCall(ctx, "setany", nil, k, v).Err()
		case 6:
			issue("MULTI")
			_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
				p.Set(ctx, k, v, 0)
				return nil
			})
		case 7:
			issue("SETRANGE")
			err = c.SetRange(ctx, k, 0, v).Err()
		case 8:
			name = "INCRBY"
			if !exists {
				cur = 0
			}
			issue(name)
			err = c.IncrBy(ctx, k, seq-cur).Err()
		case 9:
			name = "RESTORE"
			if err = c.Set(ctx, tmp, v, 0).Err(); err != nil {
				break
			}
			var payload string
			if payload, err = c.Dump(ctx, tmp).Result(); err != nil {
				break
			}
			issue(name)
			err = c.RestoreReplace(ctx, k, 0, payload).Err()
		case 10:
			name = "RENAME"
			if err = c.Set(ctx, tmp, v, 0).Err(); err != nil {
				break
			}
			issue(name)
			err = c.Rename(ctx, tmp, k).Err()
		case 11:
			name = "COPY"
			if err = c.Set(ctx, tmp, v, 0).Err(); err != nil {
				break
			}
			issue(name)
			err = c.Copy(ctx, tmp, k, db, true).Err()
		case 12:
			issue("mc set")
			err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
		case 13:
			name = "mc cas"
			var it *memcache.Item
			if it, err = mc.Get(k); err != nil {
				if errors.Is(err, memcache.ErrCacheMiss) {
					issue(name)
					err = mc.Add(&memcache.Item{Key: k, Value: []byte(v)})
				}
				break
			}
			it.Value = []byte(v)
			issue(name)
			err = mc.CompareAndSwap(it)
		case 14:
			name = "mc incr"
			if !exists {
				issue(name)
				err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
				break
			}
			issue(name)
			_, err = mc.Increment(k, uint64(seq-cur))
		case 15:
			issue("ms")
			var l string
			if l, err = raw.cmd(fmt.Sprintf("ms %s %d\r\n%s\r\n", k, len(v), v)); err == nil && l != "HD" {
				err = fmt.Errorf("ms: %q", l)
			}
		case 16:
			issue("ma")
			if !exists {
				err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
				break
			}
			var l string
			if l, err = raw.cmd(fmt.Sprintf("ma %s D%d\r\n", k, seq-cur)); err == nil && l != "HD" {
				err = fmt.Errorf("ma: %q", l)
			}
		case 17:
			issue("HTTP PUT")
			err = httpDo(e.http, "PUT", url, v, 200, 201, 204)
		case 18:
			name = "HTTP incr"
			if !exists {
				cur = 0
			}
			issue(name)
			err = httpDo(e.http, "POST", url+"/incr?by="+strconv.FormatInt(seq-cur, 10), "", 200)
		case 19:
			issue("SET GET")
			err = c.SetArgs(ctx, k, v, goredis.SetArgs{Get: true}).Err()
			if errors.Is(err, goredis.Nil) {
				err = nil
			}
		case 20:
			issue("WATCH MULTI")
			err = c.Watch(ctx, func(tx *goredis.Tx) error {
				tx.Get(ctx, k)
				_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
					p.Set(ctx, k, v, 0)
					return nil
				})
				return err
			}, k)
		case 21:
			name = "MOVE"
			if exists { // MOVE needs the target absent
				issue(name)
				err = c.Set(ctx, k, v, 0).Err()
				break
			}
			if err = c1.Set(ctx, k, v, 0).Err(); err != nil {
				break
			}
			issue(name)
			var moved bool
			if moved, err = c1.Move(ctx, k, db).Result(); err == nil && !moved {
				err = fmt.Errorf("MOVE did not move")
			}
		case 22:
			issue("SET KEEPTTL")
			err = c.SetArgs(ctx, k, v, goredis.SetArgs{KeepTTL: true}).Err()
		case 23:
			issue("mc replace/add")
			if exists {
				err = mc.Replace(&memcache.Item{Key: k, Value: []byte(v)})
			} else {
				err = mc.Add(&memcache.Item{Key: k, Value: []byte(v)})
			}
		case 24:
			issue("EVAL pipelined")
			p := c.Pipeline()
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			p.Eval(ctx, "redis.call('SET', 'noise:x'..ARGV[2], '1'); return redis.call('SET', ARGV[1], ARGV[2])", nil, k, v)
			p.Get(ctx, k)
			_, err = p.Exec(ctx)
		case 25:
			name = "GETEX PERSIST"
			if !exists {
				issue(name)
				err = c.Set(ctx, k, v, time.Hour).Err()
				break
			}
			st.val = cur
			issue(name)
			err = c.GetEx(ctx, k, 0).Err()
			if err == nil {
				err = c.Persist(ctx, k).Err()
			}
		// Expiring writes: the key may be read as written or absent until the owner, having waited past the
		// expiry, records a pseudo operation that leaves it absent.
		case 26:
			st = regState{val: seq, absent: true}
			issue("SET PX")
			err = c.Set(ctx, k, v, 5*time.Millisecond).Err()
			waitExpiry = 20 * time.Millisecond
		case 27:
			// Expired at once, as judged at the time the server took for it: a read that took its time before
			// (one sent before this was acknowledged) judges it alive, as it may any item that expires later.
			st = regState{val: seq, absent: true}
			issue("mc set negative exptime")
			err = mc.Set(&memcache.Item{Key: k, Value: []byte(v), Expiration: -1})
			waitExpiry = time.Millisecond
		case 28:
			st = regState{val: seq, absent: true}
			issue("HTTP PUT ttl_ms")
			err = httpDo(e.http, "PUT", url+"?ttl_ms=5", v, 200, 201, 204)
			waitExpiry = 20 * time.Millisecond
		case 29:
			issue("DEL")
			err = c.Del(ctx, k).Err()
		case 30:
			issue("UNLINK")
			err = c.Unlink(ctx, k).Err()
		case 31:
			issue("GETDEL")
			err = c.GetDel(ctx, k).Err()
		case 32:
			issue("mc delete")
			err = mc.Delete(k)
		case 33:
			issue("md")
			var l string
			if l, err = raw.cmd("md " + k + "\r\n"); err == nil && l != "HD" {
				err = fmt.Errorf("md: %q", l)
			}
		case 34:
			issue("HTTP DELETE")
			err = httpDo(e.http, "DELETE", url, "", 204)
		case 35:
			issue("EVAL undeclared DEL")
			err = c.Eval(ctx, "redis.call('SET', 'noise:y', ARGV[2]); return redis.call('DEL', ARGV[1])", nil, k, v).Err()
		case 36:
			issue("PEXPIRE past")
			err = c.PExpireAt(ctx, k, time.Unix(1, 0)).Err()
		case 37:
			st = regState{val: cur, absent: true}
			issue("PEXPIRE 5ms")
			err = c.PExpire(ctx, k, 5*time.Millisecond).Err()
			waitExpiry = 20 * time.Millisecond
		case 38:
			issue("mc touch -1")
			err = mc.Touch(k, -1)
		case 39:
			issue("FCALL DEL")
			err = c.FCall(ctx, "delany", nil, k).Err()
		}
		if errors.Is(err, goredis.Nil) {
			err = nil
		}
		if err != nil {
			e.flushMu.RUnlock()
			if !stop.Load() {
				fail("owner %s seq %d (%s): %v", k, seq, name, err)
			}
			return
		}
		r.ack(seq)
		if st.absent && st.val < 0 {
			exists = false
		} else {
			exists, cur = true, st.val
		}
		if waitExpiry > 0 {
			time.Sleep(waitExpiry)
			seq := r.next()
			r.issue(seq, regState{val: -1, absent: true, pseudo: true, name: "expired"})
			r.ack(seq)
			exists = false
		}
		e.flushMu.RUnlock()
	}
}
