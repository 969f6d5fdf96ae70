package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// A register is one key whose only writer (its owner) runs one operation at a time, each with a sequence number;
// an operation leaves the key holding a number (the value) or absent. Readers on other connections check that
// what they read is the state of some operation not older than the last one acknowledged before the read began,
// and not newer than the last one issued when it ended: a stale read (an older value, a deleted key back, an
// expired key still there) fails.
type register struct {
	mu     sync.Mutex
	db     int   // the database the key is in
	last   int64 // the last sequence number handed out (next)
	issued int64
	acked  int64
	states map[int64]regState // by sequence number
}

type regState struct {
	val    int64 // the value left (-1: none)
	absent bool  // the key may be absent after it
	pseudo bool  // no request: the owner waited for an expiry
	name   string
	at     time.Time
}

// history describes the states from lo to hi.
func (r *register) history(lo, hi int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for s := max(lo-5, 0); s <= hi; s++ {
		st := r.states[s]
		fmt.Fprintf(&b, "\n  %d: %s val=%d absent=%v at %s", s, st.name, st.val, st.absent, st.at.Format("15:04:05.000000"))
	}
	return b.String()
}

func newRegister() *register {
	return &register{states: map[int64]regState{0: {val: -1, absent: true}}}
}

// next hands out the register's next sequence number: its owner's operations and the flusher's flushes share them.
func (r *register) next() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last++
	return r.last
}

// mayBeAbsent says the last acknowledged state allows the key to be absent.
func (r *register) mayBeAbsent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[r.acked].absent
}

func (r *register) issue(seq int64, st regState) {
	st.at = time.Now()
	r.mu.Lock()
	r.issued = seq
	r.states[seq] = st
	r.mu.Unlock()
}

func (r *register) ack(seq int64) {
	r.mu.Lock()
	r.acked = seq
	r.mu.Unlock()
}

func (r *register) bounds() (lo, hi int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acked, r.issued
}

// fits says whether observed (absent, or value n) is the state of an operation in [lo, hi]; it returns the
// latest such operation.
func (r *register) fits(lo, hi int64, absent bool, n int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := hi; s >= lo; s-- {
		st, ok := r.states[s]
		if !ok {
			continue
		}
		if absent && st.absent || !absent && st.val == n {
			return s, true
		}
	}
	return 0, false
}

// realAfter says an operation in (s, upto] sent a request (not an expiry the owner waited for).
func (r *register) realAfter(s, upto int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for q := s + 1; q <= upto; q++ {
		if st, ok := r.states[q]; ok && !st.pseudo {
			return true
		}
	}
	return false
}

// mcRaw is a memcached text/meta connection.
type mcRaw struct {
	c net.Conn
	r *bufio.Reader
}

func dialMC(t testing.TB, addr string) *mcRaw {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &mcRaw{c: c, r: bufio.NewReader(c)}
}

func (m *mcRaw) line() (string, error) {
	m.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := m.r.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

func (m *mcRaw) send(s string) error {
	_, err := io.WriteString(m.c, s)
	return err
}

// cmd sends one request and returns its first reply line.
func (m *mcRaw) cmd(s string) (string, error) {
	if err := m.send(s); err != nil {
		return "", err
	}
	return m.line()
}

// mg reads key with meta get: absent, or its value.
func (m *mcRaw) mg(key string) (string, bool, error) {
	l, err := m.cmd("mg " + key + " v\r\n")
	if err != nil {
		return "", false, err
	}
	if l == "EN" {
		return "", false, nil
	}
	var n int
	if _, err := fmt.Sscanf(l, "VA %d", &n); err != nil {
		return "", false, fmt.Errorf("mg: %q", l)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(m.r, buf); err != nil {
		return "", false, err
	}
	return string(buf[:n]), true, nil
}

// get reads key with the text get.
func (m *mcRaw) get(key string) (string, bool, error) {
	l, err := m.cmd("get " + key + "\r\n")
	if err != nil {
		return "", false, err
	}
	if l == "END" {
		return "", false, nil
	}
	var k string
	var fl, n int
	if _, err := fmt.Sscanf(l, "VALUE %s %d %d", &k, &fl, &n); err != nil {
		return "", false, fmt.Errorf("get: %q", l)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(m.r, buf); err != nil {
		return "", false, err
	}
	if end, err := m.line(); err != nil || end != "END" {
		return "", false, fmt.Errorf("get: %q %v", end, err)
	}
	return string(buf[:n]), true, nil
}

const staleLib = `#!lua name=stalelib
redis.register_function('setany', function(keys, args) return redis.call('SET', args[1], args[2]) end)
redis.register_function('delany', function(keys, args) return redis.call('DEL', args[1]) end)`

// staleEnv is what the stress needs: a server and its addresses.
type staleEnv struct {
	t    *testing.T
	s    *servertest.Server
	http *http.Client
	// flushMu is held for reading by each owner operation and for writing by a flush, which is an operation of
	// every register it empties; flushes counts them, so that an owner learns its key is gone.
	flushMu sync.RWMutex
	flushes [collDB + 1]atomic.Int64 // by database
	// regs are every register, for the flusher; afterFlush runs under flushMu after each flush, with the
	// databases it emptied (nil: all).
	regs       []*register
	afterFlush []func(dbs map[int]bool) error
}

func table(db int) string {
	if db == 0 {
		return "default"
	}
	return "db" + strconv.Itoa(db)
}

// mcOps are the owner's operations that go through memcached, which sees database 0 only.
var mcOps = map[int]bool{12: true, 13: true, 14: true, 15: true, 16: true, 23: true, 27: true, 32: true, 33: true, 38: true}

func decimal(n int64) string { return strconv.FormatInt(n, 10) }

func parseVal(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
}

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
		var waitExpiry time.Duration
		switch op {
		case 0:
			name = "SET"
			st.name = name
			r.issue(seq, st)
			err = c.Set(ctx, k, v, 0).Err()
		case 1:
			name = "pipelined SET"
			st.name = name
			r.issue(seq, st)
			p := c.Pipeline()
			p.Get(ctx, "noise:a")
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			p.Set(ctx, k, v, 0)
			p.Get(ctx, k)
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			_, err = p.Exec(ctx)
		case 2:
			name = "MSET"
			st.name = name
			r.issue(seq, st)
			err = c.MSet(ctx, k, v, "noise:"+strconv.Itoa(rng.Intn(50)), v).Err()
		case 3:
			name = "EVAL declared"
			st.name = name
			r.issue(seq, st)
			err = c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{k}, v).Err()
		case 4:
			name = "EVAL undeclared"
			st.name = name
			r.issue(seq, st)
			err = c.Eval(ctx, "redis.call('SET', 'noise:'..ARGV[3], ARGV[2]); return redis.call('SET', ARGV[1], ARGV[2])", nil, k, v, strconv.Itoa(rng.Intn(50))).Err()
		case 5:
			name = "FCALL"
			st.name = name
			r.issue(seq, st)
			err = c.FCall(ctx, "setany", nil, k, v).Err()
		case 6:
			name = "MULTI"
			st.name = name
			r.issue(seq, st)
			_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
				p.Set(ctx, k, v, 0)
				return nil
			})
		case 7:
			name = "SETRANGE"
			st.name = name
			r.issue(seq, st)
			err = c.SetRange(ctx, k, 0, v).Err()
		case 8:
			name = "INCRBY"
			if !exists {
				cur = 0
			}
			st.name = name
			r.issue(seq, st)
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
			st.name = name
			r.issue(seq, st)
			err = c.RestoreReplace(ctx, k, 0, payload).Err()
		case 10:
			name = "RENAME"
			if err = c.Set(ctx, tmp, v, 0).Err(); err != nil {
				break
			}
			st.name = name
			r.issue(seq, st)
			err = c.Rename(ctx, tmp, k).Err()
		case 11:
			name = "COPY"
			if err = c.Set(ctx, tmp, v, 0).Err(); err != nil {
				break
			}
			st.name = name
			r.issue(seq, st)
			err = c.Copy(ctx, tmp, k, db, true).Err()
		case 12:
			name = "mc set"
			st.name = name
			r.issue(seq, st)
			err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
		case 13:
			name = "mc cas"
			var it *memcache.Item
			if it, err = mc.Get(k); err != nil {
				if errors.Is(err, memcache.ErrCacheMiss) {
					st.name = name
					r.issue(seq, st)
					err = mc.Add(&memcache.Item{Key: k, Value: []byte(v)})
				}
				break
			}
			it.Value = []byte(v)
			st.name = name
			r.issue(seq, st)
			err = mc.CompareAndSwap(it)
		case 14:
			name = "mc incr"
			if !exists {
				st.name = name
				r.issue(seq, st)
				err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
				break
			}
			st.name = name
			r.issue(seq, st)
			_, err = mc.Increment(k, uint64(seq-cur))
		case 15:
			name = "ms"
			st.name = name
			r.issue(seq, st)
			var l string
			if l, err = raw.cmd(fmt.Sprintf("ms %s %d\r\n%s\r\n", k, len(v), v)); err == nil && l != "HD" {
				err = fmt.Errorf("ms: %q", l)
			}
		case 16:
			name = "ma"
			if !exists {
				st.name = name
				r.issue(seq, st)
				err = mc.Set(&memcache.Item{Key: k, Value: []byte(v)})
				break
			}
			st.name = name
			r.issue(seq, st)
			var l string
			if l, err = raw.cmd(fmt.Sprintf("ma %s D%d\r\n", k, seq-cur)); err == nil && l != "HD" {
				err = fmt.Errorf("ma: %q", l)
			}
		case 17:
			name = "HTTP PUT"
			st.name = name
			r.issue(seq, st)
			err = httpDo(e.http, "PUT", url, v, 200, 201, 204)
		case 18:
			name = "HTTP incr"
			if !exists {
				cur = 0
			}
			st.name = name
			r.issue(seq, st)
			err = httpDo(e.http, "POST", url+"/incr?by="+strconv.FormatInt(seq-cur, 10), "", 200)
		case 19:
			name = "SET GET"
			st.name = name
			r.issue(seq, st)
			err = c.SetArgs(ctx, k, v, goredis.SetArgs{Get: true}).Err()
			if errors.Is(err, goredis.Nil) {
				err = nil
			}
		case 20:
			name = "WATCH MULTI"
			st.name = name
			r.issue(seq, st)
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
				st.name = name
				r.issue(seq, st)
				err = c.Set(ctx, k, v, 0).Err()
				break
			}
			if err = c1.Set(ctx, k, v, 0).Err(); err != nil {
				break
			}
			st.name = name
			r.issue(seq, st)
			var moved bool
			if moved, err = c1.Move(ctx, k, db).Result(); err == nil && !moved {
				err = fmt.Errorf("MOVE did not move")
			}
		case 22:
			name = "SET KEEPTTL"
			st.name = name
			r.issue(seq, st)
			err = c.SetArgs(ctx, k, v, goredis.SetArgs{KeepTTL: true}).Err()
		case 23:
			name = "mc replace/add"
			st.name = name
			r.issue(seq, st)
			if exists {
				err = mc.Replace(&memcache.Item{Key: k, Value: []byte(v)})
			} else {
				err = mc.Add(&memcache.Item{Key: k, Value: []byte(v)})
			}
		case 24:
			name = "EVAL pipelined"
			st.name = name
			r.issue(seq, st)
			p := c.Pipeline()
			p.Set(ctx, "noise:"+strconv.Itoa(rng.Intn(50)), v, 0)
			p.Eval(ctx, "redis.call('SET', 'noise:x'..ARGV[2], '1'); return redis.call('SET', ARGV[1], ARGV[2])", nil, k, v)
			p.Get(ctx, k)
			_, err = p.Exec(ctx)
		case 25:
			name = "GETEX PERSIST"
			if !exists {
				st.name = name
				r.issue(seq, st)
				err = c.Set(ctx, k, v, time.Hour).Err()
				break
			}
			st.val = cur
			st.name = name
			r.issue(seq, st)
			err = c.GetEx(ctx, k, 0).Err()
			if err == nil {
				err = c.Persist(ctx, k).Err()
			}
		// Expiring writes: the key may be read as written or absent until the owner, having waited past the
		// expiry, records a pseudo operation that leaves it absent.
		case 26:
			name = "SET PX"
			st = regState{val: seq, absent: true}
			st.name = name
			r.issue(seq, st)
			err = c.Set(ctx, k, v, 5*time.Millisecond).Err()
			waitExpiry = 20 * time.Millisecond
		case 27:
			// Expired at once, as judged at the time the server took for it: a read that took its time before
			// (one sent before this was acknowledged) judges it alive, as it may any item that expires later.
			name = "mc set negative exptime"
			st = regState{val: seq, absent: true}
			st.name = name
			r.issue(seq, st)
			err = mc.Set(&memcache.Item{Key: k, Value: []byte(v), Expiration: -1})
			waitExpiry = time.Millisecond
		case 28:
			name = "HTTP PUT ttl_ms"
			st = regState{val: seq, absent: true}
			st.name = name
			r.issue(seq, st)
			err = httpDo(e.http, "PUT", url+"?ttl_ms=5", v, 200, 201, 204)
			waitExpiry = 20 * time.Millisecond
		case 29:
			name = "DEL"
			st.name = name
			r.issue(seq, st)
			err = c.Del(ctx, k).Err()
		case 30:
			name = "UNLINK"
			st.name = name
			r.issue(seq, st)
			err = c.Unlink(ctx, k).Err()
		case 31:
			name = "GETDEL"
			st.name = name
			r.issue(seq, st)
			err = c.GetDel(ctx, k).Err()
		case 32:
			name = "mc delete"
			st.name = name
			r.issue(seq, st)
			err = mc.Delete(k)
		case 33:
			name = "md"
			st.name = name
			r.issue(seq, st)
			var l string
			if l, err = raw.cmd("md " + k + "\r\n"); err == nil && l != "HD" {
				err = fmt.Errorf("md: %q", l)
			}
		case 34:
			name = "HTTP DELETE"
			st.name = name
			r.issue(seq, st)
			err = httpDo(e.http, "DELETE", url, "", 204)
		case 35:
			name = "EVAL undeclared DEL"
			st.name = name
			r.issue(seq, st)
			err = c.Eval(ctx, "redis.call('SET', 'noise:y', ARGV[2]); return redis.call('DEL', ARGV[1])", nil, k, v).Err()
		case 36:
			name = "PEXPIRE past"
			st.name = name
			r.issue(seq, st)
			err = c.PExpireAt(ctx, k, time.Unix(1, 0)).Err()
		case 37:
			name = "PEXPIRE 5ms"
			st = regState{val: cur, absent: true}
			st.name = name
			r.issue(seq, st)
			err = c.PExpire(ctx, k, 5*time.Millisecond).Err()
			waitExpiry = 20 * time.Millisecond
		case 38:
			name = "mc touch -1"
			st.name = name
			r.issue(seq, st)
			err = mc.Touch(k, -1)
		case 39:
			name = "FCALL DEL"
			st.name = name
			r.issue(seq, st)
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

func httpDo(hc *http.Client, method, url, body string, want ...int) error {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if resp.StatusCode == w {
			return nil
		}
	}
	return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
}

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

// flusher empties databases now and then, as an operation of every register it empties: FLUSHALL, FLUSHDB of
// database 0 or 2, memcached's flush_all (database 0).
func (e *staleEnv) flusher(stop *atomic.Bool, fail func(string, ...any)) {
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	c2 := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, DB: 2, ReadTimeout: 10 * time.Second})
	defer c2.Close()
	raw := dialMC(e.t, e.s.Memcache)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for !stop.Load() {
		time.Sleep(time.Duration(50+rng.Intn(200)) * time.Millisecond)
		var name string
		var dbs map[int]bool // nil: all
		var do func() error
		switch rng.Intn(4) {
		case 0:
			name, do = "FLUSHALL", func() error { return c.FlushAll(ctx).Err() }
		case 1:
			name, dbs, do = "FLUSHDB 0", map[int]bool{0: true}, func() error { return c.FlushDB(ctx).Err() }
		case 2:
			name, dbs, do = "FLUSHDB 2", map[int]bool{2: true}, func() error { return c2.FlushDB(ctx).Err() }
		case 3:
			name, dbs, do = "flush_all", map[int]bool{0: true}, func() error {
				l, err := raw.cmd("flush_all\r\n")
				if err == nil && l != "OK" {
					err = fmt.Errorf("flush_all: %q", l)
				}
				return err
			}
		}
		e.flushMu.Lock()
		seqs := map[*register]int64{}
		for _, r := range e.regs {
			if dbs == nil || dbs[r.db] {
				// A flush of a key already absent changes nothing WATCH would see: not an operation it counts.
				seqs[r] = r.next()
				r.issue(seqs[r], regState{val: -1, absent: true, name: name, pseudo: r.mayBeAbsent()})
			}
		}
		err := do()
		for r, s := range seqs {
			r.ack(s)
		}
		for db := range e.flushes {
			if dbs == nil || dbs[db] {
				e.flushes[db].Add(1)
			}
		}
		for _, fn := range e.afterFlush {
			if err == nil {
				err = fn(dbs)
			}
		}
		e.flushMu.Unlock()
		if err != nil {
			if !stop.Load() {
				fail("%s: %v", name, err)
			}
			return
		}
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

// stressConfig reads the stress's tuning from the environment: how long it runs, and the server's flags and
// environment.
func stressConfig() (secs int, args, env []string) {
	secs = 5
	if s := os.Getenv("ANYKV_STALE_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("ANYKV_STALE_ARGS"); s != "" {
		args = strings.Fields(s)
	}
	if s := os.Getenv("ANYKV_STALE_ENV"); s != "" {
		env = strings.Fields(s)
	}
	return secs, args, env
}

// stringWorkload starts the owners and readers of registers held in strings, in databases 0, 1 and 2; after
// they stopped, its result reports what they did.
func (e *staleEnv) stringWorkload(wg *sync.WaitGroup, stop *atomic.Bool, fail func(string, ...any)) func() string {
	const owners, readers = 8, 8
	keys := make([]string, owners)
	regs := make([]*register, owners)
	for i := range keys {
		keys[i], regs[i] = fmt.Sprintf("reg%d", i), newRegister()
		regs[i].db = max(i-5, 0) // most in database 0, one each in 1 and 2
	}
	e.regs = append(e.regs, regs...)
	var reads atomic.Int64
	for i := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); e.owner(i, keys[i], regs[i], stop, fail) }()
	}
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); e.reader(i, keys, regs, stop, &reads, fail) }()
	}
	return func() string {
		var ops int64
		for _, r := range regs {
			ops += r.acked
		}
		return fmt.Sprintf("strings: %d operations, %d checked reads", ops, reads.Load())
	}
}

// TestNoStaleReads drives a real server with many clients at once. Owners write registers (keys with one writer
// each) through every write path of every protocol (SET and its options, pipelines, MSET, MULTI, WATCH, scripts
// that write keys they do not declare, functions, RESTORE, RENAME, COPY, MOVE, SETRANGE, INCRBY, memcached set,
// cas, incr, replace, touch, ms, ma, md, HTTP PUT, incr and DELETE, deletes of every kind, expiries), in strings,
// hashes, lists and sorted sets (with blocking pops and moves woken by a push), in three databases, while a
// flusher runs FLUSHALL, FLUSHDB and flush_all, counters are incremented by many clients through every increment
// path, and readers read through every read path of every protocol (GET, pipelines mixing reads and writes,
// MGET, mg, get, HTTP, scripts, MULTI, WATCH, HGET, HGETALL, LRANGE, LINDEX, ZSCORE, ZRANGE): no read may answer
// older than what was acknowledged before it was sent, no EXEC may pass after its watched key changed, no two
// increments may answer the same count, and the counts must add up. The read cache, its answers of key reads
// and the pebble writer's item cache each answer from memory here; skipping one invalidation in any of them
// fails it (see the commit that added it). ANYKV_STALE_SECONDS (default 5), ANYKV_STALE_ARGS (server flags,
// e.g. "--read-cache 262144") and ANYKV_STALE_ENV (e.g. GOMAXPROCS=1) tune it.
func TestNoStaleReads(t *testing.T) {
	secs, args, env := stressConfig()
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true, Args: args, Env: env})
	e := &staleEnv{t: t, s: s, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	admin := client(t, s.RESP)
	for _, lib := range []string{staleLib, counterLib} {
		if err := admin.FunctionLoadReplace(ctx, lib).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var mu sync.Mutex
	var failures []string
	fail := func(f string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, a...))
		mu.Unlock()
		stop.Store(true)
	}
	var wg sync.WaitGroup
	reports := []func() string{
		e.stringWorkload(&wg, &stop, fail),
		e.collWorkload(&wg, &stop, fail),
		e.counterWorkload(admin, &wg, &stop, fail),
	}
	wg.Add(1)
	go func() { defer wg.Done(); e.flusher(&stop, fail) }()
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) && !stop.Load() {
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	for _, r := range reports {
		t.Log(r())
	}
	if len(failures) > 0 {
		t.Fatal(strings.Join(failures, "\n"))
	}
}
