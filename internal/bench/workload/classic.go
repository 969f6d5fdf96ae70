package workload

import (
	"context"
	"fmt"

	"anykv/internal/bench/driver"
	"anykv/internal/bench/gen"
)

const (
	appscaleQueries = 100 // whole-table queries per thread
	appscaleCounts  = 10  // whole-table counts per thread
	smallValue      = 100 // default value size outside YCSB
)

func init() {
	register(&Workload{
		Name: "appscale",
		Summary: "AppScale datastore evaluation: fill N, then per thread N puts, N gets, " +
			"100 whole-table queries, N deletes and N no-ops",
		DefaultThreads: []int{1, 3, 9},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("N=%d", c.Records), fmt.Sprintf("valuesize=%d", valueSize(c, smallValue)),
				fmt.Sprintf("queries/thread=%d", appscaleQueries), fmt.Sprintf("counts/thread=%d", appscaleCounts),
				threadsParam(c, []int{1, 3, 9})}
		},
		Run: runAppScale,
	})
	register(&Workload{
		Name:           "acdb",
		Summary:        "Active Cloud DB mix from an empty table: 50% get, 30% put (new item), 20% whole-table query",
		DefaultThreads: []int{4},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("operations=%d", c.Operations), "get=50%", "put=30%", "query=20%",
				fmt.Sprintf("valuesize=%d", valueSize(c, smallValue)), "keys=uniform over items put so far",
				threadsParam(c, []int{4})}
		},
		Run: runACDB,
	})
	register(&Workload{
		Name:           "ratio-sweep",
		Summary:        "VoltCache sweep: load N, then GET:PUT at 50, 60, 70, 80, 90, 95, 98, 99% gets",
		DefaultThreads: []int{4},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("records=%d", c.Records), fmt.Sprintf("operations/ratio=%d", c.Operations),
				"get%=50,60,70,80,90,95,98,99", "keys=uniform", fmt.Sprintf("valuesize=%d", valueSize(c, smallValue)),
				threadsParam(c, []int{4})}
		},
		Run: runRatioSweep,
	})
}

func valueSize(c Config, def int) int {
	if c.ValueSize > 0 {
		return c.ValueSize
	}
	return def
}

func runAppScale(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("appscale", threads)
	n := r.Cfg.Records
	size := r.ValueSize(smallValue)
	t := int64(threads)
	put := newLoadCount("put")
	phases := []Phase{
		{Name: "fill", Ops: n, Op: func(w *Worker, i int64) Outcome {
			return w.Put("put", table, gen.SeqKey("fill", i), size)
		}},
		{Name: "count", Ops: t * appscaleCounts, Needs: driver.CapCount, Op: func(w *Worker, i int64) Outcome {
			return w.Count("count", table)
		}},
		{Name: "put", Ops: t * n, Op: func(w *Worker, i int64) Outcome {
			return put.count(i, w.Put("put", table, gen.SeqKey("item", i), size))
		}},
		{Name: "get", Ops: t * n, Bound: put, Op: func(w *Worker, i int64) Outcome {
			return w.GetLoaded("get", table, gen.SeqKey("item", i))
		}},
		{Name: "query", Ops: t * appscaleQueries, Needs: driver.CapScan, Op: func(w *Worker, i int64) Outcome {
			return w.Query("query", table)
		}},
		{Name: "delete", Ops: t * n, Bound: put, Op: func(w *Worker, i int64) Outcome {
			return w.Delete("delete", table, gen.SeqKey("item", i))
		}},
		{Name: "noop", Ops: t * n, Op: func(w *Worker, i int64) Outcome {
			return w.Noop("noop")
		}},
	}
	for _, p := range phases {
		p.Threads = threads
		if err := r.Phase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func runACDB(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("acdb", threads)
	size := r.ValueSize(smallValue)
	items := gen.NewCounter(0)
	return r.Phase(ctx, Phase{Name: "mix", Threads: threads, Ops: r.Cfg.Operations, Needs: driver.CapScan,
		Op: func(w *Worker, i int64) Outcome {
			x := w.R.IntN(100)
			switch {
			case x < 50:
				last := items.Last()
				id := int64(0)
				if last >= 0 {
					id = w.R.Int64N(last + 1)
				}
				return w.Get("get", table, gen.SeqKey("item", id))
			case x < 80:
				id := items.Next()
				o := w.Put("put", table, gen.SeqKey("item", id), size)
				items.Ack(id)
				return o
			default:
				return w.Query("query", table)
			}
		}})
}

var sweepRatios = []int{50, 60, 70, 80, 90, 95, 98, 99}

func runRatioSweep(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("sweep", threads)
	size := r.ValueSize(smallValue)
	lc := newLoadCount("load")
	if err := r.Phase(ctx, Phase{Name: "load", Threads: threads, Ops: r.Cfg.Records, Op: func(w *Worker, i int64) Outcome {
		return lc.count(i, w.Put("put", table, gen.SeqKey("k", i), size))
	}}); err != nil {
		return err
	}
	n := r.loaded(lc, threads, r.Cfg.Records)
	for _, pct := range sweepRatios {
		pct := pct
		p := Phase{Name: fmt.Sprintf("get%d", pct), Threads: threads, Ops: r.Cfg.Operations}
		if n == 0 {
			r.skip(p, "no record was loaded, phase skipped")
			continue
		}
		p.Op = func(w *Worker, i int64) Outcome {
			key := gen.SeqKey("k", w.R.Int64N(n))
			if w.R.IntN(100) < pct {
				return w.GetLoaded("get", table, key)
			}
			return w.Put("put", table, key, size)
		}
		if err := r.Phase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
