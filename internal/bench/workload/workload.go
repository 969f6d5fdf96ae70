// Package workload defines the bench's workloads (YCSB A-F, AppScale,
// Active Cloud DB, VoltCache's ratio sweep, the NoSQL evaluation, kv739)
// and runs their phases closed- or open-loop against a driver, checking
// every answer for wrong or stale data.
package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Workload is a named sequence of phases, run once per thread count.
type Workload struct {
	Name           string
	Summary        string
	DefaultThreads []int
	// Params lists the effective parameters for the report.
	Params func(c Config) []string
	// Run runs every phase at the given thread count.
	Run func(ctx context.Context, r *Runner, threads int) error
}

var registry = map[string]*Workload{}

func register(w *Workload) { registry[w.Name] = w }

// All returns every workload, sorted by name.
func All() []*Workload {
	var out []*Workload
	for _, w := range registry {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a workload by name.
func Lookup(name string) (*Workload, bool) {
	w, ok := registry[name]
	return w, ok
}

// Expand parses a comma-separated workload list; "ycsb" means ycsb-a to
// ycsb-f and "all" means every workload.
func Expand(spec string) ([]*Workload, error) {
	var out []*Workload
	seen := map[string]bool{}
	add := func(w *Workload) {
		if !seen[w.Name] {
			seen[w.Name] = true
			out = append(out, w)
		}
	}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			continue
		case "all":
			for _, w := range All() {
				add(w)
			}
		case "ycsb":
			for _, c := range "abcdef" {
				add(registry["ycsb-"+string(c)])
			}
		default:
			w, ok := registry[name]
			if !ok {
				return nil, fmt.Errorf("unknown workload %q (known: %s, ycsb, all)", name, strings.Join(Names(), ", "))
			}
			add(w)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no workload given")
	}
	return out, nil
}

// Names lists workload names, sorted.
func Names() []string {
	var n []string
	for _, w := range All() {
		n = append(n, w.Name)
	}
	return n
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// threadsParam prints the thread counts a workload runs at.
func threadsParam(c Config, def []int) string {
	if len(c.Threads) > 0 {
		return "threads=" + joinInts(c.Threads)
	}
	return "threads=" + joinInts(def)
}
