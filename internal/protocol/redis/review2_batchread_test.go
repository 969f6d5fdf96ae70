package redis

import (
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// resolver.apply counts every OpCall as a read (rs.reading), so writing functions count what they read before
// changing the key: SETBIT reads the whole string, and a transaction of two SETBITs of a string bigger than
// engine.MaxBatchRead is refused (EXEC has no one-at-a-time fallback), though no reply carries any value.
func TestTransactionOfWritingCallsIsNotRefused(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 256 << 10
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	if err := c.Set(ctx, "big", strings.Repeat("v", 512<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.SetBit(ctx, "big", 0, 1)
		p.SetBit(ctx, "big", 1, 1)
		return nil
	})
	if err != nil {
		t.Fatalf("MULTI; SETBIT big 0 1; SETBIT big 1 1; EXEC on a 512 KiB string under a 256 KiB read bound: %v", err)
	}
}

// TestOneReadOfAHugeCollectionIsBounded: a read of a collection's members counts their names as well as their
// values against engine.MaxBatchRead, and stops at it even alone (it completed before, however big: SMEMBERS of
// a set bigger than memory, which anykv keeps on disk, held every member until the process ran out). The
// command answers an error that says how to read in parts; the pipeline's other commands are answered, and the
// scans that read in parts still work.
func TestOneReadOfAHugeCollectionIsBounded(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 1 << 20
	ts := startPebbleServer(t) // memstore's reads are views, which MaxBatchRead does not count
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	var members []any
	fields := map[string]any{}
	for i := range 3000 { // 3 MiB of names
		name := strings.Repeat("m", 1000) + strconv.Itoa(i)
		members = append(members, name)
		fields[name] = "v"
	}
	if err := c.SAdd(ctx, "bigset", members...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "bighash", fields).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "small", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cmds, _ := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.SMembers(ctx, "bigset")
		p.HGetAll(ctx, "bighash")
		p.Get(ctx, "k")
		return nil
	})
	for _, cmd := range cmds[:2] {
		if err := cmd.Err(); err == nil || !strings.Contains(err.Error(), "read it in parts") {
			t.Errorf("%v over 3 MiB of members under a 1 MiB bound: %v", cmd.Args(), err)
		}
	}
	if v, err := cmds[2].(*goredis.StringCmd).Result(); err != nil || v != "small" {
		t.Errorf("GET k after them in the pipeline: %q, %v", v, err)
	}
	n := 0
	iter := c.SScan(ctx, "bigset", 0, "", 100).Iterator()
	for iter.Next(ctx) {
		n++
	}
	if err := iter.Err(); err != nil || n != 3000 {
		t.Errorf("SSCAN of the big set: %d members, %v", n, err)
	}
	if got, err := c.SCard(ctx, "bigset").Result(); err != nil || got != 3000 {
		t.Errorf("SCARD: %d, %v", got, err)
	}
}

// TestReadsOfSmallMembersCountWhatTheyHold: a collection read counts each member it keeps (a Member, 80 bytes)
// against engine.MaxBatchRead as well as the bytes it scanned. Scanned bytes alone are a tenth of what small
// members hold: under a 4 MiB bound SMEMBERS, HGETALL, ZRANGE and ZRANGE BYSCORE of 120,000 names of up to 4
// bytes (1.5 to 3 MiB scanned) completed with the heap 26 to 42 MiB up, so under the default 256 MiB bound one
// read of a set of 20 million such members takes gigabytes. ZCOUNT, which answers a number, is bounded as before.
// The test keeps those proportions at a quarter of the size (24,000 members, at most 0.6 MiB scanned, 1.8 MiB
// held, a 1 MiB bound): loading 120,000 took 87 s under -race.
func TestReadsOfSmallMembersCountWhatTheyHold(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 1 << 20
	ts := startPebbleServer(t)
	// Loading a pipeline of 15,000 members under -race passed go-redis's 3 s read timeout once on a loaded machine.
	c := ts.client(t, &goredis.Options{PoolSize: 1, ReadTimeout: 30 * time.Second})
	const n = 24000
	for i := 0; i < n; i += 5000 {
		if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			ms := make([]any, 0, 5000)
			zs := make([]goredis.Z, 0, 5000)
			fs := make([]any, 0, 10000)
			for j := i; j < min(i+5000, n); j++ {
				m := strconv.FormatInt(int64(j), 36)
				ms = append(ms, m)
				zs = append(zs, goredis.Z{Score: float64(j), Member: m})
				fs = append(fs, m, "")
			}
			p.SAdd(ctx, "set", ms...)
			p.ZAdd(ctx, "zset", zs...)
			p.HSet(ctx, "hash", fs...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	reads := map[string]func() error{
		"SMEMBERS":    func() error { return c.SMembers(ctx, "set").Err() },
		"HGETALL":     func() error { return c.HGetAll(ctx, "hash").Err() },
		"ZRANGE 0 -1": func() error { return c.ZRange(ctx, "zset", 0, -1).Err() },
		"ZRANGE BYSCORE": func() error {
			return c.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: "zset", Start: "-inf", Stop: "+inf", ByScore: true}).Err()
		},
	}
	for name, read := range reads {
		var err error
		peak := heapPeak(func() { err = read() })
		if err == nil || !strings.Contains(err.Error(), "read it in parts") {
			t.Errorf("%s of %d small members under a %d MiB bound (heap +%d MiB): %v, want the read-in-parts error",
				name, n, engine.MaxBatchRead>>20, peak>>20, err)
		}
	}
	if got, err := c.ZCount(ctx, "zset", "-inf", "+inf").Result(); err != nil || got != n {
		t.Errorf("ZCOUNT: %d, %v", got, err)
	}
}
