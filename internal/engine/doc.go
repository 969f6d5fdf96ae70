// Package engine defines what anykv stores and how: the Item, the Mutation (every write as a value), the
// Resolve function that gives each mutation its meaning, the sentinel errors, and the small Engine interface
// that every storage backend implements, with optional abilities as separate interfaces.
//
// # The engine contract
//
// This is everything an engine author must honour and everything a caller may rely on. The conformance suite
// (package enginetest) checks each promise below that a test can observe; an adapter that passes it with
// enginetest.Run, declaring its abilities, is a correct engine.
//
// Meaning. An engine does not interpret mutations itself: it reads the items a batch touches, calls Resolve,
// and carries out the returned Writes atomically (see Scope for the one exception). So INCR's overflow rule, APPEND's size bound, guards and
// conditions mean the same on every engine. An engine differs only in how it reads, how it makes a batch atomic
// and durable, and how it allocates versions.
//
// Concurrency. Every method of Engine and of the optional interfaces is safe for concurrent use from any
// goroutine. Batches are serializable: each Apply behaves as if it ran alone at some instant between its call
// and its return, and a Get observes either all or none of a batch's writes. No method calls back into the
// caller except Scan's fn, which runs on the calling goroutine and must not call the engine (some engines hold
// a lock during the walk).
//
// Scope. An engine applies a batch over any number of items, unless its datastore changes only one item
// atomically (memcached): such an engine says so (ItemScoper, the SingleItem bit of AbilitiesOf) and Apply
// refuses, applying nothing, every batch that reads or writes more than one item or flushes, with an error
// wrapping ErrNotSupported that names the engine. It never applies such a batch piecewise. Its batches of one
// item keep every other promise here.
//
// Blocking. Get, Apply, Scan, Tables and Sweep may block on I/O, on a network round trip or on a group commit;
// they honour ctx: if ctx ends before a batch is taken for commit, Apply applies nothing and returns ctx's error;
// once taken, Apply waits for the outcome and reports it, so a caller never sees an error for a batch that was
// in fact applied. An engine whose commit outcome can be unknown (a remote datastore whose connection broke
// after the commit was sent) returns an error wrapping ErrUnknownOutcome and never retries such a commit.
// Stats must not block on I/O. Close waits for operations in progress; every method called after Close
// returns an error wrapping ErrClosed, and a second Close returns nil.
//
// Ownership. Get returns a Value the caller owns; View (Viewer, which every decorator Expose hands out has)
// returns one the caller must only read, since it may be a cache's stored copy shared with other readers; the
// RESP and memcached read paths, which copy it into a reply at once, use it and save an allocation per read.
// Results' Old and New values must stay valid and unchanged
// after Apply returns (an engine hands out copies or memory it never reuses); callers must not modify them. One
// exception: the New value of a write may be the very slice the batch gave it (a SET's Value), valid only while
// the caller keeps that slice; every value read, Old included, is the engine's (Resolve copies a value the same
// batch wrote before handing it to a later mutation).
// Apply keeps no reference to the batch or its byte slices after it returns, so a caller may reuse them. Scan's
// key and Item.Value are valid only during fn; fn copies what it keeps. A context may carry a ValueGate
// (WithValueGate): an engine that copies a found value of GateFrom bytes or more out of its own memory asks it
// first (AdmitValue), and returns its refusal with nothing copied, so that a client's reads reserve their room
// in maxmemory-clients before the bytes exist (pebble and memory do; a remote engine has the bytes already).
//
// Durability. Apply returns once the batch is as durable as the engine's configuration promises (for
// pebblestore SyncAlways: on disk). A durable engine's reads return only durable writes: a Get or Scan that
// could observe a write a crash might still erase waits until it is durable, so no client acts on state that can
// vanish. An engine that cannot promise this says so in its documentation and in docs/engines.md.
//
// Versions. Every written item gets a version greater than every version the engine handed out before, also
// across restarts and, for a shared remote datastore, across every anykv process using it. Versions are never
// reused; version 0 is never an item's (it means "absent" in CondVersion). The version is the CAS token of every
// protocol (memcached cas unique, HTTP ETag, WATCH), which compare versions of one key only. An engine spread over
// several slots (SlotScoped) orders versions per slot: each key's versions still grow and none repeats, but
// versions of keys in different slots are not ordered by time.
//
// Expiry. Expiry is an absolute unix-ms time judged at the time the caller passes (Get's now, Batch.Now, or
// Batch.Clock read when the batch is resolved), never the engine's own clock: an item with Expires <= now is invisible to every read and is absent to Resolve, the
// moment it expires, whatever the engine has or has not reclaimed. Reclaiming space (Sweeper, or a datastore's
// own TTL) is an optimisation and must never make a live item disappear: a Sweep deletes an item only if it is
// still the expired version it examined, so a concurrent rewrite survives.
//
// Consistency. A context may carry a read level (WithConsistency; none means Linearizable). Get and Scan serve
// it or a stronger level, never a weaker one: Linearizable sees every batch acknowledged before the read began;
// Serializable sees a state the datastore committed, possibly older. An engine that serves a level other than
// Linearizable lists the levels it serves (ReadLeveler); the command layer refuses a level no listed level covers
// (CheckConsistency) rather than let the engine weaken it. Apply ignores the level: a batch's reads and writes
// are always linearizable, since its outcome depends on them. Engines that serve every read from one up-to-date
// copy (pebble, memory, the SQL and Redis engines) are linearizable and so serve every level. A cache of answers
// (the read cache, kv's query cache) keeps only those of linearizable reads: a stale one would answer later reads.
//
// Errors. Engines return the sentinels of errors.go, wrapped with %w and context; callers test them with
// errors.Is. ErrNotFound means absent and nothing else: any other read failure (I/O, corruption, a lost
// connection) is returned as itself and callers must report it as an error, never as "absent".
//
// # Optional abilities
//
// Scanner, TableLister, Sweeper and Statser are separate interfaces, found by type assertion (or all at once with
// AbilitiesOf). An engine implements one only if it can keep that interface's promise exactly; without it, the
// command layer answers ErrNotSupported (KEYS, SCAN, queries) or simply goes without (no background sweep, no
// figures). A decorator (the read cache, a test's fault injector) must offer exactly the abilities of the engine
// it wraps, plus any it has by itself: it implements all of them by forwarding and hands itself out through
// Expose; enginetest.CheckDecorator proves it.
//
// One limit is declared the same way: a TableScoped engine (Redis Cluster) keeps each batch within one table and
// refuses one that spans tables with ErrNotSupported, applying nothing; the conformance suite checks the refusal.
package engine
