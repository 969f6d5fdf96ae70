package workload

import (
	"context"
	"fmt"

	"anykv/internal/bench/driver"
	"anykv/internal/bench/gen"
)

// ycsbSpec is a YCSB core workload (the workloads/workload[a-f] property
// files with their CoreWorkload defaults: fieldcount=10, fieldlength=100,
// constant field length, readallfields=true, insertorder=hashed,
// maxscanlength=100 with uniform scan lengths).
type ycsbSpec struct {
	name                           string
	summary                        string
	read, update, insert, scan, rw float64
	dist                           string // zipfian, uniform, latest
}

const (
	ycsbFieldCount  = 10
	ycsbFieldLength = 100
	ycsbMaxScan     = 100
	// Prefix scans stand in for YCSB's range scans: the scan reads keys
	// sharing the start key's first two digits, up to the scan length.
	ycsbScanPrefix = len("user") + 2
)

func init() {
	for _, s := range []ycsbSpec{
		{name: "ycsb-a", summary: "update heavy: 50% read, 50% update, zipfian", read: .5, update: .5, dist: "zipfian"},
		{name: "ycsb-b", summary: "read mostly: 95% read, 5% update, zipfian", read: .95, update: .05, dist: "zipfian"},
		{name: "ycsb-c", summary: "read only: 100% read, zipfian", read: 1, dist: "zipfian"},
		{name: "ycsb-d", summary: "read latest: 95% read, 5% insert, latest", read: .95, insert: .05, dist: "latest"},
		{name: "ycsb-e", summary: "short ranges: 95% scan (1-100 keys), 5% insert, zipfian", scan: .95, insert: .05, dist: "zipfian"},
		{name: "ycsb-f", summary: "read-modify-write: 50% read, 50% read-modify-write, zipfian", read: .5, rw: .5, dist: "zipfian"},
	} {
		s := s
		register(&Workload{
			Name: s.name, Summary: s.summary, DefaultThreads: []int{4},
			Params: func(c Config) []string {
				return []string{
					fmt.Sprintf("recordcount=%d", c.Records), fmt.Sprintf("operationcount=%d", c.Operations),
					fmt.Sprintf("readproportion=%g", s.read), fmt.Sprintf("updateproportion=%g", s.update),
					fmt.Sprintf("insertproportion=%g", s.insert), fmt.Sprintf("scanproportion=%g", s.scan),
					fmt.Sprintf("readmodifywriteproportion=%g", s.rw), "requestdistribution=" + s.dist,
					fmt.Sprintf("fieldcount=%d", ycsbFieldCount), fmt.Sprintf("fieldlength=%d", ycsbFieldLength),
					fmt.Sprintf("valuesize=%d", ycsbValueSize(c)), fmt.Sprintf("maxscanlength=%d", ycsbMaxScan),
					threadsParam(c, []int{4}),
				}
			},
			Run: s.run,
		})
	}
}

// ycsbValueSize is one record: fieldcount x fieldlength bytes, stored as
// one value (updates rewrite the whole record).
func ycsbValueSize(c Config) int {
	if c.ValueSize > 0 {
		return c.ValueSize
	}
	return ycsbFieldCount * ycsbFieldLength
}

func (s ycsbSpec) run(ctx context.Context, r *Runner, threads int) error {
	table := r.Table("usertable", threads)
	size := ycsbValueSize(r.Cfg)
	lc := newLoadCount("load")
	if err := r.Phase(ctx, Phase{Name: "load", Threads: threads, Ops: r.Cfg.Records,
		Op: func(w *Worker, i int64) Outcome { return lc.count(i, w.Put("insert", table, gen.YCSBKey(i), size)) },
	}); err != nil {
		return err
	}
	// YCSB loads every record; --duration may not have, so the run phase
	// addresses only the records loaded.
	records := r.loaded(lc, threads, r.Cfg.Records)
	var needs driver.Caps
	if s.scan > 0 {
		needs = driver.CapScan
	}
	run := Phase{Name: "run", Threads: threads, Ops: r.Cfg.Operations, Needs: needs}
	if records == 0 {
		r.skip(run, "no record was loaded, phase skipped")
		return nil
	}
	var loadedIn map[string]int64
	if s.scan > 0 {
		loadedIn = loadedByPrefix(r.tracker, table, records)
	}
	counter := gen.NewCounter(records)
	expectedNew := int64(float64(r.Cfg.Operations) * s.insert * 2)
	return r.Phase(ctx, Phase{Name: run.Name, Threads: threads, Ops: run.Ops, Needs: needs,
		Init: func(w *Worker) {
			var c gen.Chooser
			switch s.dist {
			case "uniform":
				c = gen.Uniform{Min: 0, Max: records - 1}
			case "latest":
				c = gen.NewLatest(counter)
			default:
				c = gen.NewScrambledZipfian(0, records+expectedNew-1)
			}
			w.State = gen.Bounded{Inner: c, C: counter}
		},
		Op: func(w *Worker, i int64) Outcome {
			keys := w.State.(gen.Bounded)
			x := w.R.Float64()
			switch {
			case x < s.read:
				return w.GetLoaded("read", table, gen.YCSBKey(keys.Next(w.R)))
			case x < s.read+s.update:
				return w.Put("update", table, gen.YCSBKey(keys.Next(w.R)), size)
			case x < s.read+s.update+s.insert:
				// Acknowledged even when it failed, as YCSB does: otherwise
				// one failed insert would freeze the key window for good.
				id := counter.Next()
				o := w.Put("insert", table, gen.YCSBKey(id), size)
				counter.Ack(id)
				return o
			case x < s.read+s.update+s.insert+s.scan:
				start := gen.YCSBKey(keys.Next(w.R))
				n := 1 + w.R.IntN(ycsbMaxScan)
				prefix := start[:min(len(start), ycsbScanPrefix)]
				return w.ScanAtLeast("scan", table, prefix, n, min(int64(n), loadedIn[prefix]))
			default:
				key := gen.YCSBKey(keys.Next(w.R))
				return Then("rmw", w.GetLoaded("read", table, key), func() Outcome { return w.Put("update", table, key, size) })
			}
		},
	})
}

// loadedByPrefix counts, per scan prefix, the first records loaded records
// that are certainly present (inserted without error). ycsb-e never
// deletes, so a scan of a prefix must return at least min(limit, count).
// Computed between phases, off the clock.
func loadedByPrefix(t *Tracker, table string, records int64) map[string]int64 {
	counts := map[string]int64{}
	for i := int64(0); i < records; i++ {
		key := gen.YCSBKey(i)
		if ks, ok := t.peek(table, key); ok && ks.present && !ks.uncertain && len(key) >= ycsbScanPrefix {
			counts[key[:ycsbScanPrefix]]++
		}
	}
	return counts
}
