package workload

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"anykv/internal/bench/driver"
)

// incrKeys is how many hot counters the incr workload's threads share: few, so conditional writes conflict.
const incrKeys = 8

func init() {
	register(&Workload{
		Name: "incr",
		Summary: "conditional writes: threads increment 8 hot counters with the datastore's own atomic increment " +
			"(RESP INCR, a PostgreSQL upsert, an etcd compare-and-swap), then the counters must sum to the increments acknowledged",
		DefaultThreads: []int{8},
		Params: func(c Config) []string {
			return []string{fmt.Sprintf("operations=%d", c.Operations), fmt.Sprintf("counters=%d", incrKeys),
				threadsParam(c, []int{8})}
		},
		Run: runIncr,
	})
}

// runIncr increments, then checks for lost updates: the sum of the counters must be at least the increments
// acknowledged and at most those plus the ones that failed (a failed increment may have been applied).
func runIncr(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("incr", threads)
	var acked, failed atomic.Int64
	inc := Phase{Name: "incr", Threads: threads, Ops: r.Cfg.Operations, Needs: driver.CapIncr,
		Op: func(w *Worker, i int64) Outcome {
			_, err := w.d.(driver.Counter).Incr(w.ctx, table, "c"+strconv.Itoa(w.R.IntN(incrKeys)))
			if err != nil {
				failed.Add(1)
			} else {
				acked.Add(1)
			}
			return Outcome{Kind: "incr", Err: err}
		}}
	if err := r.Phase(ctx, inc); err != nil {
		return err
	}
	check := Phase{Name: "check", Threads: 1, Ops: 1, Needs: driver.CapIncr,
		Op: func(w *Worker, _ int64) Outcome {
			sum := int64(0)
			for k := 0; k < incrKeys; k++ {
				v, found, err := w.d.Get(w.ctx, table, "c"+strconv.Itoa(k))
				if err != nil {
					return Outcome{Kind: "check", Err: err}
				}
				if !found {
					continue
				}
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil {
					return Outcome{Kind: "check", Fail: fmt.Sprintf("%s/c%d holds %q, not a number", table, k, v)}
				}
				sum += n
			}
			if a, f := acked.Load(), failed.Load(); sum < a || sum > a+f {
				return Outcome{Kind: "check", Fail: fmt.Sprintf("counters sum to %d after %d acknowledged and %d failed increments: lost or invented updates", sum, a, f)}
			}
			return Outcome{Kind: "check"}
		}}
	return r.Phase(ctx, check)
}
