package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// The aggregate stress: writers own disjoint keys of table default and change them through RESP, memcached and
// HTTP (with short expiries), a flusher empties the table now and then, and readers check every aggregate read
// (HTTP counts and pages, DBSIZE, KEYS, SCAN, RANDOMKEY, EXISTS of many keys, memcached multi-get) against what
// each key may have been between the read's start and end: a key acknowledged present (or absent) for the whole
// read must be counted and listed (or not).

// aggState is what one operation left at a key.
type aggState struct {
	present      bool
	val          string
	expLo, expHi int64 // unix ms: the expiry lies in [expLo, expHi]; 0: none
}

type aggEvent struct {
	issue, ack int64 // unix µs; ack 0: in flight
	st         aggState
	name       string
}

// aggKey is one key's history: its owner and the flusher write it one operation at a time.
type aggKey struct {
	name string
	mu   sync.Mutex
	evs  []aggEvent
}

func nowUS() int64 { return time.Now().UnixMicro() }

// begin records an operation about to be sent; done its acknowledgement with what it left.
func (k *aggKey) begin(name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.evs = append(k.evs, aggEvent{issue: nowUS(), name: name, st: k.evs[len(k.evs)-1].st})
	return len(k.evs) - 1
}

func (k *aggKey) done(i int, st aggState) {
	k.mu.Lock()
	k.evs[i].ack, k.evs[i].st = nowUS(), st
	k.mu.Unlock()
}

// last is the state the last acknowledged operation left.
func (k *aggKey) last() aggState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.evs[len(k.evs)-1].st
}

// expiry is the window of an expiry ttl ms after an operation sent at issue and acknowledged at ack (µs).
func expiry(issue, ack, ttl int64) (int64, int64) { return issue/1000 + ttl, ack/1000 + 1 + ttl }

const aggSlack = 3 // ms either way: the server judges expiry by its own millisecond clock

// anyValue stands for a value not known yet (an operation in flight).
const anyValue = "\x00any"

// may reports whether the key may have been present, and absent, at some moment of [s, e] (µs), and the values
// it may have held.
func (k *aggKey) may(s, e int64) (present, absent bool, vals []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	i0 := 0
	for i, ev := range k.evs {
		if ev.ack != 0 && ev.ack < s {
			i0 = i
		}
	}
	for j := i0; j < len(k.evs); j++ {
		ev := k.evs[j]
		if j > i0 && ev.issue > e {
			break
		}
		a, b := max(s, ev.issue), e
		if j+1 < len(k.evs) && k.evs[j+1].ack != 0 && k.evs[j+1].ack < e {
			b = k.evs[j+1].ack
		}
		st := ev.st
		if ev.ack == 0 { // in flight: what it leaves is known only from its reply
			present, absent, vals = true, true, append(vals, anyValue)
			continue
		}
		if st.present && (st.expLo == 0 || a/1000 < st.expHi+aggSlack) {
			present = true
			vals = append(vals, st.val)
		}
		if !st.present || st.expLo != 0 && b/1000+aggSlack >= st.expLo {
			absent = true
		}
	}
	return present, absent, vals
}

func (k *aggKey) history(s, e int64) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s, read [%d, %d]:", k.name, s, e)
	for _, ev := range k.evs {
		if ev.ack != 0 && ev.ack < s-300_000 {
			continue
		}
		fmt.Fprintf(&b, "\n    %s issue %d ack %d present=%v val=%s exp=[%d,%d]", ev.name, ev.issue, ev.ack,
			ev.st.present, ev.st.val, ev.st.expLo, ev.st.expHi)
	}
	return b.String()
}

type aggEnv struct {
	t        *testing.T
	s        *servertest.Server
	hc       *http.Client
	keys     []*aggKey
	byName   map[string]*aggKey
	flushMu  sync.RWMutex
	stop     atomic.Bool
	mu       sync.Mutex
	failures []string
	reads    [16]atomic.Int64
	ops      atomic.Int64
	// quiet holds the writers back for a while now and then, so that the query cache answers repeated reads
	// while the keys expire and the sweeper runs.
	quiet atomic.Bool
}

func (e *aggEnv) fail(f string, a ...any) {
	e.mu.Lock()
	if len(e.failures) < 5 {
		e.failures = append(e.failures, fmt.Sprintf(f, a...))
	}
	e.mu.Unlock()
	e.stop.Store(true)
}

// bounds returns, for keys, how many were present for the whole of [s, e] and how many may have been
// present at some moment of it.
func (e *aggEnv) bounds(keys []*aggKey, s, en int64) (lo, hi int) {
	for _, k := range keys {
		p, a, _ := k.may(s, en)
		if p {
			hi++
			if !a {
				lo++
			}
		}
	}
	return lo, hi
}

func (e *aggEnv) selected(match func(string) bool) []*aggKey {
	var out []*aggKey
	for _, k := range e.keys {
		if match(k.name) {
			out = append(out, k)
		}
	}
	return out
}

// checkList checks a listing of the keys in sel, read during [s, en]: no key twice, none that was absent for the
// whole read, none missing that was present for all of it. ordered: keys must come in byte order.
func (e *aggEnv) checkList(what string, sel []*aggKey, got []string, s, en int64, ordered bool) bool {
	seen := map[string]bool{}
	for i, g := range got {
		k := e.byName[g]
		if k == nil {
			e.fail("%s: unknown key %q", what, g)
			return false
		}
		if seen[g] {
			e.fail("%s: key %q twice: %q", what, g, got)
			return false
		}
		seen[g] = true
		if ordered && i > 0 && got[i-1] >= g {
			e.fail("%s: keys out of order: %q", what, got)
			return false
		}
		if p, _, _ := k.may(s, en); !p {
			e.fail("%s listed %s, absent for the whole read: %s", what, g, k.history(s, en))
			return false
		}
	}
	for _, k := range sel {
		if _, a, _ := k.may(s, en); !a && !seen[k.name] {
			e.fail("%s missed %s, present for the whole read: %s", what, k.name, k.history(s, en))
			return false
		}
	}
	return true
}

func (e *aggEnv) checkCount(what string, sel []*aggKey, n int64, s, en int64) {
	lo, hi := e.bounds(sel, s, en)
	if n < int64(lo) || n > int64(hi) {
		e.fail("%s = %d, want within [%d, %d] (keys present throughout, keys present at some moment)", what, n, lo, hi)
	}
}

func (e *aggEnv) httpGet(srv *servertest.Server, path string, out any) error {
	resp, err := e.hc.Get("http://" + srv.HTTP + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// writer runs operations on its own keys until stop.
func (e *aggEnv) writer(id int, own []*aggKey) {
	rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	raw := dialMC(e.t, e.s.Memcache)
	seq := 1000 * (id + 1) * 1000
	for !e.stop.Load() {
		time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond)
		for e.quiet.Load() && !e.stop.Load() {
			time.Sleep(time.Millisecond)
		}
		e.flushMu.RLock()
		seq++
		v := strconv.Itoa(seq)
		k := own[rng.Intn(len(own))]
		k2 := own[rng.Intn(len(own))]
		for k2 == k {
			k2 = own[rng.Intn(len(own))]
		}
		ttl := int64(20 + rng.Intn(200))
		var err error
		op := rng.Intn(15)
		switch op {
		case 0:
			i := k.begin("SET")
			err = c.Set(ctx, k.name, v, 0).Err()
			k.done(i, aggState{present: true, val: v})
		case 1:
			i := k.begin("SET PX")
			err = c.Set(ctx, k.name, v, time.Duration(ttl)*time.Millisecond).Err()
			lo, hi := expiry(k.evs[i].issue, nowUS(), ttl)
			k.done(i, aggState{present: true, val: v, expLo: lo, expHi: hi})
		case 2:
			i, j := k.begin("DEL"), k2.begin("DEL")
			err = c.Del(ctx, k.name, k2.name).Err()
			k.done(i, aggState{})
			k2.done(j, aggState{})
		case 3:
			i, j := k.begin("MSET"), k2.begin("MSET")
			err = c.MSet(ctx, k.name, v, k2.name, v).Err()
			k.done(i, aggState{present: true, val: v})
			k2.done(j, aggState{present: true, val: v})
		case 4:
			prev := k.last()
			i := k.begin("PEXPIRE")
			var ok bool
			ok, err = c.PExpire(ctx, k.name, time.Duration(ttl)*time.Millisecond).Result()
			if ok {
				lo, hi := expiry(k.evs[i].issue, nowUS(), ttl)
				k.done(i, aggState{present: true, val: prev.val, expLo: lo, expHi: hi})
			} else {
				k.done(i, aggState{})
			}
		case 5:
			prev := k.last()
			i, j := k.begin("RENAME from"), k2.begin("RENAME to")
			err = c.Rename(ctx, k.name, k2.name).Err()
			if err != nil && strings.Contains(err.Error(), "no such key") {
				err = nil
				k.done(i, aggState{})
				k2.done(j, k2.evs[j].st)
			} else {
				k.done(i, aggState{})
				k2.done(j, prev)
			}
		case 6:
			i, j := k.begin("MULTI SET"), k2.begin("MULTI DEL")
			_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, k.name, v, 0)
				p.Del(ctx, k2.name)
				return nil
			})
			k.done(i, aggState{present: true, val: v})
			k2.done(j, aggState{})
		case 7:
			i := k.begin("mc set")
			exp := rng.Intn(2)
			var l string
			l, err = raw.cmd(fmt.Sprintf("set %s 0 %d %d\r\n%s\r\n", k.name, exp, len(v), v))
			if err == nil && l != "STORED" {
				err = fmt.Errorf("set: %q", l)
			}
			st := aggState{present: true, val: v}
			if exp > 0 {
				st.expLo, st.expHi = expiry(k.evs[i].issue, nowUS(), 1000)
			}
			k.done(i, st)
		case 8:
			i := k.begin("mc delete")
			var l string
			l, err = raw.cmd("delete " + k.name + "\r\n")
			if err == nil && l != "DELETED" && l != "NOT_FOUND" {
				err = fmt.Errorf("delete: %q", l)
			}
			k.done(i, aggState{})
		case 9:
			prev := k.last()
			i := k.begin("mc touch")
			var l string
			l, err = raw.cmd("touch " + k.name + " 1\r\n")
			switch {
			case err != nil:
			case l == "TOUCHED":
				lo, hi := expiry(k.evs[i].issue, nowUS(), 1000)
				k.done(i, aggState{present: true, val: prev.val, expLo: lo, expHi: hi})
			case l == "NOT_FOUND":
				k.done(i, aggState{})
			default:
				err = fmt.Errorf("touch: %q", l)
			}
		case 10:
			i := k.begin("HTTP PUT")
			err = httpDo(e.hc, "PUT", "http://"+e.s.HTTP+"/v1/tables/default/keys/"+k.name+"?ttl_ms="+strconv.FormatInt(ttl, 10), v, 200, 201)
			lo, hi := expiry(k.evs[i].issue, nowUS(), ttl)
			k.done(i, aggState{present: true, val: v, expLo: lo, expHi: hi})
		case 11:
			i := k.begin("HTTP PUT")
			err = httpDo(e.hc, "PUT", "http://"+e.s.HTTP+"/v1/tables/default/keys/"+k.name, v, 200, 201)
			k.done(i, aggState{present: true, val: v})
		case 12:
			i := k.begin("HTTP DELETE")
			err = httpDo(e.hc, "DELETE", "http://"+e.s.HTTP+"/v1/tables/default/keys/"+k.name, "", 204, 404)
			k.done(i, aggState{})
		case 13:
			prev := k.last()
			i := k.begin("HTTP incr")
			var r struct{ Value int64 }
			var resp *http.Response
			resp, err = e.hc.Post("http://"+e.s.HTTP+"/v1/tables/default/keys/"+k.name+"/incr", "", nil)
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
			}
			st := aggState{present: true, val: strconv.FormatInt(r.Value, 10)}
			if r.Value != 1 { // an increment of a live value keeps its expiry
				st.expLo, st.expHi = prev.expLo, prev.expHi
			}
			k.done(i, st)
		case 14:
			i := k.begin("GETDEL")
			err = c.GetDel(ctx, k.name).Err()
			if err == goredis.Nil {
				err = nil
			}
			k.done(i, aggState{})
		}
		e.flushMu.RUnlock()
		if err != nil {
			if !e.stop.Load() {
				e.fail("writer %d op %d on %s: %v", id, op, k.name, err)
			}
			return
		}
		e.ops.Add(1)
	}
}

// flusher empties table default now and then (FLUSHDB, FLUSHALL, memcached flush_all), as an operation of every
// key.
func (e *aggEnv) flusher() {
	c := goredis.NewClient(&goredis.Options{Addr: e.s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	raw := dialMC(e.t, e.s.Memcache)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for !e.stop.Load() {
		time.Sleep(time.Duration(300+rng.Intn(400)) * time.Millisecond)
		e.flushMu.Lock()
		idx := make([]int, len(e.keys))
		for i, k := range e.keys {
			idx[i] = k.begin("flush")
		}
		var err error
		switch rng.Intn(3) {
		case 0:
			err = c.FlushDB(ctx).Err()
		case 1:
			err = c.FlushAll(ctx).Err()
		case 2:
			var l string
			if l, err = raw.cmd("flush_all\r\n"); err == nil && l != "OK" {
				err = fmt.Errorf("flush_all: %q", l)
			}
		}
		for i, k := range e.keys {
			k.done(idx[i], aggState{})
		}
		e.flushMu.Unlock()
		if err != nil {
			if !e.stop.Load() {
				e.fail("flush: %v", err)
			}
			return
		}
	}
}

// reader runs aggregate reads until stop and checks each.
func (e *aggEnv) reader(id int, srv *servertest.Server) {
	rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
	c := goredis.NewClient(&goredis.Options{Addr: srv.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	raw := dialMC(e.t, srv.Memcache)
	all := func(string) bool { return true }
	for !e.stop.Load() {
		kind := rng.Intn(11)
		var err error
		s := nowUS()
		switch kind {
		case 0: // HTTP count, whole table or a prefix or a range
			q, sel := "", all
			switch rng.Intn(3) {
			case 1:
				p := fmt.Sprintf("k%d.", rng.Intn(aggPerWriter))
				q, sel = "?prefix="+url.QueryEscape(p), func(k string) bool { return strings.HasPrefix(k, p) }
			case 2:
				a, b := e.keys[rng.Intn(len(e.keys))].name, e.keys[rng.Intn(len(e.keys))].name
				q, sel = "?start="+url.QueryEscape(a)+"&end="+url.QueryEscape(b), func(k string) bool { return k >= a && k < b }
			}
			var r struct{ Count int64 }
			if err = e.httpGet(srv, "/v1/tables/default/count"+q, &r); err == nil {
				e.checkCount("HTTP count"+q, e.selected(sel), r.Count, s, nowUS())
			}
		case 1: // Active Cloud DB count
			var r struct{ Count int64 }
			if err = e.httpGet(srv, "/count", &r); err == nil {
				e.checkCount("/count", e.keys, r.Count, s, nowUS())
			}
		case 2:
			var n int64
			if n, err = c.DBSize(ctx).Result(); err == nil {
				e.checkCount("DBSIZE", e.keys, n, s, nowUS())
			}
		case 3: // EXISTS of many keys
			var names []string
			var sel []*aggKey
			for range 1 + rng.Intn(12) {
				k := e.keys[rng.Intn(len(e.keys))]
				names, sel = append(names, k.name), append(sel, k)
			}
			var n int64
			if n, err = c.Exists(ctx, names...).Result(); err == nil {
				e.checkCount(fmt.Sprintf("EXISTS %q", names), sel, n, s, nowUS())
			}
		case 4: // KEYS
			pat, sel := "*", all
			if rng.Intn(2) == 0 {
				p := fmt.Sprintf("k%d.", rng.Intn(aggPerWriter))
				pat, sel = p+"*", func(k string) bool { return strings.HasPrefix(k, p) }
			}
			var got []string
			if got, err = c.Keys(ctx, pat).Result(); err == nil {
				e.checkList("KEYS "+pat, e.selected(sel), got, s, nowUS(), true)
			}
		case 5: // a whole SCAN
			count := int64(1 + rng.Intn(10))
			var got []string
			cur := uint64(0)
			for {
				var ks []string
				ps := nowUS()
				ks, cur, err = c.Scan(ctx, cur, "", count).Result()
				if err != nil {
					break
				}
				for _, k := range ks { // each key seen was there during its own call
					if p, _, _ := e.byName[k].may(ps, nowUS()); !p {
						e.fail("SCAN listed %s, absent for the whole call: %s", k, e.byName[k].history(ps, nowUS()))
					}
				}
				got = append(got, ks...)
				if cur == 0 {
					break
				}
			}
			if err == nil {
				en := nowUS()
				seen := map[string]bool{}
				for _, g := range got {
					if seen[g] {
						e.fail("SCAN COUNT %d returned %s twice: %q", count, g, got)
					}
					seen[g] = true
				}
				for _, k := range e.keys {
					if _, a, _ := k.may(s, en); !a && !seen[k.name] {
						e.fail("SCAN COUNT %d missed %s, present for the whole scan: %s", count, k.name, k.history(s, en))
					}
				}
			}
		case 6, 7: // HTTP pages through a cursor, with or without values, whole table or a prefix
			limit := 1 + rng.Intn(12)
			q, sel := "", all
			if rng.Intn(3) == 0 {
				p := fmt.Sprintf("k%d.", rng.Intn(aggPerWriter))
				q, sel = "&prefix="+url.QueryEscape(p), func(k string) bool { return strings.HasPrefix(k, p) }
			}
			values := kind == 7
			if values {
				q += "&values=true"
			}
			var got []string
			cursor, after := "", ""
			for {
				var page struct {
					Items []struct {
						Key, Value string
					}
					Cursor string
				}
				ps := nowUS()
				path := "/v1/tables/default/keys?limit=" + strconv.Itoa(limit) + q
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				if err = e.httpGet(srv, path, &page); err != nil {
					break
				}
				pe := nowUS()
				var ks []string
				for _, it := range page.Items {
					ks = append(ks, it.Key)
					if values {
						if _, _, vals := e.byName[it.Key].may(ps, pe); !slices.Contains(vals, it.Value) && !slices.Contains(vals, anyValue) {
							e.fail("HTTP page read %s = %q, not a value it held during the read (%q): %s", it.Key, it.Value, vals, e.byName[it.Key].history(ps, pe))
						}
					}
				}
				// The page covers the keys after the cursor up to its last key (to the end when it is the last).
				last := ""
				if page.Cursor != "" && len(ks) > 0 {
					last = ks[len(ks)-1]
				}
				cover := e.selected(func(k string) bool {
					return sel(k) && k > after && (page.Cursor == "" || k <= last)
				})
				if page.Cursor != "" && len(ks) == 0 {
					cover = nil // every item of the page vanished before its value was read
				}
				if !e.checkList("HTTP page limit="+strconv.Itoa(limit)+q+" after "+after, cover, ks, ps, pe, true) {
					break
				}
				got = append(got, ks...)
				if page.Cursor == "" {
					break
				}
				b, _ := decodeAggCursor(page.Cursor)
				after, cursor = b, page.Cursor
			}
			if err == nil {
				en := nowUS()
				for i := 1; i < len(got); i++ {
					if got[i-1] >= got[i] {
						e.fail("HTTP paging%s returned keys out of order or twice: %q", q, got)
						break
					}
				}
				seen := map[string]bool{}
				for _, g := range got {
					seen[g] = true
				}
				for _, k := range e.selected(sel) {
					if _, a, _ := k.may(s, en); !a && !seen[k.name] {
						e.fail("HTTP paging%s missed %s, present for the whole paging: %s", q, k.name, k.history(s, en))
					}
				}
			}
		case 8: // RANDOMKEY
			var k string
			k, err = c.RandomKey(ctx).Result()
			en := nowUS()
			switch {
			case err == goredis.Nil:
				err = nil
				if lo, _ := e.bounds(e.keys, s, en); lo > 0 {
					e.fail("RANDOMKEY answered nil while %d keys were present throughout", lo)
				}
			case err == nil:
				if p, _, _ := e.byName[k].may(s, en); !p {
					e.fail("RANDOMKEY answered %s, absent for the whole read: %s", k, e.byName[k].history(s, en))
				}
			}
		case 9, 10: // memcached multi-get
			var names []string
			for range 1 + rng.Intn(10) {
				names = append(names, e.keys[rng.Intn(len(e.keys))].name)
			}
			var got map[string]string
			got, err = aggMultiGet(raw, names)
			en := nowUS()
			for _, n := range names {
				p, a, vals := e.byName[n].may(s, en)
				v, ok := got[n]
				switch {
				case ok && !p:
					e.fail("get %s answered it, absent for the whole read: %s", n, e.byName[n].history(s, en))
				case ok && !slices.Contains(vals, v) && !slices.Contains(vals, anyValue):
					e.fail("get %s = %q, not a value it held during the read (%q): %s", n, v, vals, e.byName[n].history(s, en))
				case !ok && !a && err == nil:
					e.fail("get %s missed it, present for the whole read: %s", n, e.byName[n].history(s, en))
				}
			}
		}
		if err != nil {
			if !e.stop.Load() {
				e.fail("reader %d, read %d: %v", id, kind, err)
			}
			return
		}
		e.reads[kind].Add(1)
	}
}

func decodeAggCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return "", err
	}
	return string(b[1:]), nil
}

// aggMultiGet reads names with one memcached text get.
func aggMultiGet(m *mcRaw, names []string) (map[string]string, error) {
	if err := m.send("get " + strings.Join(names, " ") + "\r\n"); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for {
		l, err := m.line()
		if err != nil {
			return nil, err
		}
		if l == "END" {
			return out, nil
		}
		var k string
		var fl, n int
		if _, err := fmt.Sscanf(l, "VALUE %s %d %d", &k, &fl, &n); err != nil {
			return nil, fmt.Errorf("get: %q", l)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(m.r, buf); err != nil {
			return nil, err
		}
		out[k] = string(buf[:n])
	}
}

const (
	aggWriters   = 6
	aggPerWriter = 8
)

// TestNoStaleAggregateReads: six writers own eight keys each of table default (key names interleave them in key
// order) and change them one operation at a time through RESP (SET, SET PX, DEL and MSET of two keys, PEXPIRE,
// RENAME, MULTI, GETDEL), memcached (set with and without exptime, delete, touch) and HTTP (PUT with and without
// ttl_ms, DELETE, incr), with expiries of 20 ms to 1 s; a flusher empties the table now and then (FLUSHDB,
// FLUSHALL, flush_all); the writers pause now and then, so that the query cache answers while keys expire. Readers
// check HTTP counts (whole table, prefix, start/end), /count, DBSIZE, EXISTS of many keys, KEYS, whole SCANs and
// HTTP pagings (each page on its own and the whole), pages with values, RANDOMKEY and memcached multi-get against
// each key's history: no key absent for the whole read may be counted or listed, none present for all of it
// missed, no value read that the key did not hold during the read. Injected bugs it catches within its default
// 5 s: a query cache that ignores the tables' generations, or the expiry of what it counted, or FLUSHALL; a read
// cache that keeps its items across a flush; caches kept on (--exclusive) with a second front end reading.
// ANYKV_STALE_SECONDS, ANYKV_STALE_ARGS and ANYKV_STALE_ENV tune it as TestNoStaleReads; ANYKV_AGG_ENGINE
// (postgres, redis-nopersist, etcd) runs it over that datastore, and ANYKV_AGG_FRONTS=2 puts half the readers on
// a second front end of it.
func TestNoStaleAggregateReads(t *testing.T) {
	secs, args, env := stressConfig()
	opts := servertest.Options{Memcache: true, HTTP: true, Args: args, Env: env}
	if name := os.Getenv("ANYKV_AGG_ENGINE"); name != "" {
		u := remotetest.Start(t, name)
		if strings.HasPrefix(u, "resp://") {
			u = "redis" + strings.TrimPrefix(u, "resp") + "/0"
		}
		opts.Engine = u
	}
	s := servertest.Start(t, opts)
	e := &aggEnv{t: t, s: s, byName: map[string]*aggKey{},
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	readers := []*servertest.Server{s, s}
	if os.Getenv("ANYKV_AGG_FRONTS") == "2" { // half the readers on a second front end of the same datastore
		readers[1] = servertest.Start(t, opts)
	}
	owned := make([][]*aggKey, aggWriters)
	for w := range aggWriters {
		for j := range aggPerWriter {
			k := &aggKey{name: fmt.Sprintf("k%d.%d", j, w), evs: []aggEvent{{issue: 1, ack: 1}}}
			e.keys, e.byName[k.name] = append(e.keys, k), k
			owned[w] = append(owned[w], k)
		}
	}
	slices.SortFunc(e.keys, func(a, b *aggKey) int { return strings.Compare(a.name, b.name) })
	var wg sync.WaitGroup
	for w := range aggWriters {
		wg.Add(1)
		go func() { defer wg.Done(); e.writer(w, owned[w]) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); e.flusher() }()
	for r := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); e.reader(r, readers[r%2]) }()
	}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) && !e.stop.Load() {
		time.Sleep(time.Duration(100+rand.Intn(200)) * time.Millisecond)
		e.quiet.Store(true)
		time.Sleep(time.Duration(50+rand.Intn(250)) * time.Millisecond)
		e.quiet.Store(false)
	}
	e.stop.Store(true)
	wg.Wait()
	var reads []string
	for i := range e.reads {
		if n := e.reads[i].Load(); n > 0 {
			reads = append(reads, fmt.Sprintf("%d:%d", i, n))
		}
	}
	t.Logf("%d writes; checked reads by kind: %s", e.ops.Load(), strings.Join(reads, " "))
	if len(e.failures) > 0 {
		t.Fatal(strings.Join(e.failures, "\n"))
	}
}
