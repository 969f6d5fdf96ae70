package workload

import (
	"context"
	"fmt"

	"anykv/internal/bench/gen"
)

const (
	nosqlInsertSize = 1000
	nosqlMinUpdate  = 100
	nosqlMaxUpdate  = 1900
	kv739Bytes      = 32 << 20 // bytes written per size in the value size sweep
)

var kv739Sizes = []int{64, 256, 1024, 4096, 16384, 65536}

func init() {
	register(&Workload{
		Name: "nosql-eval",
		Summary: "Cassandra-vs-MongoDB style phases: insert N; get N three times; update N with " +
			"100-1900 byte values; get N three times; put-then-get N new keys",
		DefaultThreads: []int{4},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("N=%d", c.Records), fmt.Sprintf("insertsize=%d", valueSize(c, nosqlInsertSize)),
				fmt.Sprintf("updatesize=uniform %d-%d (seed %d)", nosqlMinUpdate, nosqlMaxUpdate, c.Seed),
				threadsParam(c, []int{4})}
		},
		Run: runNoSQLEval,
	})
	register(&Workload{
		Name: "kv739",
		Summary: "kv739 tests: repeated writes and reads of one key, distinct keys, absent keys, " +
			"and a value size sweep 64 B-64 KiB",
		DefaultThreads: []int{1},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("operations=%d", c.Operations), fmt.Sprintf("valuesize=%d", valueSize(c, smallValue)),
				"sweep=64,256,1024,4096,16384,65536 bytes", "sweep ops/size=min(operations, 32 MiB/size)",
				threadsParam(c, []int{1})}
		},
		Run: runKV739,
	})
}

// updateSize draws update i's value size from the seed alone, so every
// target gets the same sizes whichever worker sends the update.
func updateSize(seed uint64, i int64) int {
	// splitmix64 of (seed, i)
	z := seed + uint64(i+1)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	z ^= z >> 31
	return nosqlMinUpdate + int(z%uint64(nosqlMaxUpdate-nosqlMinUpdate+1))
}

func runNoSQLEval(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("nosql", threads)
	n := r.Cfg.Records
	size := r.ValueSize(nosqlInsertSize)
	key := func(i int64) string { return gen.SeqKey("rec", i) }
	get := func(w *Worker, i int64) Outcome { return w.GetLoaded("get", table, key(i)) }
	ins := newLoadCount("insert")
	phases := []Phase{
		{Name: "insert", Op: func(w *Worker, i int64) Outcome { return ins.count(i, w.Put("insert", table, key(i), size)) }},
		{Name: "get1", Op: get, Bound: ins}, {Name: "get2", Op: get, Bound: ins}, {Name: "get3", Op: get, Bound: ins},
		{Name: "update", Bound: ins, Op: func(w *Worker, i int64) Outcome {
			return w.Put("update", table, key(i), updateSize(r.Cfg.Seed, i))
		}},
		{Name: "get4", Op: get, Bound: ins}, {Name: "get5", Op: get, Bound: ins}, {Name: "get6", Op: get, Bound: ins},
		{Name: "put-get", Op: func(w *Worker, i int64) Outcome {
			k := gen.SeqKey("pg", i)
			return Then("put+get", w.Put("put", table, k, size), func() Outcome { return w.Get("get", table, k) })
		}},
	}
	for _, p := range phases {
		p.Threads, p.Ops = threads, n
		if err := r.Phase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func runKV739(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("kv739", threads)
	n := r.Cfg.Operations
	size := r.ValueSize(smallValue)
	one, distinct := newLoadCount("put-one"), newLoadCount("put-distinct")
	phases := []Phase{
		{Name: "put-one", Ops: n, Op: func(w *Worker, i int64) Outcome { return one.count(i, w.Put("put", table, "one", size)) }},
		{Name: "get-one", Ops: n, Op: func(w *Worker, i int64) Outcome {
			if one.answered.Last() < 0 {
				return w.Get("get", table, "one") // nothing was put: a miss is the answer
			}
			return w.GetLoaded("get", table, "one")
		}},
		{Name: "put-distinct", Ops: n, Op: func(w *Worker, i int64) Outcome {
			return distinct.count(i, w.Put("put", table, gen.SeqKey("d", i), size))
		}},
		{Name: "get-distinct", Ops: n, Bound: distinct, Op: func(w *Worker, i int64) Outcome {
			return w.GetLoaded("get", table, gen.SeqKey("d", i))
		}},
		{Name: "get-absent", Ops: n, Op: func(w *Worker, i int64) Outcome {
			return w.Get("get", table, gen.SeqKey("absent", w.R.Int64N(1<<40)))
		}},
	}
	for _, sz := range kv739Sizes {
		sz := sz
		ops := min(n, int64(kv739Bytes/sz))
		prefix := fmt.Sprintf("s%d-", sz)
		put := newLoadCount(fmt.Sprintf("put-%dB", sz))
		phases = append(phases,
			Phase{Name: put.phase, Ops: ops, Op: func(w *Worker, i int64) Outcome {
				return put.count(i, w.Put("put", table, gen.SeqKey(prefix, i), sz))
			}},
			Phase{Name: fmt.Sprintf("get-%dB", sz), Ops: ops, Bound: put, Op: func(w *Worker, i int64) Outcome {
				return w.GetLoaded("get", table, gen.SeqKey(prefix, i))
			}})
	}
	for _, p := range phases {
		p.Threads = threads
		if err := r.Phase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
