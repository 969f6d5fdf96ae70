package engine

import (
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Functions: operations written in Go that run inside Resolve.
//
// Some operations cannot be compiled into fixed mutations ahead of time, because what they write depends on what
// they read: LPUSH writes at the list's current head, ZPOPMIN removes whichever member has the lowest score,
// SINTERSTORE stores what the intersection turns out to be. Such an operation is an OpCall mutation naming a
// registered Func and carrying its arguments as plain bytes. Resolve runs the Func with a Tx that reads and
// writes through the batch (so it sees the batch's earlier writes, and its own writes are part of the same atomic,
// durable batch) and returns its Result. A Func must be deterministic: its effect depends only on the stored
// state, its arguments and the batch's time, so the mutation stays a value that a log can carry and any engine
// can apply. Engines need no code of their own for it; reading ranges needs a RangeReader.

// Func is a registered operation: it reads and writes through tx and returns the mutation's Result. An error it
// returns fails the whole batch (use Result.Err for the operation's own failures, such as ErrWrongType).
type Func func(tx *Tx, args [][]byte) (Result, error)

// The registry is copied on write: registrations happen at init (and in tests), lookups on every OpCall of every
// batch, so a lookup is one atomic load with no lock that all connections share (a read lock's counter is a
// cache line every core writes).
type registry struct {
	fn       map[string]Func
	readOnly map[string]bool
	keyRead  map[string]keyRead // RegisterKeyReadFunc's and RegisterUncachedKeyReadFunc's (readOnly too)
}

// keyRead is what registration says of a function that reads only its key: for which arguments (when; nil: any),
// and whether its answer may be kept until the key changes.
type keyRead struct {
	when      func(args [][]byte) bool
	cacheable bool
}

var (
	registerMu sync.Mutex // serializes registrations
	funcs      = func() *atomic.Pointer[registry] {
		var p atomic.Pointer[registry]
		p.Store(&registry{fn: map[string]Func{}, readOnly: map[string]bool{}, keyRead: map[string]keyRead{}})
		return &p
	}() // set before any init function runs
)

// register adds fn under name to a copy of the registry and publishes the copy.
func register(name string, fn Func, readOnly bool, kr *keyRead) {
	registerMu.Lock()
	defer registerMu.Unlock()
	old := funcs.Load()
	if _, dup := old.fn[name]; dup {
		panic("engine: function registered twice: " + name)
	}
	r := &registry{fn: maps.Clone(old.fn), readOnly: maps.Clone(old.readOnly), keyRead: maps.Clone(old.keyRead)}
	r.fn[name] = fn
	if readOnly {
		r.readOnly[name] = true
	}
	if kr != nil {
		r.keyRead[name] = *kr
	}
	funcs.Store(r)
}

// RegisterKeyReadFunc is RegisterFunc for a function that, called with arguments for which when is true (nil:
// any), never writes, reads nothing but the item at its mutation's key and that collection's members, and
// depends on time only through their expiry (LRANGE, ZRANGE, ZSCORE): called so, with no Target and no Call.Keys
// (KeyRead), its result stays true until the key is written or expires, so a cache in front of the engine may
// keep it that long, and a script may call it on a key it did not declare. Any call of it counts as a read
// (ReadsOnly): an engine may resolve a batch of such calls and other reads without its writer, and falls back to
// the writer when the resolution wrote after all (ZRANGESTORE shares ZRANGE's function, when false for it).
func RegisterKeyReadFunc(name string, fn Func, when func(args [][]byte) bool) {
	register(name, fn, true, &keyRead{when: when, cacheable: true})
}

// RegisterUncachedKeyReadFunc is RegisterKeyReadFunc for a function whose answer no cache keeps: it may differ
// from call to call with the key unchanged (SRANDMEMBER's random picks), or is seldom asked twice (a SCAN's
// pages, a stream's ranges); it still only reads, so a script may call it on any key.
func RegisterUncachedKeyReadFunc(name string, fn Func) { register(name, fn, true, &keyRead{}) }

// RegisterReadFunc is RegisterUncachedKeyReadFunc for a function that never writes but may also read keys its
// mutation does not name: SORT, whose BY and GET patterns name keys built from the elements it sorts. It counts
// as a read as those do (ReadsOnly; a script may call it on any key), and no cache keeps its answer, which other
// keys change; an engine that resolves reads on a snapshot already tracks every key a resolution read.
func RegisterReadFunc(name string, fn Func) { RegisterUncachedKeyReadFunc(name, fn) }

// KeyRead reports whether m is a call that RegisterKeyReadFunc says reads only its own key, with an answer a
// cache may keep until the key changes (and has no Target, no Call.Keys, not AnyKey).
func KeyRead(m *Mutation) bool {
	kr, ok := ownKeyRead(m)
	return ok && kr.cacheable
}

// ownKeyRead finds what registration says of m, a call that reads only its own key; ok is false for any other
// mutation.
func ownKeyRead(m *Mutation) (kr keyRead, ok bool) {
	if m.Op != OpCall || m.Target.Table != "" || len(m.Call.Keys) != 0 || m.Call.AnyKey {
		return kr, false
	}
	kr, ok = funcs.Load().keyRead[m.Call.Name]
	return kr, ok && (kr.when == nil || kr.when(m.Call.Args))
}

// readsOwnKey says m is a call of a function registered as a read of its own key (LRANGE, HGETALL, ...).
func readsOwnKey(m *Mutation) bool {
	_, ok := ownKeyRead(m)
	return ok
}

// ReadsOnly reports whether every mutation of muts is a read: a Get without Touch, a Check, a member read, or a
// call of a function registered with RegisterKeyReadFunc or RegisterUncachedKeyReadFunc.
func ReadsOnly(muts []Mutation) bool {
	var r *registry
	for i := range muts {
		m := &muts[i]
		if m.Op == OpCall {
			if r == nil {
				r = funcs.Load()
			}
			if !r.readOnly[m.Call.Name] {
				return false
			}
		} else if m.Writes() {
			return false
		}
	}
	return true
}

// RegisterFunc makes fn callable as OpCall with Call.Name = name. Packages register their functions at init;
// registering a name twice panics.
func RegisterFunc(name string, fn Func) { register(name, fn, false, nil) }

// Funcs lists the registered function names, sorted.
func Funcs() []string {
	r := funcs.Load()
	out := make([]string, 0, len(r.fn))
	for n := range r.fn {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CallMutation is the OpCall mutation that runs the registered Func name on the item at table/key with args
// (the outer slice copied: the mutation may outlive the caller's).
func CallMutation(table string, key []byte, name string, args ...[]byte) Mutation {
	return Mutation{Op: OpCall, Table: table, Key: key, Call: CallArgs{Name: name, Args: append([][]byte(nil), args...)}}
}

// CallArgs are OpCall's own arguments.
type CallArgs struct {
	// Name is the registered Func to run.
	Name string
	// Args are its arguments (Table and Key of the mutation name the item it works on).
	Args [][]byte
	// Keys are further keys of Table the Func may write (a script's declared KEYS).
	Keys [][]byte
	// AnyKey lets the Func write any key of Table (and its collections' members), not only Key and Keys: a
	// script that names keys as it runs, as Redis allows outside cluster mode (BullMQ writes each job's hash by a
	// name it builds from an ID it reads). The keys of Table it wrote beyond Key and Keys come back in the
	// Result's Wrote, so whoever tracks changed keys (a cache, WATCH, blocked clients) can learn them afterwards;
	// before the batch runs they are unknown, so a cache must treat such a call as one that may change any key.
	AnyKey bool
}

// Tx is what a Func sees of the batch: reads see the batch's earlier writes, writes join the batch. A Func may
// read anything but writes only the item at the mutation's Table/Key, at its Target (LMOVE's destination), at
// its Call.Keys (or, with Call.AnyKey, at any key of its Table), and their collections' members: so a cache in
// front of the engine knows which keys a call changes (with AnyKey, only afterwards, from Result.Wrote).
type Tx struct {
	rs    *resolver
	m     *Mutation
	err   error    // a write outside what the mutation names
	wrote [][]byte // with Call.AnyKey: the keys of Table written beyond Key and Call.Keys, in first-write order
	seen  map[string]bool
}

// writable reports whether the Func may write table/key, recording a violation otherwise.
func (tx *Tx) writable(table string, key []byte) bool {
	if user, ok := UserTable(table); ok {
		table = user // a member table: members belong to a collection the mutation names (not checked further)
		return table == tx.m.Table || table == tx.m.Target.Table
	}
	if table == tx.m.Table && string(key) == string(tx.m.Key) ||
		table == tx.m.Target.Table && string(key) == string(tx.m.Target.Key) && tx.m.Target.Table != "" {
		return true
	}
	if table == tx.m.Table {
		for _, k := range tx.m.Call.Keys {
			if string(k) == string(key) {
				return true
			}
		}
		if tx.m.Call.AnyKey {
			if !tx.seen[string(key)] {
				if tx.seen == nil {
					tx.seen = map[string]bool{}
				}
				tx.seen[string(key)] = true
				tx.wrote = append(tx.wrote, append([]byte(nil), key...))
			}
			return true
		}
	}
	if tx.err == nil {
		tx.err = fmt.Errorf("%w: function %q wrote %s/%q", ErrUndeclaredWrite, tx.m.Call.Name, table, key)
	}
	return false
}

// Now is the batch's time (unix ms): expiry is judged at it.
func (tx *Tx) Now() int64 { return tx.rs.now }

// Started is the wall-clock time the batch's first function that asked began. Functions that bound how long they
// run (scripts) count from it, so that a batch of many of them (a transaction of scripts) is bounded as one, not
// by the sum of their bounds while every other write waits.
func (tx *Tx) Started() time.Time {
	if tx.rs.started.IsZero() {
		tx.rs.started = time.Now()
	}
	return tx.rs.started
}

// Table and Key name the item the mutation addresses.
func (tx *Tx) Table() string { return tx.m.Table }

// Key is the mutation's key.
func (tx *Tx) Key() []byte { return tx.m.Key }

// Target is the mutation's Target: a second key the Func may write (LMOVE's destination).
func (tx *Tx) Target() (table string, key []byte) { return tx.m.Target.Table, tx.m.Target.Key }

// Get returns the live item at table/key as the batch sees it, of any kind.
func (tx *Tx) Get(table string, key []byte) (Item, bool, error) { return tx.rs.get(table, key) }

// GetStored is Get of a key the function knows is stored, such as a list's element inside its bounds: an engine
// may then skip work that only pays for absent keys (StoredReader). It answers as Get does either way.
func (tx *Tx) GetStored(table string, key []byte) (Item, bool, error) {
	return tx.rs.getFrom(table, key, true)
}

// Put stores it at table/key with a new version and returns it as stored.
func (tx *Tx) Put(table string, key []byte, it Item) Item {
	if !tx.writable(table, key) {
		return it
	}
	return tx.rs.put(table, key, it)
}

// Delete removes the item at table/key.
func (tx *Tx) Delete(table string, key []byte) {
	if tx.writable(table, key) {
		tx.rs.del(table, key)
	}
}

// NextVersion allocates a fresh version (a collection's generation).
func (tx *Tx) NextVersion() uint64 { return tx.rs.next() }

// Scan calls fn for each live item of table whose key lies in r, in key order, as the batch sees them.
func (tx *Tx) Scan(table string, r Range, fn func(key []byte, it Item) bool) error {
	return tx.rs.scanRange(table, r, false, fn)
}

// Hold counts n bytes that a read function keeps for its result beyond the bytes its scan read (EntryCost for
// each member, element or entry it keeps) against MaxBatchRead; once over, the range being scanned stops at its
// next item with ErrReadTooBig. Scanned bytes alone undercount small members tenfold: SMEMBERS of a set of
// 4-byte names held about 200 bytes of heap per 13 bytes counted, gigabytes under the 256 MiB bound. Writes
// count nothing, as their scans do not.
func (tx *Tx) Hold(n int) { tx.rs.hold(n) }

// ScanReverse is Scan in descending key order.
func (tx *Tx) ScanReverse(table string, r Range, fn func(key []byte, it Item) bool) error {
	return tx.rs.scanRange(table, r, true, fn)
}

// Apply applies mutations inside the function, in order and with the guard rules of a batch, and returns their
// results: a script's commands. An OpFlush or a write of another table is refused before any of muts applies,
// with ErrOutsideTable, and the batch goes on; any other write beyond what the function may write fails the
// batch. ErrAborted if a guard without a group failed (nothing of muts is undone: the function decides,
// usually by failing).
func (tx *Tx) Apply(muts []Mutation) ([]Result, error) {
	for i := range muts {
		if err := tx.outside(&muts[i]); err != nil {
			return nil, err
		}
	}
	defer func(reading bool) { tx.rs.reading = reading }(tx.rs.reading) // each command counts as its op, then the call as before
	res := make([]Result, len(muts))
	err := tx.rs.applyAll(muts, res, func(m *Mutation) error {
		if _, reads := ownKeyRead(m); !m.Writes() || reads { // a call that only reads (LRANGE) may read any key
			return nil
		}
		ok := m.Op != OpFlush && tx.writable(m.Table, m.Key) &&
			(m.Target.Table == "" || tx.writable(m.Target.Table, m.Target.Key))
		for _, k := range m.Call.Keys {
			ok = ok && tx.writable(m.Table, k)
		}
		if !ok {
			err := tx.err
			if err == nil {
				err = fmt.Errorf("%w: a function may not flush", ErrInvalid)
			}
			return err
		}
		return nil
	})
	return res, err
}

// outside reports ErrOutsideTable for a mutation of Apply that writes where even Call.AnyKey does not reach: a
// flush, or another table (and its members).
func (tx *Tx) outside(m *Mutation) error {
	if _, reads := ownKeyRead(m); !m.Writes() || reads {
		return nil
	}
	own := func(table string) bool {
		if user, ok := UserTable(table); ok {
			table = user
		}
		return table == tx.m.Table || table == tx.m.Target.Table && table != ""
	}
	if m.Op == OpFlush || !own(m.Table) || m.Target.Table != "" && !own(m.Target.Table) {
		return fmt.Errorf("%w: %s", ErrOutsideTable, m.Table)
	}
	return nil
}

// call runs OpCall.
func (rs *resolver) call(m *Mutation) (Result, error) {
	fn := funcs.Load().fn[m.Call.Name]
	if fn == nil {
		return Result{}, fmt.Errorf("%w: no function %q", ErrInvalid, m.Call.Name)
	}
	if rs.depth == len(rs.txs) { // a Tx per nesting level (a script's calls), reused by the batch's later calls
		rs.txs = append(rs.txs, new(Tx))
	}
	tx := rs.txs[rs.depth]
	*tx = Tx{rs: rs, m: m}
	rs.depth++
	res, err := fn(tx, m.Call.Args)
	rs.depth--
	if err == nil {
		err = tx.err
	}
	res.Wrote = tx.wrote
	return res, err
}
