package main

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestKillKeepsEveryTypeAsAcknowledged is the kill -9 test of every data type, with redis-server as the model.
// Writers, each on keys of its own, send random pipelines of commands over strings, bitmaps, lists, hashes, sets,
// sorted sets and streams, with expiries, renames, copies, moves between their keys, scripts and MULTI blocks;
// the server is killed with SIGKILL in the middle and restarted. A writer's commands apply in order, a MULTI
// block or a script whole or not at all, so its keys after the restart must be exactly redis-server's after its
// acknowledged commands and some prefix of those it sent without an answer: no acknowledged write lost, none
// half applied, none out of order. Each round's keys are checked again after every later kill.
func TestKillKeepsEveryTypeAsAcknowledged(t *testing.T) {
	model := modelRedis(t)
	for _, tc := range []struct {
		name   string
		fsync  string
		env    []string
		deploy string // a datastore to put anykv in front of (internal/bench/deploy's name), "" for Pebble
	}{
		{"always", "always", nil, ""}, {"interval", "interval", nil, ""},
		{"always-one-core", "always", []string{"GOMAXPROCS=1"}, ""},
		{"postgres", "always", nil, "postgres"}, {"mariadb", "always", nil, "mariadb"}, {"redis", "always", nil, "redis"},
		{"etcd", "always", nil, "etcd"}, {"cassandra", "always", nil, "cassandra"},
		{"redis-cluster", "always", nil, "redis-cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine := ""
			switch tc.deploy {
			case "":
			case "redis-cluster":
				engine = remotetest.StartCluster(t, "redis-cluster", 3).URL
			case "cassandra":
				engine = remotetest.Start(t, tc.deploy) + "/anykv"
			default:
				// (the deploy names a Redis target resp://, which anykv takes as redis://)
				engine = strings.Replace(remotetest.Start(t, tc.deploy), "resp://", "redis://", 1)
			}
			s := servertest.Start(t, servertest.Options{Engine: engine, Fsync: tc.fsync, Env: tc.env})
			var settled []map[string]string // per round, what its keys hold
			for round := range 3 {
				ws := newModelWriters(fmt.Sprintf("%s:r%d:", tc.name, round), round)
				runUntilKilled(t, s, ws, nil)
				s.Restart()
				c := client(t, s.RESP)
				for r, want := range settled {
					if got := dumpKeys(t, c, fmt.Sprintf("%s:r%d:", tc.name, r)); !maps.Equal(got, want) {
						t.Fatalf("round %d's keys changed after round %d's kill:\n%s", r, round, dumpDiff(want, got))
					}
				}
				settled = append(settled, checkWriters(t, c, model, ws, round))
			}
		})
	}
}

// TestEtcdClusterKeepsEveryTypeAsAcknowledged is the same over a 3-member etcd cluster, each member in turn
// killed with SIGKILL and restarted while the writers go on (the other two keep a quorum), and anykv killed at the
// end. A command anykv answers with an error of unknown outcome (the member died mid-commit) may or may not have
// taken effect: the check tries both (the writer stops after that pipeline; one run of four had 8 such units).
func TestEtcdClusterKeepsEveryTypeAsAcknowledged(t *testing.T) {
	needEtcd(t)
	st, _, _ := clusterUp(t, "etcd", 3)
	model := modelRedis(t)
	s := servertest.Start(t, servertest.Options{Engine: st.URL})
	ws := newModelWriters("etcd-cluster:", 0)
	for _, w := range ws {
		w.pipe = 4 // a writer stops after a pipeline with an answer of unknown outcome: at most 4 to try both ways
	}
	runUntilKilled(t, s, ws, func(wait func(int)) {
		for i := range st.Members {
			if err := st.Kill(i); err != nil {
				t.Fatal(err)
			}
			wait(200)
			if err := st.Restart(i); err != nil {
				t.Fatal(err)
			}
			wait(100)
		}
	})
	s.Restart()
	checkWriters(t, client(t, s.RESP), model, ws, 0)
}

// modelRedis starts the redis-server the tests take as the model.
func modelRedis(t *testing.T) *goredis.Client {
	addr := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	model := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { model.Close() })
	return model
}

// newModelWriters makes six writers on keys under prefix, drawing their commands from seeds of round.
func newModelWriters(prefix string, round int) []*modelWriter {
	ws := make([]*modelWriter, 6)
	for i := range ws {
		ws[i] = &modelWriter{prefix: fmt.Sprintf("%sw%d:", prefix, i), rng: rand.New(rand.NewPCG(uint64(round), uint64(i))),
			pipe: 24}
	}
	return ws
}

// checkWriters checks each writer's keys, read through c after the restart, against the model, and returns them.
func checkWriters(t *testing.T, c *goredis.Client, model *goredis.Client, ws []*modelWriter, round int) map[string]string {
	t.Helper()
	all := map[string]string{}
	answered, tails, applied, unknown := 0, 0, 0, 0
	for _, w := range ws {
		got := dumpKeys(t, c, w.prefix)
		n := w.answered
		j := w.matchPrefix(t, model, got)
		if j < 0 {
			want := w.modelAt(t, model, 0)
			t.Fatalf("%s: after the kill its keys match no prefix of its %d unanswered units over its %d answered "+
				"ones (%d of unknown outcome); after the answered ones (those left out) redis-server holds:\n%s",
				w.prefix, len(w.units)-w.answered, w.answered, len(w.unknown), dumpDiff(want, got)+
					"the units after the acknowledged ones:\n"+unitsText(w.units[w.acked:])+
					"the answers of unknown outcome: "+strings.Join(w.unknownTexts, " | ")+
					"\nevery unit that names a key that differs, by its index:\n"+unitsOf(w.units, want, got))
		}
		answered += n
		tails += len(w.units) - n
		applied += j
		unknown += len(w.unknown)
		for k, v := range got {
			all[k] = v
		}
	}
	t.Logf("round %d: %d writers, %d units answered (%d of unknown outcome) and %d unanswered (%d of them found "+
		"applied) checked after kill -9, %d keys", round, len(ws), answered, unknown, tails, applied, len(all))
	if answered < 300 {
		t.Fatalf("round %d: only %d units answered before the kill", round, answered)
	}
	return all
}

// modelWriter is one client's history: the units it sent (a command, a MULTI block or a script), and what it
// learnt of them.
type modelWriter struct {
	prefix string
	rng    *rand.Rand
	units  [][][]any
	xid    int // the last stream ID it used
	pipe   int // the most units a pipeline holds
	// answered units were answered, unknown (ascending) those of them answered with an error of unknown outcome
	// (a datastore under anykv that failed mid-commit: applied or not); acked are the units before the first of
	// those, all known to have taken effect as answered.
	answered, acked int
	unknown         []int
	unknownTexts    []string // their error replies
}

// maxUnknown bounds the units of unknown outcome a check tries both ways (2^maxUnknown replays).
const maxUnknown = 8

// unknownOutcome reports whether err is an error reply other than those redis-server gives to the commands the
// writers send (a run of them all gave just these): then it is anykv's, that the datastore under it failed, and
// the command may or may not have taken effect. Its texts vary with the datastore and the failure ("commit
// outcome unknown", "the datastore did not answer in time", an etcd client's "rpc error: code = Unavailable"), so
// they are not listed. EXEC answers one error when its transaction's batch failed whole: it answered an array of
// the error in every command's place, which this took for EXEC's success, and runs over the etcd cluster (two
// CI runs, 4 of some 140 local ones) failed with the keys of a transaction of unknown outcome that anykv had not
// applied, or of a later unit that saw their state (TestExecOfAFailedBatchIsOneError).
func unknownOutcome(err error) bool {
	var re goredis.Error
	if err == nil || err == goredis.Nil || !errors.As(err, &re) {
		return false
	}
	msg, _, _ := strings.Cut(re.Error(), " script: ") // a script's error names it after the command's text
	return !slices.Contains(redisErrors, msg)
}

// redisErrors are the error replies redis-server gives to the writers' commands.
var redisErrors = []string{
	"WRONGTYPE Operation against a key holding the wrong kind of value",
	"ERR value is not an integer or out of range",
	"ERR hash value is not an integer",
	"ERR no such key",
	"ERR index out of range",
	"ERR source and destination objects are the same",
	"ERR The ID specified in XADD is equal or smaller than the target stream top item",
}

// runUntilKilled has every writer send pipelines until the server is killed, after at least 300 answered units.
// mid, if not nil, runs after the first 300 (say to kill a member of the datastore under anykv) and may wait for
// more. A writer answered an error of unknown outcome stops after that pipeline.
func runUntilKilled(t *testing.T, s *servertest.Server, ws []*modelWriter, mid func(wait func(more int))) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, running := 0, len(ws)
	wait := func(more int) {
		mu.Lock()
		target := answered + more
		mu.Unlock()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n, r := answered, running
			mu.Unlock()
			if n >= target || r == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d units answered after a minute, waiting for %d", n, target)
			}
		}
	}
	stop := make(chan struct{})
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { mu.Lock(); running--; mu.Unlock() }()
			c := goredis.NewClient(&goredis.Options{Addr: s.RESP, MaxRetries: -1, PoolSize: 1,
				ReadTimeout: 10 * time.Second})
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				first := len(w.units)
				for range 1 + w.rng.IntN(w.pipe) {
					w.units = append(w.units, w.unit())
				}
				last, err := pipelineUnits(c, w.units[first:])
				n := 0
				for i, cmd := range last {
					if !answeredBy(cmd.Err()) {
						break
					}
					if unknownOutcome(cmd.Err()) {
						w.unknown = append(w.unknown, first+i)
						w.unknownTexts = append(w.unknownTexts, cmd.Err().Error())
					}
					if replies, ok := cmd.Val().([]any); ok { // EXEC's: each command's own outcome, never anykv's failure
						for _, r := range replies {
							if e, ok := r.(error); ok && unknownOutcome(e) {
								t.Errorf("%s: EXEC answered anykv's error in a command's place (a failure of the whole "+
									"transaction is EXEC's one error): %v", w.prefix, e)
							}
						}
					}
					n++
				}
				w.answered = first + n
				if len(w.unknown) == 0 {
					w.acked = w.answered
				} else {
					w.acked = w.unknown[0]
				}
				mu.Lock()
				answered += n
				mu.Unlock()
				if n < len(last) {
					if err == nil {
						t.Errorf("%s: a unit unanswered in a pipeline that succeeded", w.prefix)
					}
					return // the server is gone
				}
				if len(w.unknown) > 0 {
					return
				}
			}
		}()
	}
	wait(300)
	if mid != nil {
		mid(wait)
	}
	time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
	s.Kill()
	close(stop)
	wg.Wait()
}

// pipelineUnits sends units in one pipeline and returns, per unit, the command whose answer acknowledges it (its
// last), with the pipeline's error.
func pipelineUnits(c *goredis.Client, units [][][]any) ([]*goredis.Cmd, error) {
	var last []*goredis.Cmd
	_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range units {
			var cmd *goredis.Cmd
			for _, args := range u {
				cmd = p.Do(ctx, args...)
			}
			last = append(last, cmd)
		}
		return nil
	})
	return last, err
}

// answeredBy reports whether a command's error is the server's answer (success, nil or an error reply) rather
// than a failed connection.
func answeredBy(err error) bool {
	var re goredis.Error
	return err == nil || errors.As(err, &re)
}

// matchPrefix returns the j for which the writer's keys in got are redis-server's after its acknowledged units,
// those answered after them (each of unknown outcome applied or not) and the first j unanswered ones, or -1. It
// also counts the answered units and those j as the writer's acknowledged ones.
func (w *modelWriter) matchPrefix(t *testing.T, model *goredis.Client, got map[string]string) int {
	t.Helper()
	if len(w.unknown) > maxUnknown {
		t.Fatalf("%s: %d units of unknown outcome, more than the check tries both ways", w.prefix, len(w.unknown))
	}
	for mask := range 1 << len(w.unknown) {
		if maps.Equal(w.modelAt(t, model, mask), got) {
			w.acked = w.answered
			return 0
		}
		for j := 1; j <= len(w.units)-w.answered; j++ {
			w.replay(t, model, w.units[w.answered+j-1:w.answered+j])
			if maps.Equal(dumpKeys(t, model, w.prefix), got) {
				w.acked = w.answered + j
				return j
			}
		}
	}
	return -1
}

// modelAt resets redis-server to the writer's answered units, of those of unknown outcome the ones mask has a
// bit of (bit i: w.unknown[i]), and dumps it.
func (w *modelWriter) modelAt(t *testing.T, model *goredis.Client, mask int) map[string]string {
	t.Helper()
	if err := model.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	w.replay(t, model, w.units[:w.acked])
	for i := w.acked; i < w.answered; i++ {
		if k := slices.Index(w.unknown, i); k < 0 || mask&(1<<k) != 0 {
			w.replay(t, model, w.units[i:i+1])
		}
	}
	return dumpKeys(t, model, w.prefix)
}

// replay sends units to redis-server, each answered before the next is sent, errors and all.
func (w *modelWriter) replay(t *testing.T, model *goredis.Client, units [][][]any) {
	t.Helper()
	for len(units) > 0 {
		n := min(len(units), 500)
		_, err := model.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, u := range units[:n] {
				for _, args := range u {
					p.Do(ctx, args...)
				}
			}
			return nil
		})
		var re goredis.Error
		if err != nil && !errors.As(err, &re) {
			t.Fatal(err)
		}
		units = units[n:]
	}
}

// unit draws the writer's next unit: mostly one command, sometimes a MULTI block or a script.
func (w *modelWriter) unit() [][]any {
	switch w.rng.IntN(20) {
	case 0:
		cmds := [][]any{{"MULTI"}}
		for range 2 + w.rng.IntN(3) {
			cmds = append(cmds, w.command())
		}
		return append(cmds, []any{"EXEC"})
	case 1:
		return [][]any{{"EVAL", "redis.call('RPUSH', KEYS[1], ARGV[1]) redis.call('HINCRBY', KEYS[2], ARGV[1], 3) " +
			"redis.call('ZINCRBY', KEYS[3], 2, ARGV[1]) return redis.call('INCR', KEYS[4])", 4,
			w.key("l"), w.key("h"), w.key("z"), w.key("s"), w.elem()}}
	}
	return [][]any{w.command()}
}

func (w *modelWriter) key(kind string) string { return w.prefix + kind + strconv.Itoa(w.rng.IntN(3)) }
func (w *modelWriter) elem() string           { return "e" + strconv.Itoa(w.rng.IntN(8)) }
func (w *modelWriter) num(n int) string       { return strconv.Itoa(w.rng.IntN(n)) }
func (w *modelWriter) anyKey() string {
	return w.key([]string{"s", "l", "h", "t", "z", "x"}[w.rng.IntN(6)])
}

// command draws one deterministic command over the writer's keys (no random picks, no clock-dependent IDs: the
// same command on the same state has the same effect in anykv and in redis-server).
func (w *modelWriter) command() []any {
	s, l, h, st, z := w.key("s"), w.key("l"), w.key("h"), w.key("t"), w.key("z")
	switch w.rng.IntN(40) {
	case 0:
		return []any{"SET", s, "v" + w.num(1000)}
	case 1:
		return [][]any{{"SET", s, "v" + w.num(1000), "NX"}, {"SET", s, "v" + w.num(1000), "XX"},
			{"SET", s, "v" + w.num(1000), "EX", 100000}, {"SET", s, "v" + w.num(1000), "KEEPTTL"}}[w.rng.IntN(4)]
	case 2:
		return []any{"APPEND", s, w.elem()}
	case 3:
		return []any{"INCRBY", s, w.num(100)}
	case 4:
		return []any{"SETRANGE", s, w.num(20), w.elem()}
	case 5:
		return []any{"GETDEL", s}
	case 6:
		return []any{"MSET", s, w.elem(), w.key("s"), w.elem()}
	case 7:
		return []any{"SETBIT", w.key("s"), w.num(100), w.num(2)}
	case 8:
		return []any{"LPUSH", l, w.elem(), w.elem()}
	case 9:
		return []any{"RPUSH", l, w.elem()}
	case 10:
		return []any{"LPOP", l}
	case 11:
		return []any{"RPOP", l, 1 + w.rng.IntN(3)}
	case 12:
		return []any{"LSET", l, w.rng.IntN(5) - 2, w.elem()}
	case 13:
		return []any{"LREM", l, w.rng.IntN(5) - 2, w.elem()}
	case 14:
		return []any{"LTRIM", l, w.rng.IntN(3), w.rng.IntN(8) - 2}
	case 15:
		return []any{"LINSERT", l, []string{"BEFORE", "AFTER"}[w.rng.IntN(2)], w.elem(), w.elem()}
	case 16:
		return []any{"LMOVE", l, w.key("l"), []string{"LEFT", "RIGHT"}[w.rng.IntN(2)], []string{"LEFT", "RIGHT"}[w.rng.IntN(2)]}
	case 17:
		return []any{"HSET", h, w.elem(), "v" + w.num(100), w.elem(), "v" + w.num(100)}
	case 18:
		return []any{"HDEL", h, w.elem()}
	case 19:
		return []any{"HINCRBY", h, w.elem(), w.rng.IntN(20) - 5}
	case 20:
		return []any{"HSETNX", h, w.elem(), "n" + w.num(10)}
	case 21:
		return []any{"SADD", st, w.elem(), w.elem()}
	case 22:
		return []any{"SREM", st, w.elem()}
	case 23:
		return []any{"SMOVE", st, w.key("t"), w.elem()}
	case 24:
		return []any{[]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}[w.rng.IntN(3)], st, w.key("t"), w.key("t")}
	case 25:
		return []any{"ZADD", z, w.rng.IntN(10) - 3, w.elem()}
	case 26:
		return []any{"ZADD", z, []string{"NX", "XX", "GT", "LT"}[w.rng.IntN(4)], "CH", w.rng.IntN(10), w.elem()}
	case 27:
		return []any{"ZINCRBY", z, w.rng.IntN(7) - 3, w.elem()}
	case 28:
		return []any{"ZREM", z, w.elem()}
	case 29:
		return []any{"ZPOPMIN", z}
	case 30:
		return []any{"ZREMRANGEBYRANK", z, 0, w.rng.IntN(2)}
	case 31:
		return []any{"ZUNIONSTORE", z, 2, w.key("z"), w.key("z"), "WEIGHTS", 1, 2}
	case 32:
		w.xid += w.rng.IntN(3) // an ID at or below the last one is refused, in both
		return []any{"XADD", w.prefix + "x0", fmt.Sprintf("%d-1", w.xid), "f", w.elem()}
	case 33:
		return []any{"XTRIM", w.prefix + "x0", "MAXLEN", w.num(6)}
	case 34:
		return []any{"XDEL", w.prefix + "x0", fmt.Sprintf("%d-1", w.rng.IntN(w.xid+1))}
	case 35:
		return []any{"RENAME", w.anyKey(), w.anyKey()}
	case 36:
		return []any{"COPY", w.anyKey(), w.anyKey(), "REPLACE"}
	case 37:
		return []any{"DEL", w.anyKey(), w.anyKey()}
	case 38:
		return []any{"EXPIRE", w.anyKey(), 100000}
	default:
		return []any{"PERSIST", w.anyKey()}
	}
}

// unitsText lists units, one a line.
// unitsOf lists, with their indexes, the units that name a key whose dumps in want and got differ.
func unitsOf(units [][][]any, want, got map[string]string) string {
	var keys []string
	for k, v := range want {
		if got[k] != v {
			keys = append(keys, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	var b strings.Builder
	for i, u := range units {
		text := fmt.Sprint(u)
		if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(text, k+" ") || strings.Contains(text, k+"]") }) {
			fmt.Fprintf(&b, "  %d %s\n", i, text)
		}
	}
	return b.String()
}

func unitsText(units [][][]any) string {
	var b strings.Builder
	for _, u := range units {
		fmt.Fprintf(&b, "  %v\n", u)
	}
	return b.String()
}

// dumpKeys reads every key under prefix as text: its type, whether it has a TTL, and its whole value in a
// canonical order.
func dumpKeys(t *testing.T, c *goredis.Client, prefix string) map[string]string {
	t.Helper()
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		ttl := c.PTTL(ctx, k).Val() > 0
		var v any
		var err error
		switch typ {
		case "string":
			v, err = c.Get(ctx, k).Result()
		case "list":
			v, err = c.LRange(ctx, k, 0, -1).Result()
		case "hash":
			var m map[string]string
			m, err = c.HGetAll(ctx, k).Result()
			v = sortedPairs(m)
		case "set":
			var m []string
			m, err = c.SMembers(ctx, k).Result()
			slices.Sort(m)
			v = m
		case "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			v, err = c.XRange(ctx, k, "-", "+").Result()
		default:
			t.Fatalf("key %s of type %q", k, typ)
		}
		if err != nil {
			t.Fatalf("reading %s (%s): %v", k, typ, err)
		}
		out[k] = fmt.Sprintf("%s ttl=%v %v", typ, ttl, v)
	}
	return out
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// dumpDiff lists the keys whose dumps differ, want (the model) against got (anykv).
func dumpDiff(want, got map[string]string) string {
	var b strings.Builder
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if want[k] != got[k] {
			fmt.Fprintf(&b, "  %s\n    model: %s\n    anykv: %s\n", k, want[k], got[k])
		}
	}
	return b.String()
}
