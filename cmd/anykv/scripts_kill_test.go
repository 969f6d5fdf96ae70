package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestPipelinedScriptsSurviveKill: scripts pipelined by the hundred (as BullMQ's addBulk sends them) run in one
// batch with one fsync; every one acknowledged before a SIGKILL has all its writes after the restart: the list
// push and hash increment it declares, and the job key it builds as it runs (a key it does not declare), and no
// unacknowledged one is half there.
func TestPipelinedScriptsSurviveKill(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Fsync: "always"})
	const script = "redis.call('RPUSH', KEYS[1], ARGV[1]) redis.call('HINCRBY', KEYS[2], ARGV[1], 1) " +
		"redis.call('SET', 'job:' .. ARGV[1], ARGV[1]) return redis.call('LLEN', KEYS[1])"
	c := client(t, s.RESP)
	sha, err := c.ScriptLoad(ctx, script).Result()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int][]string{} // per writer, the values acknowledged, in order
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw := goredis.NewClient(&goredis.Options{Addr: s.RESP, MaxRetries: -1, ReadTimeout: 5 * time.Second, PoolSize: 1})
			defer cw.Close()
			for n := 0; ; n += 100 {
				select {
				case <-stop:
					return
				default:
				}
				cmds, err := cw.Pipelined(ctx, func(p goredis.Pipeliner) error {
					for i := range 100 {
						p.EvalSha(ctx, sha, []string{fmt.Sprint("list", w), "counts"}, fmt.Sprintf("w%d-%d", w, n+i))
					}
					return nil
				})
				mu.Lock()
				for i, cmd := range cmds {
					if cmd.Err() == nil {
						acked[w] = append(acked[w], fmt.Sprintf("w%d-%d", w, n+i))
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	s.Kill()
	close(stop)
	wg.Wait()
	s.Restart()
	c = client(t, s.RESP)
	total := 0
	for w, vals := range acked {
		total += len(vals)
		list, err := c.LRange(ctx, fmt.Sprint("list", w), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) < len(vals) || !slices.Equal(list[:len(vals)], vals) {
			t.Fatalf("writer %d: %d acknowledged pushes, the list after the restart has %d, and they differ", w, len(vals), len(list))
		}
		// What was pushed beyond the acknowledged (applied, its reply lost in the kill) is whole too.
		for _, v := range list {
			if got, err := c.Get(ctx, "job:"+v).Result(); err != nil || got != v {
				t.Fatalf("job:%s = %q, %v after the restart, its push present", v, got, err)
			}
			if got, err := c.HGet(ctx, "counts", v).Result(); err != nil || got != "1" {
				t.Fatalf("counts[%s] = %q, %v after the restart, its push present", v, got, err)
			}
		}
	}
	if total < 200 {
		t.Fatalf("only %d scripts acknowledged before the kill", total)
	}
	t.Logf("%d pipelined scripts acknowledged before the kill, all there after it", total)
}
