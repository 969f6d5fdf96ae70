package pebblestore

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// Pipelined commits (SyncAlways). The writer does not wait for a group's fsync before it resolves the next group:
// it applies the group's batch with ApplyNoSyncWait (visible, WAL write and sync requested), hands the batch and
// the group's requests to the syncer goroutine, and goes on. The syncer waits for each group's fsync in commit
// order, takes the group out of the in-flight set and only then answers its requests. So the CPU resolves group
// N+1 (reads included) while group N's fsync runs, instead of idling through every fsync, and Pebble's WAL syncs
// several queued groups at once.
//
// Every group goes through the syncer while groups are in flight, a group that writes nothing included: its
// reads may have seen an earlier group's writes, which must be durable before anyone is told (observed ⇒
// durable). Groups are answered in commit order.

// maxInFlight bounds the groups committed but not yet durable (Options.maxInFlight overrides it in tests): past it
// the writer takes no more requests until the oldest is durable, and they queue up for the next group.
const maxInFlight = 4

// inFlightBound is the bound the writer applies: maxInFlight, or 1 when Go runs on one core (GOMAXPROCS=1). On
// one core the writer's resolution takes the CPU from the connections anyway, so resolving the next group during
// an fsync gains nothing there, and groups taken then are small: each costs an fsync of its own (~125 µs of the
// core's time in the kernel here) and a commit. Waiting for the fsync halves the groups (GET:SET 10:1 at pipeline
// 16: 1,709 groups/s of 10 requests against 895 of 22) and gains 12% there (docs/benchmarks.md); with two cores the
// overlap gains durable SETs 7-10%, so more cores keep it.
func inFlightBound(opt int) int {
	switch {
	case opt > 0:
		return opt
	case runtime.GOMAXPROCS(0) == 1:
		return 1
	}
	return maxInFlight
}

// landing is one group on its way to the syncer.
type landing struct {
	g    *group
	pb   *pebble.Batch // nil when the group wrote nothing; closed by the syncer after its fsync
	reqs []*request    // the group's requests, answered once it is durable
	err  error         // a commit error: every request that has no error of its own gets it
}

// publish adds g to the set of groups in flight.
func (s *Store) publish(g *group) {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	old := *s.inflight.Load()
	next := make([]*group, 0, len(old)+1)
	next = append(append(next, old...), g)
	s.inflight.Store(&next)
}

// land takes g out of the set of groups in flight (it is durable).
func (s *Store) land(g *group) {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	old := *s.inflight.Load()
	next := make([]*group, 0, len(old))
	for _, x := range old {
		if x != g {
			next = append(next, x)
		}
	}
	s.inflight.Store(&next)
}

// syncer answers the groups the writer committed, in order, each once its fsync returned.
func (s *Store) syncer(in <-chan landing, slots <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for l := range in {
		s.landOne(l)
		<-slots // the writer may take one more group
	}
}

// landOne waits for one group's fsync, then answers its requests.
func (s *Store) landOne(l landing) {
	err := l.err
	if l.pb != nil {
		if serr := l.pb.SyncWait(); serr != nil && err == nil {
			// Not expected (Pebble fails the WAL for good): the group's writes are in the memtable, perhaps not on
			// disk, so they may be read and flushed, or lost with the process. Its requests are told the outcome
			// is unknown (never "not applied": EXEC would say "discarded"), and every later write is refused.
			refusal := fmt.Errorf("pebblestore: commit: %w", serr)
			s.failed.Store(&refusal)
			err = fmt.Errorf("pebblestore: %w: the WAL's sync failed: %w", engine.ErrUnknownOutcome, serr)
			s.log.Error("commit sync failed; the store refuses further writes", "err", serr)
		}
		s.fsyncs.Add(1)
		l.pb.Close()
	}
	if l.g != nil {
		l.g.err = err
		if err == nil {
			s.land(l.g) // a failed group stays published: readers of its keys get the error
		}
		close(l.g.done)
	}
	answer(l.reqs, err)
}

// answer tells each taken request its outcome; err, a failure of the whole group, replaces a request's results.
func answer(reqs []*request, err error) {
	for _, r := range reqs {
		if err != nil && (r.err == nil || errors.Is(r.err, engine.ErrAborted)) {
			r.err, r.results, r.removed = err, nil, 0
		}
		close(r.done)
	}
}
