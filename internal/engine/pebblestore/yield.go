package pebblestore

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Flushes and compactions make way for the connections. They write their sstables (and blob files) in blocks of
// 4 KiB between stretches of CPU (encoding, compressing, merging), and with one P (GOMAXPROCS=1) one would hold
// it for the scheduler's 10 ms slice. Before each block they yield:
//   - runtime.Gosched: the goroutines already runnable go first (the writer, the connections its commits woke);
//   - every parkEvery of writing, a park of parkFor, while L0 is not behind (fewer than parkL0 tables). Gosched
//     alone does not let a connection whose next request has arrived run: the scheduler looks at the network
//     only when no goroutine is runnable, and the flush, back in the run queue at once, always is, so the
//     requests waited for the runtime's monitor thread, which then polls every 10 ms. Parked, the flush leaves
//     the run queue empty once the connections ran, the scheduler polls, and what arrived is served. SET at
//     pipeline 16: p99 13 → 6 ms (docs/benchmarks.md). A park costs the flush up to a millisecond when nothing
//     else runs (Go's shortest wait for the network), so flushes and compactions run at least at half speed on
//     an idle server; and while compactions are behind (L0 at parkL0 tables) they do not park, so that they
//     catch up before Pebble stops writes (a million-key SET load stalled on L0 when they always parked), nor
//     while Pebble stops writes (its memtables or L0 full), nor while Close waits for them.
//
// With more than one P, an idle P polls the network, and nothing parks.
const (
	parkEvery = time.Millisecond
	parkFor   = 200 * time.Microsecond
	parkL0    = 8 // Pebble compacts L0 from 4 sublevels and stops writes at 12
)

// yielder counts L0's tables from Pebble's events, for the parks (see above), and knows when Pebble stalls writes.
type yielder struct {
	l0      atomic.Int64
	stalled atomic.Bool // Pebble stops writes (memtables or L0 full): flushes and compactions run flat out
	closing atomic.Bool // Close waits for them: no connection is served any more
	parks   atomic.Int64
}

// listen adds the yielder's counting to el (after the store's own handlers, which it calls); flushed is called
// by the FlushEnd handler the store sets.
func (y *yielder) listen(el *pebble.EventListener) {
	begin, end := el.WriteStallBegin, el.WriteStallEnd
	el.WriteStallBegin = func(info pebble.WriteStallBeginInfo) {
		y.stalled.Store(true)
		if begin != nil {
			begin(info)
		}
	}
	el.WriteStallEnd = func() {
		y.stalled.Store(false)
		if end != nil {
			end()
		}
	}
	el.CompactionEnd = func(info pebble.CompactionInfo) {
		if info.Err != nil {
			return
		}
		for _, in := range info.Input {
			if in.Level == 0 {
				y.add(-int64(len(in.Tables)))
			}
		}
		if info.Output.Level == 0 {
			y.add(int64(len(info.Output.Tables)))
		}
	}
	el.TableIngested = func(info pebble.TableIngestInfo) {
		if info.Err != nil {
			return
		}
		for _, t := range info.Tables {
			if t.Level == 0 {
				y.add(1)
			}
		}
	}
}

// flushed counts a flush's tables: a memtable's go to L0, a flushable ingest's to the levels it names.
func (y *yielder) flushed(info pebble.FlushInfo) {
	if info.Err != nil {
		return
	}
	if !info.Ingest {
		y.add(int64(len(info.Output)))
		return
	}
	for _, l := range info.IngestLevels {
		if l == 0 {
			y.add(1)
		}
	}
}

func (y *yielder) add(n int64) {
	if v := y.l0.Add(n); v < 0 { // an event missed: never below none
		y.l0.CompareAndSwap(v, 0)
	}
}

// yield is called before each block a flush or compaction writes; parked is when this file's writer last parked.
func (y *yielder) yield(parked *time.Time) {
	if y == nil || y.l0.Load() >= parkL0 || y.stalled.Load() || y.closing.Load() || runtime.GOMAXPROCS(0) > 1 {
		runtime.Gosched()
		return
	}
	now := time.Now()
	if parked.IsZero() {
		*parked = now
	}
	if now.Sub(*parked) < parkEvery {
		runtime.Gosched()
		return
	}
	time.Sleep(parkFor)
	y.parks.Add(1)
	*parked = time.Now()
}
