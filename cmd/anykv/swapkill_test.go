package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestSwapDBSurvivesKill: one client sends pipelines of writes to databases 0 and 1 (strings, counters, lists,
// hashes, sorted sets, with and without TTLs) and SWAPDB 0 1 between them, and anykv is killed with SIGKILL
// mid-stream, twice. After each restart both databases must be exactly redis-server's after the client's
// answered commands and some prefix of those it sent unanswered: a swap applies whole, durably, in its place
// among the writes, or not at all.
func TestSwapDBSurvivesKill(t *testing.T) {
	model := modelRedis(t)
	for _, tc := range []struct {
		name, fsync string
		env         []string
	}{{"always", "always", nil}, {"interval", "interval", nil}, {"always-one-core", "always", []string{"GOMAXPROCS=1"}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := servertest.Start(t, servertest.Options{Fsync: tc.fsync, Env: tc.env})
			rng := rand.New(rand.NewPCG(uint64(len(tc.name)), 3))
			var history [][][]any // units known applied, in order
			for round := range 2 {
				units, answered := swapUntilKilled(t, s, rng)
				s.Restart()
				got := dumpDBs(t, s.RESP)
				j := -1
				for extra := 0; extra <= len(units)-answered && j < 0; extra++ {
					if maps.Equal(replayDBs(t, model, history, units[:answered+extra]), got) {
						j = extra
					}
				}
				if j < 0 {
					t.Fatalf("round %d: after the kill the databases match redis-server's after no prefix of the %d "+
						"unanswered units over the %d answered ones", round, len(units)-answered, answered)
				}
				t.Logf("round %d: %d units answered, %d of %d unanswered found applied, %d keys", round, answered, j,
					len(units)-answered, len(got))
				history = append(history, units[:answered+j]...)
			}
		})
	}
}

// swapUntilKilled sends pipelines of units (each its own SELECT and a write, or a SWAPDB) until the server is
// killed after at least 400 answered units, and returns the units sent and how many were answered.
func swapUntilKilled(t *testing.T, s *servertest.Server, rng *rand.Rand) ([][][]any, int) {
	c := goredis.NewClient(&goredis.Options{Addr: s.RESP, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	var units [][][]any
	var answered atomic.Int64
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if answered.Load() >= 400 || time.Now().After(deadline) {
				time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
				s.Kill()
				return
			}
		}
	}()
	for {
		first := len(units)
		for range 1 + rng.IntN(16) {
			units = append(units, swapUnit(rng))
		}
		last, _ := pipelineUnits(c, units[first:]) // a failed connection shows in each unanswered command
		n := 0
		for _, cmd := range last {
			if !answeredBy(cmd.Err()) {
				break
			}
			n++
		}
		answered.Store(int64(first + n))
		if n < len(last) {
			<-killed
			if answered.Load() < 400 {
				t.Fatalf("only %d units answered before the kill", answered.Load())
			}
			return units, first + n
		}
	}
}

// swapUnit draws one unit: SWAPDB 0 1, or SELECT of database 0 or 1 and one write there.
func swapUnit(rng *rand.Rand) [][]any {
	if rng.IntN(8) == 0 {
		return [][]any{{"SWAPDB", "0", "1"}}
	}
	n := strconv.Itoa(rng.IntN(3))
	var w []any
	switch rng.IntN(6) {
	case 0:
		w = []any{"SET", "s" + n, strconv.Itoa(rng.IntN(100))}
	case 1:
		w = []any{"SET", "t" + n, "v", "EX", "1000"}
	case 2:
		w = []any{"INCR", "c" + n}
	case 3:
		w = []any{"RPUSH", "l" + n, strconv.Itoa(rng.IntN(100))}
	case 4:
		w = []any{"HSET", "h" + n, "f" + strconv.Itoa(rng.IntN(4)), strconv.Itoa(rng.IntN(100))}
	default:
		w = []any{"ZADD", "z" + n, strconv.Itoa(rng.IntN(100)), "m" + strconv.Itoa(rng.IntN(4))}
	}
	return [][]any{{"SELECT", strconv.Itoa(rng.IntN(2))}, w}
}

// dumpDBs reads every key of databases 0 and 1 at addr, each prefixed with its database.
func dumpDBs(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for db := range 2 {
		c := goredis.NewClient(&goredis.Options{Addr: addr, DB: db, MaxRetries: -1})
		for k, v := range dumpKeys(t, c, "") {
			out[fmt.Sprintf("%d:%s", db, k)] = v
		}
		c.Close()
	}
	return out
}

// replayDBs runs history and then units on the model, emptied first, and dumps its databases 0 and 1.
func replayDBs(t *testing.T, model *goredis.Client, history, units [][][]any) map[string]string {
	t.Helper()
	conn := model.Conn()
	defer conn.Close()
	if err := conn.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, u := range append(history[:len(history):len(history)], units...) {
			for _, args := range u {
				p.Do(ctx, args...)
			}
		}
		return nil
	}); err != nil && !answeredBy(err) {
		t.Fatal(err)
	}
	return dumpDBs(t, model.Options().Addr)
}
