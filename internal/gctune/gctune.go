// Package gctune gives the Go collector a floor under its heap goal. anykv's live heap is small (the block
// cache is Pebble's own memory, off the Go heap), a few MiB under load, so with GOGC's default the collector ran
// every time a few MiB were allocated: 15 times a second under a SET load, its cycles' fixed costs (stacks,
// globals, the mark's share of the one P) a tenth of durable SET's throughput at pipeline 16 (docs/benchmarks.md).
//
// The floor is a ballast: one allocation of Ballast bytes, never read or written, kept for the process's life.
// The collector counts it as live, so the goal is GOGC's proportion of (live heap + Ballast): at most Ballast
// bytes more garbage than without it, whatever the live heap does. It holds no pointers (nothing to mark), and
// pages never touched are not resident: the process's memory grows by the garbage the goal allows, not by the
// ballast. (Setting the GC percentage from the live heap after each collection, tried first, lags: the goal of
// the cycle after a jump of the live heap comes from the percentage made for the small heap before, and a test
// whose clients filled 256 MiB of buffers at once saw 900 MiB of RSS where 550 MiB is usual.)
package gctune

import "sync"

// Ballast is the bytes Start holds.
const Ballast = 64 << 20

var (
	once    sync.Once
	ballast []byte
)

// Start allocates the ballast (once).
func Start() {
	once.Do(func() { ballast = make([]byte, Ballast) })
}

// Held is the ballast's bytes once Start ran (0 before): memory figures built on the runtime's heap statistics
// subtract it.
func Held() uint64 { return uint64(len(ballast)) }
