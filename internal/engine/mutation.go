package engine

// Op names what a Mutation does. Every write of every protocol is one of these, so that engines and the
// replication log share one vocabulary; Resolve gives each its meaning.
type Op uint8

// The operations. Values are part of the Mutation codec: append new ones, never renumber.
const (
	OpGet       Op = iota + 1 // read inside a batch; with Touch also sets the expiry (GETEX, gat)
	OpCheck                   // only checks the condition (WATCH guards), and a collection's kind if Coll.Kind is set; never writes
	OpSet                     // store Value, Flags, Expires (Set.KeepTTL keeps the old expiry)
	OpDelete                  // remove the item; ErrNotFound if absent
	OpIncr                    // integer add (IncrArgs: signed as Redis, or unsigned as memcached)
	OpIncrFloat               // float add of the decimal text in Value, in 64-bit-mantissa precision (Redis INCRBYFLOAT)
	OpAppend                  // Value appended; Edit.Create makes a missing item
	OpPrepend                 // Value prepended; Edit.Create makes a missing item
	OpSetRange                // Value written at Edit.Offset, zero-padding (Redis SETRANGE)
	OpExpire                  // set Expires (0 = persist) subject to Expire.Cond; a past time deletes
	OpRename                  // move Key to Target (Cond CondAbsent: only if the target is absent)
	OpCopy                    // copy Key to Target (Cond CondAbsent: only if the target is absent)
	OpFlush                   // delete every item of Table, or of every table when Table is ""
	// Member ops address one member (Coll.Member) of the collection of kind Coll.Kind at Table/Key; Cond applies
	// to the member. Another kind at the key is ErrWrongType. See collection.go for the layout.
	OpMemberGet       // read the member (HGET, SISMEMBER inside a batch)
	OpMemberSet       // store Value as the member's value, creating the collection if needed (HSET, SADD)
	OpMemberDel       // remove the member; removing the last one removes the collection (HDEL, SREM)
	OpMemberIncr      // integer add to the member's value as OpIncr does (HINCRBY)
	OpMemberIncrFloat // float add of Value's decimal text to the member's value as OpIncrFloat does (HINCRBYFLOAT)
	OpMembers         // read every member, in member order, into Result.Members (HGETALL inside a batch)
	OpCall            // run the registered Func Call.Name on Table/Key with Call.Args (see call.go)
	OpSwap            // trade every item of Table, members included, with those of Target.Table (SWAPDB; resolve_swap.go)
	opMax
)

// Cond is a precondition on the item at Table/Key (for OpRename and OpCopy: on the target).
type Cond uint8

// Conditions. A failed condition sets the Result's Err; with Guard it aborts the whole batch.
const (
	CondNone    Cond = iota
	CondAbsent       // no live item (SET NX, memcached add): else ErrExists
	CondPresent      // a live item (SET XX, memcached replace): else ErrNotFound
	CondVersion      // live item with Version (CAS, WATCH); Version 0 means absent: else ErrVersionMismatch/ErrNotFound
)

// ExpireCond restricts OpExpire as Redis's EXPIRE options do.
type ExpireCond uint8

// Expiry conditions; a missing expiry counts as infinitely far, as in Redis.
const (
	ExpAlways ExpireCond = iota
	ExpNX                // only if the item has no expiry
	ExpXX                // only if the item has an expiry (also used by PERSIST)
	ExpGT                // only if the new expiry is later
	ExpLT                // only if the new expiry is earlier
	ExpXXLT              // only if the item has an expiry and the new one is earlier (Redis XX LT)
)

// Mutation is one write (or in-batch read) as a plain value: what protocols produce, what the replication log
// carries (see AppendBatch) and what an engine applies. It is flat and allocation-free; the fields every op shares
// come first, then each op's own arguments in a struct of their own, which other ops leave zero.
type Mutation struct {
	Op    Op
	Table string
	Key   []byte
	// Cond is a precondition on the item at Table/Key (for OpRename and OpCopy: on the target); Version is the
	// version CondVersion expects.
	Cond    Cond
	Version uint64
	// Guard aborts the whole batch (ErrAborted, nothing applied) if this mutation's condition (or kind) fails. With a
	// non-zero Group it aborts only the mutations of that group: they must come after the guard in the batch
	// and fail with ErrAborted (MSETNX inside a transaction).
	Guard bool
	Group uint32
	// AnyKind lets OpGet, OpSet and OpDelete act on an item of any kind (TYPE, DEL, SET without GET). Without it
	// they, like every other string op, fail with ErrWrongType on a collection. OpCheck, OpExpire, OpRename,
	// OpCopy and OpFlush act on any kind always.
	AnyKind bool

	// The item written. OpSet stores Value, Flags and Expires. OpAppend, OpPrepend and OpSetRange write Value into
	// the item (Flags and Expires are those of an item they create); OpIncrFloat reads Value as the increment's
	// decimal text. Expires is an absolute unix-ms time (0 = none): OpExpire's new expiry, the expiry a Touch
	// sets, and that of an item OpIncr creates.
	Value   []byte
	Flags   uint32
	Expires int64

	Set    SetArgs    // OpSet
	Incr   IncrArgs   // OpIncr
	Edit   EditArgs   // OpAppend, OpPrepend, OpSetRange
	Expire ExpireArgs // OpExpire
	Target Target     // OpRename, OpCopy; OpSwap names only its Table
	Coll   CollArgs   // the member ops
	Call   CallArgs   // OpCall
	// Touch makes OpGet and OpIncr also set Expires (GETEX, gat, memcached ma with T).
	Touch bool
	// NoValue: the caller of an OpGet needs the item's kind, expiry and version, not its value (EXISTS, TYPE, TTL):
	// the result holds an empty value instead, which neither counts toward MaxBatchRead nor stays in memory until
	// the reply (EXISTS of many big keys held a copy of each). A hint for reads: the codec does not carry it.
	NoValue bool
	// Partial: the reply to an OpGet carries none of the value, only what is computed from it (STRLEN, GETBIT, BITCOUNT):
	// a plain read counts the value against maxmemory-clients once, not also for a reply's copy. A hint for
	// reads, as NoValue.
	Partial bool
}

// SetArgs are OpSet's own arguments.
type SetArgs struct {
	// KeepTTL keeps the old item's expiry.
	KeepTTL bool
	// Blind marks an unconditional set (no Cond, no KeepTTL) whose caller needs no Result.Old: the old item is
	// then not read, which spares the engine a lookup on the write path (plain SET, MSET, memcached set).
	Blind bool
}

// IncrArgs are OpIncr's own arguments. Signed (Redis): Delta is added with overflow checks and a created item
// starts at 0+Delta. Unsigned (memcached): UDelta is added with wrap-around, or subtracted flooring at 0 when
// Decr, and a created item starts at Initial.
type IncrArgs struct {
	Delta    int64
	Unsigned bool
	Decr     bool
	UDelta   uint64
	Initial  uint64
	// Create makes a missing item instead of failing with ErrNotFound.
	Create bool
}

// EditArgs are the arguments of the ops that edit a value in place.
type EditArgs struct {
	// Create makes a missing item (OpAppend, OpPrepend) instead of failing with ErrNotFound.
	Create bool
	// Offset is where OpSetRange writes.
	Offset int64
	// MaxSize bounds the value produced (0 = unbounded): else ErrTooLarge. kv.Store.Apply bounds it by the value limit.
	MaxSize int
}

// ExpireArgs are OpExpire's own arguments.
type ExpireArgs struct {
	// Cond restricts when the new expiry applies (Redis's NX, XX, GT, LT).
	Cond ExpireCond
}

// CollArgs are the member ops' own arguments.
type CollArgs struct {
	// Kind is the collection's kind: a write creates a collection of this kind; another kind is ErrWrongType.
	Kind Kind
	// Member names the member (a hash field, a set member).
	Member []byte
}

// Target names where OpRename and OpCopy put the item.
type Target struct {
	Table string
	Key   []byte
}

// Writes reports whether the mutation can change stored state (OpGet only with Touch, OpCheck never).
func (m *Mutation) Writes() bool {
	switch m.Op {
	case OpGet:
		return m.Touch
	case OpCheck, OpMemberGet, OpMembers:
		return false
	}
	return true
}

// Batch is a list of mutations applied atomically and in order, judged at one time.
type Batch struct {
	// Now is the unix-ms time at which items expire for this batch.
	Now int64
	// Clock, if set, is read again when the batch is resolved, and a later time replaces Now: a batch that
	// waited in a writer's queue (behind other batches and their fsyncs) must not find alive a key that reads
	// answered meanwhile found expired (a SET XX or a CAS would then bring it back). The caller's clock, not the
	// engine's, so that a test's fake clock still rules.
	Clock func() int64
	// Reserve, if set, is told the bytes the batch's reads hold for their results (what MaxBatchRead counts) each
	// time they pass another ReserveStep, from 0 again whenever the batch is resolved again: a caller that must
	// account what results keep until they are answered (maxmemory-clients) reserves there, and an error it
	// returns fails the batch with ErrReadBudget wrapping it, nothing applied. It may be called on an engine's
	// goroutine while Apply waits.
	Reserve func(held int) error
	Muts    []Mutation
}

// Result is the outcome of one mutation.
type Result struct {
	// Err is the mutation's own failure (a sentinel such as ErrNotFound or ErrExists); other mutations of the
	// batch still apply unless it was a Guard.
	Err error
	// Old is the live item before the mutation (for rename/copy: the source), if OldFound.
	Old      Item
	OldFound bool
	// New is the item after the mutation (for rename/copy: the target), if NewFound.
	New      Item
	NewFound bool
	// Members are what OpMembers read: each member's name and item, in member order.
	Members []Member
	// Wrote, for an OpCall with Call.AnyKey, lists the keys of its Table the function may have written beyond
	// Key and Call.Keys (each once, in the order first written; a write that then failed may be listed).
	Wrote [][]byte
	// WroteAll says Wrote names every key of Table the call wrote, the ones it declares included, so that WATCH and
	// tracking (kv.EachWritten) count those alone: a pop of the first of several keys that has something writes
	// one of the keys it declares (a queued LMPOP, protocol/redis).
	WroteAll bool
	// Unchanged says the mutation wrote nothing (a ZADD of the scores members have, a SETRANGE of nothing, a
	// DEL of an absent key): WATCH need not count its keys as changed, as Redis does not.
	Unchanged bool
	// Extra is what an OpCall's Func hands its caller beyond the result (a script: the keyspace events of its
	// commands); it never leaves the process.
	Extra any
}

// Member is one member of a collection: its name (hash field, set member) and its item (the value).
type Member struct {
	Name []byte
	Item Item
}
