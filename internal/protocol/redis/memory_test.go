package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// memoryReplies runs the MEMORY subcommands whose replies do not depend on the process's figures.
func memoryReplies(t *testing.T, addr string) []string {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	var out []string
	for _, args := range [][]any{{"MEMORY", "HELP"}, {"MEMORY", "PURGE"}, {"MEMORY", "FOO"}, {"MEMORY", "STATS", "x"},
		{"MEMORY", "DOCTOR", "x"}} {
		v, err := c.Do(context.Background(), args...).Result()
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if l, ok := v.([]any); ok {
			for _, x := range l {
				out = append(out, x.(string))
			}
			continue
		}
		out = append(out, v.(string))
	}
	return out
}

// memoryStatsNames returns MEMORY STATS's field names, in order, read over RESP2 (a flat array) or RESP3 (a map).
func memoryStatsNames(t *testing.T, addr string, proto int) []string {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: proto})
	defer c.Close()
	v, err := c.Do(context.Background(), "MEMORY", "STATS").Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	switch r := v.(type) {
	case []any:
		for i := 0; i < len(r); i += 2 {
			names = append(names, r[i].(string))
		}
	case map[any]any:
		for k := range r {
			names = append(names, k.(string))
		}
	default:
		t.Fatalf("MEMORY STATS over RESP%d: %T", proto, v)
	}
	return names
}

// TestMemoryCommands: MEMORY HELP, PURGE and the errors are Redis 7's; MEMORY STATS is a flat array in RESP2 and a
// map in RESP3, its names are Redis's own (compared with a real redis-server when installed) and keys.count
// counts every database; DOCTOR and MALLOC-STATS answer text.
func TestMemoryCommands(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	mine := memoryReplies(t, ts.addr)
	if addr := startRedisServerIfAny(t); addr != "" {
		compareEvents(t, mine, memoryReplies(t, addr))
		redisNames := map[string]bool{}
		for _, n := range memoryStatsNames(t, addr, 2) {
			redisNames[n] = true
		}
		for _, n := range memoryStatsNames(t, ts.addr, 2) {
			if !redisNames[n] {
				t.Errorf("MEMORY STATS field %s is not one of redis-server's", n)
			}
		}
	} else if mine[len(mine)-1] != "ERR wrong number of arguments for 'memory|doctor' command" {
		t.Errorf("MEMORY replies %q", mine)
	}
	if n := memoryStatsNames(t, ts.addr, 3); len(n) < 10 {
		t.Errorf("MEMORY STATS over RESP3: %v", n)
	}
	c := ts.client(t, nil)
	c.Set(ctx, "a", "1", 0)
	c.Do(ctx, "SELECT", "1")
	c2 := ts.client(t, &goredis.Options{DB: 1})
	c2.Set(ctx, "b", "1", 0)
	stats, err := c.Do(ctx, "MEMORY", "STATS").Result()
	if err != nil {
		t.Fatal(err)
	}
	if m := stats.(map[any]any); m["keys.count"] != int64(2) || m["total.allocated"].(int64) <= 0 {
		t.Errorf("MEMORY STATS: keys.count %v, total.allocated %v", m["keys.count"], m["total.allocated"])
	}
	doc, err := c.Do(ctx, "MEMORY", "DOCTOR").Text()
	if err != nil || !strings.HasPrefix(doc, "Hi Sam") && !strings.HasPrefix(doc, "Sam, I detected") {
		t.Errorf("MEMORY DOCTOR: %q, %v", doc, err)
	}
	if ms, err := c.Do(ctx, "MEMORY", "MALLOC-STATS").Text(); err != nil || !strings.Contains(ms, "HeapAlloc: ") {
		t.Errorf("MEMORY MALLOC-STATS: %q, %v", ms, err)
	}
}
