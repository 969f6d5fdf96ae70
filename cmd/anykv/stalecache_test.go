package main

import (
	"bufio"
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
