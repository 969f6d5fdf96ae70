package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// reader reads the registers through many paths and checks each read.
func (e *staleEnv) reader(id int, keys []string, regs []*register, stop *atomic.Bool, reads *atomic.Int64, fail func(string, ...any)) {
	rng := rand.New(rand.NewSource(int64(id)*7919 + time.Now().UnixNano()))
	clients := map[int]*goredis.Client{}
	for _, r := range regs {
		if clients[r.db] == nil {
			clients[r.db] = goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: r.db, ReadTimeout: 10 * time.Second})
			defer clients[r.db].Close()
		}
	}
	c3 := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: 3, ReadTimeout: 10 * time.Second})
	defer c3.Close()
	raw := dialMC(e.t, e.s.Memcache)
	for !stop.Load() {
		i := rng.Intn(len(keys))
		k, r := keys[i], regs[i]
		c := clients[r.db]
		lo, _ := r.bounds()
		var vals []string // "" absent, else the value; one per read of k
		var found []bool
		var err error
		name := ""
		watchOK := false
		var execLo int64
		op := rng.Intn(12)
		if r.db != 0 && (op == 3 || op == 4) {
			op = 0 // memcached sees database 0 only
		}
		switch op {
		case 0:
			name = "GET"
			var v string
			v, err = c.Get(ctx, k).Result()
			vals, found = []string{v}, []bool{err == nil}
		case 1:
			name = "pipelined GET/SET"
			p := c.Pipeline()
			g1 := p.Get(ctx, k)
			p.Set(ctx, "noise:r"+strconv.Itoa(id), "x", 0)
			g2 := p.Get(ctx, k)
			_, err = p.Exec(ctx)
			vals, found = []string{g1.Val(), g2.Val()}, []bool{g1.Err() == nil, g2.Err() == nil}
		case 2:
			name = "MGET"
			var vs []any
			vs, err = c.MGet(ctx, "noise:1", k).Result()
			if err == nil {
				s, ok := vs[1].(string)
				vals, found = []string{s}, []bool{ok}
			}
		case 3:
			name = "mg"
			var v string
			var ok bool
			v, ok, err = raw.mg(k)
			vals, found = []string{v}, []bool{ok}
		case 4:
			name = "mc get"
			var v string
			var ok bool
			v, ok, err = raw.get(k)
			vals, found = []string{v}, []bool{ok}
		case 5:
			name = "HTTP GET"
			var resp *http.Response
			resp, err = e.http.Get("http://" + e.s.HTTP + "/v1/tables/" + table(r.db) + "/keys/" + k)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					vals, found = []string{string(b)}, []bool{true}
				case 404:
					vals, found = []string{""}, []bool{false}
				default:
					err = fmt.Errorf("HTTP GET: %d %s", resp.StatusCode, b)
				}
			}
		case 6:
			name = "EVAL GET"
			var v any
			v, err = c.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{k}).Result()
			if errors.Is(err, goredis.Nil) {
				v, err = nil, nil
			}
			s, ok := v.(string)
			vals, found = []string{s}, []bool{ok}
		case 7:
			name = "MULTI GET"
			var g *goredis.StringCmd
			_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				g = p.Get(ctx, k)
				return nil
			})
			if errors.Is(err, goredis.Nil) {
				err = nil
			}
			vals, found = []string{g.Val()}, []bool{g.Err() == nil}
		case 8:
			name = "GETRANGE"
			var v string
			v, err = c.GetRange(ctx, k, 0, -1).Result()
			vals, found = []string{v}, []bool{v != ""}
		case 9:
			name = "WATCH"
			var v string
			var ok bool
			err = c.Watch(ctx, func(tx *goredis.Tx) error {
				g, err := tx.Get(ctx, k).Result()
				if err != nil && !errors.Is(err, goredis.Nil) {
					return err
				}
				v, ok = g, err == nil
				execLo, _ = r.bounds()
				_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
					p.Set(ctx, "noise:w"+strconv.Itoa(id), "x", 0)
					return nil
				})
				return err
			}, k)
			if errors.Is(err, goredis.TxFailedErr) {
				err = nil
			} else if err == nil {
				watchOK = true
			}
			vals, found = []string{v}, []bool{ok}
		case 10:
			name = "noise script"
			// A script that writes undeclared noise keys, and a FLUSHDB of another database: both drop cache
			// state wholesale.
			if rng.Intn(4) == 0 {
				if err = c3.Set(ctx, "z", "1", 0).Err(); err == nil {
					err = c3.FlushDB(ctx).Err()
				}
			} else if rng.Intn(2) == 0 { // reads of many keys: fills, and evicts from a small cache
				p := c.Pipeline()
				for j := 0; j < 32; j++ {
					p.Get(ctx, "noise:"+strconv.Itoa(rng.Intn(2000)))
				}
				p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(2000)), strconv.Itoa(rng.Int()), 0)
				_, err = p.Exec(ctx)
				if errors.Is(err, goredis.Nil) {
					err = nil
				}
			} else {
				err = c.Eval(ctx, "for i=1,5 do redis.call('SET', 'noise:'..i, ARGV[1]) end return 1", nil, strconv.Itoa(rng.Int())).Err()
			}
			if err != nil {
				if !stop.Load() {
					fail("reader (%s): %v", name, err)
				}
				return
			}
			continue
		case 11:
			name = "GET after SET noise"
			p := c.Pipeline()
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), "y", 0)
			g := p.Get(ctx, k)
			_, err = p.Exec(ctx)
			if errors.Is(err, goredis.Nil) {
				err = nil
			}
			vals, found = []string{g.Val()}, []bool{g.Err() == nil}
		}
		if err != nil && !errors.Is(err, goredis.Nil) {
			if !stop.Load() {
				fail("reader %s (%s): %v", k, name, err)
			}
			return
		}
		if !checkReads(r, k, name, lo, vals, found, watchOK, execLo, fail) {
			return
		}
		reads.Add(1)
	}
}

// checkReads checks what one request read of register r (vals[j], if found[j]), lo having been acknowledged
// before it was sent; with watchOK, an EXEC after WATCH succeeded although acked (execLo) had reached that many
// operations when it was sent. It reports false after a failure.
func checkReads(r *register, k, name string, lo int64, vals []string, found []bool, watchOK bool, execLo int64, fail func(string, ...any)) bool {
	_, hi := r.bounds()
	for j := range vals {
		n := int64(-1)
		if found[j] {
			var perr error
			if n, perr = parseVal(vals[j]); perr != nil {
				fail("reader %s (%s): value %q", k, name, vals[j])
				return false
			}
		}
		s, ok := r.fits(lo, hi, !found[j], n)
		if !ok {
			fail("STALE READ %s (%s, read %d of %d): found=%v value %d; acked before the read %d, issued by its end %d (now %s)%s",
				k, name, j, len(vals), found[j], n, lo, hi, time.Now().Format("15:04:05.000000"), r.history(lo, hi))
			return false
		}
		if watchOK && r.realAfter(s, execLo) {
			fail("EXEC passed although %s changed after WATCH: read state %d, acked %d before EXEC", k, s, execLo)
			return false
		}
	}
	return true
}
