package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
	"anykv/internal/bench/failover"
	"anykv/internal/bench/report"
	"anykv/internal/bench/workload"
)

const failoverSummary = "each client writes unique values to its own keys and reads them (half and half) while a node is killed (SIGKILL) and restarted; then every key is read back"

// killOptions are the parsed --kill and --kill-target flags.
type killOptions struct {
	every, down time.Duration
	front       bool // kill anykv front ends instead of datastore nodes
}

// parseKill parses --kill every=D[,down=D] and --kill-target datastore|front.
func parseKill(spec, target string) (*killOptions, error) {
	k := &killOptions{}
	for _, part := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		d, err := time.ParseDuration(val)
		if !ok || err != nil || d <= 0 {
			return nil, fmt.Errorf("--kill: %q is not every=DURATION or down=DURATION", part)
		}
		switch name {
		case "every":
			k.every = d
		case "down":
			k.down = d
		default:
			return nil, fmt.Errorf("--kill: unknown setting %q (every, down)", name)
		}
	}
	if k.every == 0 {
		return nil, fmt.Errorf("--kill: every=DURATION is required, e.g. --kill every=10s")
	}
	if k.down == 0 {
		k.down = k.every / 2
	}
	switch target {
	case "datastore":
	case "front":
		k.front = true
	default:
		return nil, fmt.Errorf("--kill-target: %q is neither datastore nor front", target)
	}
	return k, nil
}

// killDefaults fills the load's defaults: 4 clients, 100-byte values, and a run of 4 × every, which holds 3 kills.
func (o *options) killDefaults() {
	if len(o.threads) == 0 {
		o.threads = []int{4}
	}
	if o.valueSize == 0 {
		o.valueSize = 100
	}
	if o.duration == 0 {
		o.duration = 4 * o.kill.every
	}
}

func (b *bencher) killParams() []string {
	k := b.o.kill
	what := "datastore node"
	if k.front {
		what = "anykv front end"
	}
	return []string{fmt.Sprintf("kill a random %s every %v, down %v", what, k.every, k.down),
		fmt.Sprintf("clients=%d", b.o.threads[0]), fmt.Sprintf("keys=%d", b.o.records),
		fmt.Sprintf("value-size=%d", b.o.valueSize), fmt.Sprintf("duration=%v", b.o.duration), fmt.Sprintf("timeout=%v", b.o.timeout)}
}

// runKill runs the failover load on one target, killing its nodes, and returns its table row.
func (b *bencher) runKill(ctx context.Context, t *report.Target, d driver.Driver, nodes []deploy.Node) []*workload.Result {
	k := b.o.kill
	if len(nodes) == 0 {
		what := "datastore nodes"
		if k.front {
			what = "anykv front ends"
		}
		t.Skipped = fmt.Sprintf("--kill: %s has no %s to kill", t.Name, what)
		b.notice(t.Name + ": " + t.Skipped)
		return nil
	}
	res := failover.Run(ctx, d, nodes, failover.Config{Target: t.Name, Clients: b.o.threads[0], Keys: int(b.o.records),
		ValueSize: b.o.valueSize, Duration: b.o.duration, Every: k.every, Down: k.down, Timeout: b.o.timeout,
		Seed: b.o.seed, Table: "failover_" + b.runID, Notice: b.notice})
	res.KillTarget = "datastore"
	if k.front {
		res.KillTarget = "front"
	}
	b.failovers = append(b.failovers, res)
	return []*workload.Result{res.Row}
}
