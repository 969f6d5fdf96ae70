// Package pipeline holds the one piece of request machinery the Redis and memcached front ends share: a batch that
// gathers the mutations of consecutive pipelined requests on one connection, so they commit as one engine batch
// (one fsync for a whole pipeline), and then hands each request its own results in request order.
//
// A front end adds a request's mutations with Add and then registers the request with Plan; the request owns every
// mutation added since the previous Plan (none for a request answered in order without touching the engine). The
// front end applies Muts however it must (kv.Store.Apply, a transaction, a read-only shortcut) and calls Answer with
// the outcome. The batch is used by one connection's goroutine only.
package pipeline

import (
	"errors"

	"anykv/internal/engine"
)

// Batch is the pending work of one connection: mutations and, in order, the requests waiting for them. R is the
// front end's per-request record (what it needs to write the reply).
type Batch[R any] struct {
	muts []engine.Mutation
	reqs []planned[R]
}

type planned[R any] struct {
	req   R
	start int // the request's mutations are muts[start:end]
	end   int
}

// Add appends a mutation of the request being built.
func (b *Batch[R]) Add(m engine.Mutation) { b.muts = append(b.muts, m) }

// Next appends a zero mutation of the request being built and returns it to be filled in place, valid until
// the next Add or Next: a mutation is 352 bytes, and Add's copy of one built on the stack was 5% of a pipelined
// GET's CPU.
func (b *Batch[R]) Next() *engine.Mutation {
	b.muts = append(b.muts, engine.Mutation{})
	return &b.muts[len(b.muts)-1]
}

// Plan registers a request, which owns the mutations added since the previous Plan.
func (b *Batch[R]) Plan(req R) { *b.PlanNext() = req }

// PlanNext registers a request like Plan and returns its zero record to be filled in place, valid until the
// next Plan or PlanNext.
func (b *Batch[R]) PlanNext() *R {
	b.reqs = append(b.reqs, planned[R]{start: b.planned(), end: len(b.muts)})
	return &b.reqs[len(b.reqs)-1].req
}

// planned is how many mutations belong to registered requests.
func (b *Batch[R]) planned() int {
	if len(b.reqs) == 0 {
		return 0
	}
	return b.reqs[len(b.reqs)-1].end
}

// Last returns the request registered last (nil if none), for a front end that amends it after Plan.
func (b *Batch[R]) Last() *R {
	if len(b.reqs) == 0 {
		return nil
	}
	return &b.reqs[len(b.reqs)-1].req
}

// Rewrite replaces the last request's mutations from index from (an index into Muts) with what fn returns for
// them, for a front end that wraps a request's mutations after Plan (Redis brackets them with reads for keyspace
// events).
func (b *Batch[R]) Rewrite(from int, fn func(own []engine.Mutation) []engine.Mutation) {
	last := &b.reqs[len(b.reqs)-1]
	if from < last.start {
		panic("pipeline: Rewrite before the last request's mutations")
	}
	b.muts = append(b.muts[:from], fn(b.muts[from:])...)
	last.end = len(b.muts)
}

// Muts is the batch's mutations in order; the front end may change their fields (not their number) before it
// applies them.
func (b *Batch[R]) Muts() []engine.Mutation { return b.muts }

// Len is the number of requests waiting for their replies.
func (b *Batch[R]) Len() int { return len(b.reqs) }

// Fits reports whether n more mutations keep the batch within max (a batch that is empty always takes them: one
// request's mutations stay together).
func (b *Batch[R]) Fits(n, max int) bool { return len(b.muts) == 0 || len(b.muts)+n <= max }

// AnswerEach applies each request's mutations as a batch of its own (apply) and answers it at once, in order, as
// Answer would, then empties the batch: for a pipeline of independent requests that the engine refused as one
// batch for its size (engine.ErrBatchTooBig), so that only a request too big by itself fails.
func (b *Batch[R]) AnswerEach(apply func([]engine.Mutation) ([]engine.Result, error),
	reply func(req *R, res []engine.Result, muts []engine.Mutation, err error)) {
	for i := range b.reqs {
		p := &b.reqs[i]
		own := b.muts[p.start:p.end]
		var res []engine.Result
		var err error
		if len(own) > 0 {
			if res, err = apply(own); errors.Is(err, engine.ErrAborted) {
				res, err = make([]engine.Result, len(own)), nil
				for i := range res {
					res[i].Err = engine.ErrAborted
				}
			}
		}
		reply(&p.req, res, own, err)
	}
	b.Reset()
}

// Answer calls reply for each request in order with its results and mutations, then empties the batch. err is a
// failure of the whole batch: every request that owns a mutation gets it instead of results (reply decides what a
// request without mutations answers). A batch aborted by a guard (engine.ErrAborted: nothing was applied) is
// answered per request, each of its mutations failing with ErrAborted, so a command whose guard failed and one
// that merely shared its batch tell themselves apart.
func (b *Batch[R]) Answer(res []engine.Result, err error, reply func(req *R, res []engine.Result, muts []engine.Mutation, err error)) {
	if errors.Is(err, engine.ErrAborted) {
		res = make([]engine.Result, len(b.muts))
		for i := range res {
			res[i].Err = engine.ErrAborted
		}
		err = nil
	}
	for i := range b.reqs {
		p := &b.reqs[i]
		var own []engine.Result
		if err == nil && p.end > p.start {
			own = res[p.start:p.end]
		}
		reply(&p.req, own, b.muts[p.start:p.end], err)
	}
	b.Reset()
}

// Reset empties the batch without answering, dropping its references to request buffers.
func (b *Batch[R]) Reset() {
	clear(b.muts)
	b.muts = b.muts[:0]
	clear(b.reqs)
	b.reqs = b.reqs[:0]
}
