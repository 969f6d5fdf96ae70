// Package readyield decides whether a connection yields the processor before its next read, so that the read
// finds its client's next request instead of failing with EAGAIN and parking in Go's netpoller.
//
// A request-response client (pipeline 1) sends its next request a round trip after its reply. A connection that
// reads right after replying finds nothing: Go's read makes a system call that returns EAGAIN, parks the
// goroutine, and the netpoller wakes it later for a second read. Yielding first lets the other connections run;
// by its turn the request is usually there, and one read takes it (docs/benchmarks.md has the figures).
//
// Only when Go runs on one core (GOMAXPROCS=1), where the gain was measured: with more, idle processors poll the
// network themselves, and each yield takes the scheduler's global lock.
//
// The catch is fairness. Go polls the network only when its run queues are empty, and connections that keep
// yielding keep them busy: those parked in the netpoller starved until sysmon's 10 ms poll (GET at pipeline 1:
// p99 from 0.9 to 1.5 ms, p99.9 from 1 to 4 ms). So connections yield only while the netpoller has woken one
// lately: once no read has come back from parking for maxStarve, they read without yielding, the run queues
// drain, and Go polls the network.
package readyield

import (
	"runtime"
	"sync/atomic"
	"time"
)

const (
	// parkedRead is how long a read must take to count as one that parked and was woken by the netpoller: a
	// read that finds data returns within a few microseconds.
	parkedRead = 20 * time.Microsecond
	// smallRead bounds the bytes of a read that counts as a wake-up: copying a big request takes as long as
	// parking, and a stream of them would keep connections yielding with the netpoller never run.
	smallRead = 16 << 10
	// maxStarve bounds how long yielding connections keep the netpoller from running.
	maxStarve = 200 * time.Microsecond
	// grain is how much later a wake-up must be than the one recorded to be written: the time is shared by every
	// connection, and on many cores a line written at every wake-up would be one they all contend for.
	grain = 10 * time.Microsecond
	// coresEvery is how often the core count is read again (runtime.GOMAXPROCS takes the scheduler's lock).
	coresEvery = 100 * time.Millisecond
)

// epoch anchors the monotonic clock readings kept as integers.
var epoch = time.Now()

// woken is Now at the latest read that returned from parking; the netpoller is process-wide, so is this.
var woken atomic.Int64

// Now is the monotonic time in nanoseconds, the argument of Read and Yield.
func Now() int64 { return int64(time.Since(epoch)) }

// At is t as Now would have said then: a caller that reads the clock anyway need not read it twice.
func At(t time.Time) int64 { return int64(t.Sub(epoch)) }

// single says whether Go runs on one core, as read from the runtime at coresAt (from Now).
var (
	single  atomic.Bool
	coresAt atomic.Int64
)

// onOneCore reports whether Go runs on one core at now, reading the runtime's setting at most every coresEvery.
func onOneCore(now int64) bool {
	if now-coresAt.Load() >= int64(coresEvery) {
		coresAt.Store(now)
		single.Store(runtime.GOMAXPROCS(0) == 1)
	}
	return single.Load()
}

// Read records a connection's read of n bytes that began at start and ended at end (both from Now).
func Read(start, end int64, n int) {
	if end-start >= int64(parkedRead) && n <= smallRead && end-woken.Load() >= int64(grain) && onOneCore(end) {
		woken.Store(end)
	}
}

// Yield reports whether a connection about to read at now (from Now) should yield first: whether the netpoller
// woke a connection within maxStarve.
func Yield(now int64) bool { return now-woken.Load() < int64(maxStarve) }
