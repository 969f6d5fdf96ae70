package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
	"anykv/internal/bench/hist"
	"anykv/internal/bench/workload"
)

// Config is one failover run.
type Config struct {
	Target    string
	Clients   int           // concurrent clients, one goroutine each
	Keys      int           // keys in all, split among the clients (each owns its own)
	ValueSize int           // bytes per value
	Duration  time.Duration // load time
	Every     time.Duration // a kill every Every from the start, while within Duration
	Down      time.Duration // how long a killed node stays down
	Timeout   time.Duration // one request
	Seed      uint64
	Table     string
	Notice    func(string)
}

// Kill is one node crash of a run.
type Kill struct {
	Node string        `json:"node"`
	At   time.Duration `json:"at_ns"` // SIGKILL, since the run began
	Up   time.Duration `json:"up_ns"` // restarted and accepting connections again
	Err  string        `json:"error,omitempty"`
}

// Result is what one failover run measured.
type Result struct {
	Target      string           `json:"target"`
	KillTarget  string           `json:"kill_target"` // "datastore" or "front"
	Kills       []Kill           `json:"kills"`
	Elapsed     time.Duration    `json:"elapsed_ns"`
	Requests    int64            `json:"requests"`
	Failed      int64            `json:"failed"`
	Acked       int64            `json:"acked_writes"`
	Lost        int64            `json:"lost_writes"`
	Unchecked   int64            `json:"unchecked_keys"`   // keys the read-back could not read
	Losses      []string         `json:"losses,omitempty"` // each lost write: key, what was acknowledged and found
	Backwards   int64            `json:"backwards_reads"`
	Wrong       int64            `json:"wrong_reads"`
	LongestGap  time.Duration    `json:"longest_gap_ns"`
	GapAt       time.Duration    `json:"longest_gap_at_ns"`
	DownRate    float64          `json:"ops_per_sec_down"`
	UpRate      float64          `json:"ops_per_sec_up"`
	DownSeconds float64          `json:"seconds_down"`
	OK, Errs    *hist.Series     `json:"-"` // successful and failed requests over time
	Row         *workload.Result `json:"-"`
}

// Run drives the load against d for cfg.Duration while killing a random node of nodes every cfg.Every, then
// restarts anything still down, reads every key written back through d and accounts for what the clients saw.
func Run(ctx context.Context, d driver.Driver, nodes []deploy.Node, cfg Config) *Result {
	start := time.Now()
	lctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	perClient := make([][]Op, cfg.Clients)
	lat := make([]*hist.H, cfg.Clients)
	for c := range cfg.Clients {
		lat[c] = hist.New()
		wg.Add(1)
		go func() {
			defer wg.Done()
			perClient[c] = client(lctx, d, c, cfg, start, lat[c])
		}()
	}
	killed := make(chan []Kill, 1)
	go func() { killed <- killer(lctx, nodes, cfg, start) }()
	wg.Wait()
	elapsed := time.Since(start)
	kills := <-killed // every node is back before the read-back
	var ops []Op
	h := hist.New()
	for c, o := range perClient {
		ops = append(ops, o...)
		h.Merge(lat[c])
	}
	res := &Result{Target: cfg.Target, Kills: kills, Elapsed: elapsed, Requests: int64(len(ops))}
	res.OK, res.Errs = hist.NewSeries(start, 100*time.Millisecond), hist.NewSeries(start, 100*time.Millisecond)
	var down []Interval
	for _, k := range kills {
		down = append(down, Interval{k.At, k.Up})
	}
	for _, o := range ops {
		switch {
		case o.Err:
			res.Failed++
			res.Errs.Add(start.Add(o.End))
		default:
			res.OK.Add(start.Add(o.End))
			if o.Write {
				res.Acked++
			}
			if o.Wrong {
				res.Wrong++
			}
		}
	}
	res.Backwards = Backwards(ops)
	res.LongestGap, res.GapAt = LongestGap(ops, elapsed)
	res.DownRate, res.UpRate, res.DownSeconds, _ = Throughput(ops, down, elapsed)
	res.Lost, res.Unchecked, res.Losses = Lost(ops, readBack(ctx, d, ops, cfg))
	series := hist.NewSeries(start, 100*time.Millisecond)
	series.Merge(res.OK)
	series.Merge(res.Errs)
	res.Row = &workload.Result{Target: cfg.Target, Workload: "failover", Phase: "run", Threads: cfg.Clients,
		Ops: res.Requests, Errs: res.Failed, Fails: res.Wrong, Elapsed: elapsed, Hist: h, Series: series}
	return res
}

// client runs one client's requests until ctx ends: half writes of unique values, half reads, on its own keys.
func client(ctx context.Context, d driver.Driver, c int, cfg Config, start time.Time, lat *hist.H) []Op {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)))
	n := max(1, cfg.Keys/cfg.Clients)
	var ops []Op
	var seq uint64
	for ctx.Err() == nil {
		key := fmt.Sprintf("c%d-k%d", c, rng.IntN(n))
		o := Op{Client: c, Key: key, Write: rng.IntN(2) == 0}
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		t0 := time.Now()
		o.Start = t0.Sub(start)
		var err error
		if o.Write {
			seq++
			o.Seq = seq
			err = d.Put(octx, cfg.Table, key, Value(c, key, seq, cfg.ValueSize))
		} else {
			var v []byte
			var found bool
			v, found, err = d.Get(octx, cfg.Table, key)
			if err == nil && found {
				o.Seq, found = Parse(v, c, key)
				o.Wrong = !found
			}
		}
		cancel()
		t1 := time.Now()
		o.End, o.Err = t1.Sub(start), err != nil
		if err == nil {
			lat.Record(t1.Sub(t0))
		}
		ops = append(ops, o)
	}
	return ops
}

// killer kills a random node every cfg.Every while ctx lasts, restarts it cfg.Down later, and returns the
// kills once every node killed is back.
func killer(ctx context.Context, nodes []deploy.Node, cfg Config, start time.Time) []Kill {
	var kills []Kill
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
	for i := 1; len(nodes) > 0; i++ {
		at := start.Add(time.Duration(i) * cfg.Every)
		if time.Duration(i)*cfg.Every >= cfg.Duration || !sleepUntil(ctx, at) {
			break
		}
		n := nodes[rng.IntN(len(nodes))]
		k := Kill{Node: n.Name(), At: time.Since(start)}
		if err := n.Kill(); err != nil {
			k.Err = "kill: " + err.Error()
		}
		sleepUntil(context.WithoutCancel(ctx), at.Add(cfg.Down)) // the node comes back even after the load ends
		if err := n.Restart(context.WithoutCancel(ctx)); err != nil {
			k.Err += "restart: " + err.Error()
			cfg.Notice(fmt.Sprintf("%s: --kill: %s did not come back: %v", cfg.Target, k.Node, err))
		}
		k.Up = time.Since(start)
		kills = append(kills, k)
	}
	return kills
}

// sleepUntil waits until t; false when ctx ended first, or had ended when t had already passed (a kill whose
// time passed while the previous node was restarting must not happen after the load).
func sleepUntil(ctx context.Context, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// readBack reads every key written once all nodes are back, retrying each key for up to a minute in all: the
// datastore may still be electing a leader or failing over.
func readBack(ctx context.Context, d driver.Driver, ops []Op, cfg Config) map[string]Final {
	owner := map[string]int{}
	for _, o := range ops {
		if o.Write {
			owner[o.Key] = o.Client
		}
	}
	keys := make([]string, 0, len(owner))
	for k := range owner {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	final := map[string]Final{}
	deadline := time.Now().Add(time.Minute)
	for _, k := range keys {
		for ctx.Err() == nil {
			octx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			v, found, err := d.Get(octx, cfg.Table, k)
			cancel()
			if err == nil {
				f := Final{Read: true}
				if found {
					f.Seq, _ = Parse(v, owner[k], k) // a value not written here reads as seq 0: lost
				}
				final[k] = f
				break
			}
			if time.Now().After(deadline) {
				break
			}
			sleepUntil(ctx, time.Now().Add(50*time.Millisecond))
		}
	}
	return final
}
