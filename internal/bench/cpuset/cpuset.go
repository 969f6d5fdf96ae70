// Package cpuset parses CPU lists ("0", "0-1", "0,2-3") and pins processes
// to them, so a server and its load generator each get their own cores.
package cpuset

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxCPU bounds the CPU numbers a list may name (the size of a CPUSet).
const maxCPU = 1024

// Parse reads a list like taskset -c takes: comma-separated CPU numbers and
// ranges. It returns the CPUs sorted without duplicates.
func Parse(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("%q is not a CPU number or range like 0-3", part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty CPU list %q", s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// String formats cpus as a list Parse and taskset -c accept.
func String(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// PinSelf restricts every thread of this process to cpus and sets
// GOMAXPROCS to their number. Affinity is per thread in Linux and new
// threads inherit their creator's, so it pins each thread listed in
// /proc/self/task, repeating until a pass finds no thread it had not seen.
func PinSelf(cpus []int) error {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			done[tid] = true
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin to CPUs %s: %w", String(cpus), err)
			}
		}
		if fresh == 0 {
			break
		}
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}

// Allowed returns the CPUs process pid may run on (its main thread's
// Cpus_allowed_list in /proc/PID/status); pid 0 means this process.
func Allowed(pid int) ([]int, error) {
	p := "/proc/self/status"
	if pid != 0 {
		p = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return Parse(strings.TrimSpace(v))
		}
	}
	return nil, fmt.Errorf("%s has no Cpus_allowed_list", p)
}
