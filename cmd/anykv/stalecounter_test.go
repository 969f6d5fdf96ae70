package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	goredis "github.com/redis/go-redis/v9"
)

// Counters incremented by one by many clients at once, through every path that increments (each resolved by the
// pebble writer against what it knows of the counter: its item cache): every increment must answer a value no
// other did (a repeat is a lost update), the last read must count them all, and a read must never answer less
// than an increment acknowledged before it began.

const counterLib = `#!lua name=counterlib
redis.register_function('incrany', function(keys, args) return redis.call('INCR', args[1]) end)`

type counter struct {
	acked atomic.Int64 // the largest value an acknowledged increment answered
	mu    sync.Mutex
	seen  map[int64]string // value -> the path that answered it
	n     atomic.Int64     // increments acknowledged
}

func (c *counter) answered(v int64, path string, fail func(string, ...any)) {
	c.mu.Lock()
	if other, dup := c.seen[v]; dup {
		c.mu.Unlock()
		fail("two increments answered %d: %s and %s", v, other, path)
		return
	}
	c.seen[v] = path
	c.mu.Unlock()
	c.n.Add(1)
	for {
		a := c.acked.Load()
		if v <= a || c.acked.CompareAndSwap(a, v) {
			return
		}
	}
}

func (e *staleEnv) incrementer(id int, keys []string, ctrs []*counter, stop *atomic.Bool, fail func(string, ...any)) {
	rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	mc := memcache.New(e.s.Memcache)
	mc.Timeout = 10 * time.Second
	raw := dialMC(e.t, e.s.Memcache)
	for !stop.Load() {
		e.flushMu.RLock() // a flush starts the counters over: not while an increment is in flight
		if !e.increment(c, mc, raw, rng, keys, ctrs, fail) {
			e.flushMu.RUnlock()
			return
		}
		e.flushMu.RUnlock()
	}
}

// increment increments one counter by one, through a path picked at random, and records what it answered; false
// after a failure.
func (e *staleEnv) increment(c *goredis.Client, mc *memcache.Client, raw *mcRaw, rng *rand.Rand, keys []string, ctrs []*counter, fail func(string, ...any)) bool {
	i := rng.Intn(len(keys))
	k, ctr := keys[i], ctrs[i]
	var v int64
	var err error
	var path string
	switch rng.Intn(12) {
	case 0:
		path = "INCR"
		v, err = c.Incr(ctx, k).Result()
	case 1:
		path = "pipelined INCR"
		p := c.Pipeline()
		p.Get(ctx, keys[rng.Intn(len(keys))])
		r := p.Incr(ctx, k)
		p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(100)), "x", 0)
		_, err = p.Exec(ctx)
		v = r.Val()
	case 2:
		path = "EVAL INCR"
		v, err = c.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{k}).Int64()
	case 3:
		path = "EVAL undeclared INCR"
		v, err = c.Eval(ctx, "redis.call('SET', 'noise:c', '1'); return redis.call('INCR', ARGV[1])", nil, k).Int64()
	case 4:
		path = "MULTI INCR"
		var r *goredis.IntCmd
		_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Incr(ctx, keys[rng.Intn(len(keys))]+":other")
			r = p.Incr(ctx, k)
			return nil
		})
		v = r.Val()
	case 5:
		path = "mc incr"
		var u uint64
		u, err = mc.Increment(k, 1)
		v = int64(u)
	case 6:
		path = "HTTP incr"
		var resp *http.Response
		resp, err = e.http.Post("http://"+e.s.HTTP+"/v1/tables/default/keys/"+k+"/incr", "", nil)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var out struct{ Value int64 }
			if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
				err = fmt.Errorf("HTTP incr: %d %s", resp.StatusCode, b)
			}
			v = out.Value
		}
	case 7:
		path = "ma"
		var l string
		if l, err = raw.cmd("ma " + k + " v\r\n"); err == nil {
			var n int
			if _, err = fmt.Sscanf(l, "VA %d", &n); err == nil {
				var val string
				val, err = raw.line()
				v, _ = strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			} else {
				err = fmt.Errorf("ma: %q", l)
			}
		}
	case 8:
		path = "FCALL"
		v, err = c.FCall(ctx, "incrany", nil, k).Int64()
	case 9:
		path = "INCRBYFLOAT"
		var f float64
		f, err = c.IncrByFloat(ctx, k, 1).Result()
		v = int64(f)
	case 10:
		path = "WATCH INCR"
		err = c.Watch(ctx, func(tx *goredis.Tx) error {
			var r *goredis.IntCmd
			_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { r = p.Incr(ctx, k); return nil })
			v = r.Val()
			return err
		}, k)
		if errors.Is(err, goredis.TxFailedErr) {
			return true // the key changed since WATCH: nothing written
		}
	case 11:
		path = "SET GET after read" // a CAS by hand: WATCH, read, write read+1
		err = c.Watch(ctx, func(tx *goredis.Tx) error {
			n, err := tx.Get(ctx, k).Int64()
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, k, strconv.FormatInt(n+1, 10), 0)
				return nil
			})
			v = n + 1
			return err
		}, k)
		if errors.Is(err, goredis.TxFailedErr) {
			return true // someone else won: nothing written
		}
	}
	if err != nil {
		fail("%s %s: %v", path, k, err)
		return false
	}
	ctr.answered(v, path, fail)
	return true
}

func (e *staleEnv) counterReader(id int, keys []string, ctrs []*counter, stop *atomic.Bool, reads *atomic.Int64, fail func(string, ...any)) {
	rng := rand.New(rand.NewSource(int64(id)*31 + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	raw := dialMC(e.t, e.s.Memcache)
	last := make([]int64, len(keys))
	epoch := e.flushes[0].Load()
	for !stop.Load() {
		i := rng.Intn(len(keys))
		e.flushMu.RLock()
		k, ctr := keys[i], ctrs[i] // a flush replaces the counter
		if ep := e.flushes[0].Load(); ep != epoch {
			epoch = ep
			clear(last) // the counters started over
		}
		lo := ctr.acked.Load()
		var s, path string
		var err error
		switch rng.Intn(4) {
		case 0:
			path = "GET"
			s, err = c.Get(ctx, k).Result()
		case 1:
			path = "mg"
			s, _, err = raw.mg(k)
		case 2:
			path = "HTTP GET"
			var resp *http.Response
			if resp, err = e.http.Get("http://" + e.s.HTTP + "/v1/tables/default/keys/" + k); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				s = string(b)
			}
		case 3:
			path = "MULTI GET"
			var g *goredis.StringCmd
			_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error { g = p.Get(ctx, k); return nil })
			s = g.Val()
		}
		e.flushMu.RUnlock()
		if err != nil {
			if !stop.Load() {
				fail("reader %s (%s): %v", k, path, err)
			}
			return
		}
		v, perr := parseVal(s)
		if perr != nil {
			fail("reader %s (%s): %q", k, path, s)
			return
		}
		if v < lo || v < last[i] {
			fail("STALE READ %s (%s): %d, after an increment answered %d was acknowledged (this reader saw %d before)", k, path, v, lo, last[i])
			return
		}
		last[i] = v
		reads.Add(1)
	}
}

// counterWorkload starts the incrementers and readers of counters in database 0, which every flush of it starts
// over at 0; after they stopped, its result checks the counts and reports what they did.
func (e *staleEnv) counterWorkload(admin *goredis.Client, wg *sync.WaitGroup, stop *atomic.Bool, fail func(string, ...any)) func() string {
	const nkeys, writers, readers = 4, 8, 4
	keys := make([]string, nkeys)
	ctrs := make([]*counter, nkeys)
	start := func() error {
		for i := range keys {
			keys[i], ctrs[i] = fmt.Sprintf("ctr%d", i), &counter{seen: map[int64]string{}}
			if err := admin.Set(ctx, keys[i], "0", 0).Err(); err != nil { // memcached's incr needs the item
				return err
			}
		}
		return nil
	}
	if err := start(); err != nil {
		e.t.Fatal(err)
	}
	var total atomic.Int64
	e.afterFlush = append(e.afterFlush, func(dbs map[int]bool) error {
		if dbs != nil && !dbs[0] {
			return nil
		}
		for _, c := range ctrs {
			total.Add(c.n.Load())
		}
		return start()
	})
	var reads atomic.Int64
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); e.incrementer(i, keys, ctrs, stop, fail) }()
	}
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); e.counterReader(i, keys, ctrs, stop, &reads, fail) }()
	}
	return func() string {
		for i, k := range keys {
			n := ctrs[i].n.Load()
			total.Add(n)
			if got, err := admin.Get(ctx, k).Int64(); err != nil || got != n {
				fail("%s holds %d (%v) after %d acknowledged increments", k, got, err, n)
			}
		}
		return fmt.Sprintf("counters: %d increments, %d checked reads", total.Load(), reads.Load())
	}
}
