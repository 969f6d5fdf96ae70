package engine

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"runtime/debug"
	"sort"
	"strconv"
	"time"
	"unsafe"

	"github.com/google/btree"
)

// Reader gives Resolve the stored state an engine holds before a batch.
type Reader interface {
	// Read returns the stored item for table/key, expired or not, and whether one is stored. The returned Value
	// may reach Apply's caller through Result.Old/New, so it must stay valid and unchanged from then on: hand
	// out a copy, or memory that is never reused.
	Read(table string, key []byte) (Item, bool, error)
}

// StoredReader is a Reader with a read for keys the caller knows are stored (Tx.GetStored: a list's element
// inside its bounds). It answers as Read does; what it may skip is work that only pays for absent keys (the
// pebble engine's member filters).
type StoredReader interface {
	ReadStored(table string, key []byte) (Item, bool, error)
}

// Write is one physical change that Resolve asks the engine to make, in order.
type Write struct {
	Table string
	Key   []byte
	Item  Item
	// Delete removes Key instead of storing Item.
	Delete bool
	// Flush removes every item of Table (of every table if Table is ""); Key and Item are unused.
	Flush bool
	// built: this batch's resolution allocated Item.Value's array and has handed out only views no longer
	// than it, so later reads may share it and an append may extend it in place.
	built bool
}

type slot struct {
	table, key string
}

// resolver holds a batch's own writes so later mutations of the batch see earlier ones.
type resolver struct {
	r   Reader
	now int64
	// started is when the batch's first function that asked (Tx.Started) began; zero until then.
	started time.Time
	next    func() uint64
	watch   ExpiryWatcher // r, if it wants to hear of the expiries of the live items read
	// overlay indexes the batch's own writes by key: writes[overlay[k]] is the key's latest write (a put or a
	// delete). A key written again replaces its write in place, so a batch that rewrites one key many times (a
	// collection's meta item under a pipeline of pushes) hands the engine one write for it, not one per change.
	// Until the batch has written scanWrites keys there is no map: own scans writes[scanFrom:] (the writes since
	// the last FLUSHALL), which for the common small batch is faster than hashing and allocates nothing.
	overlay map[slot]int
	// sorted holds overlay's keys in order, for scans (ownRange): built by the batch's first scan over a big
	// overlay, then kept by record; nil whenever overlay starts over or forgets keys.
	sorted     *btree.BTreeG[slot]
	scanFrom   int
	flushedAll bool
	flushed    map[string]bool
	writes     []Write
	recorded   int // writes and flushes recorded, each time (a call that adds none wrote nothing)
	txs        []*Tx
	depth      int  // calls running: txs[depth] is the next call's Tx
	built      int  // bytes of value arrays this batch allocated (copies, APPEND, SETRANGE), bounded by maxBuilt
	read       int  // bytes of values this batch's reads read from the engine (copies its results hold), bounded by MaxBatchRead
	reading    bool // the mutation being applied is a read (see MaxBatchRead): what it reads counts in read
	// reserve is the batch's Reserve (nil: none), next the read at which it is called again, and refused the
	// error of its refusal, which fails the batch.
	reserve     func(int) error
	nextReserve int
	refused     error
}

// maxBuilt bounds the bytes of values one batch may allocate while it resolves the values APPEND, PREPEND,
// SETRANGE, RENAME and COPY build (the copies reads answer with are MaxBatchRead's). A pipeline of small requests on one big value (a thousand SETRANGEs of a 64 MiB string:
// 30 KB of request) would otherwise hold a copy per request until the batch is answered, gigabytes from
// kilobytes. Past the bound the batch is refused whole with
// ErrBatchTooBig (nothing of it applied); the mutation that crosses it completes, so one mutation can always
// build a value up to the value limit.
var maxBuilt = 256 << 20 // a variable for tests

// MaxBatchRead bounds the bytes of values the reads of one batch (OpGet, OpMemberGet, OpMembers, calls of key-read
// functions) may read
// from the engine, point reads and scanned members: each read hands out a copy, and a batch holds all its results
// until its replies are written. Writes are not counted: what one reads before it changes the key is read once
// (a DEL of several big keys, the reclaimer's deletes of a big collection's members, SETBITs or LREMs of a big
// value in a transaction must not be refused); nor are OpGets with NoValue. A pipeline or
// transaction of reads of one big value (300 GETs of a 32 MiB string in a 3 KB request, or as many LRANGEs of
// a list of big elements) held a copy per read, enough to run the process out of memory (a fatal error that
// takes every client down). Past the bound the batch is refused whole with ErrBatchTooBig, as for maxBuilt: a
// pipeline is then applied one request at a time, its replies streamed; a transaction fails. Front ends that
// read directly, without Resolve, hold their reads to the same bound.
var MaxBatchRead = 256 << 20 // a variable for tests

// EntryCost is what a read counts against MaxBatchRead for each member, element or entry it keeps for its
// result (Tx.Hold), besides the bytes it read: the Member that holds it.
const EntryCost = int(unsafe.Sizeof(Member{}))

// ExpiryWatcher is a Reader that wants to know until when what Resolve read stays as Resolve judged it:
// LiveUntil is called with the expiry of each live item read that has one. A writer that publishes a batch's
// writes some time after resolving it can then see that an item judged alive expired meanwhile, and resolve the
// batch again rather than contradict reads that found the item gone (pebblestore's commitGroup).
type ExpiryWatcher interface {
	LiveUntil(expires int64)
}

func watcherOf(r Reader) ExpiryWatcher {
	w, _ := r.(ExpiryWatcher)
	return w
}

// Resolve computes the effect of a batch: per-mutation results and the writes that carry them out. It is the one
// definition of every Op's meaning, shared by all engines. next allocates a fresh version for each written item.
// When a Guard fails it returns the results so far and ErrAborted, and the caller must apply no write.
//
// A panic while resolving (a defect in an op or a registered function, say an unchecked index on a client's
// argument) becomes ErrInternal for this batch alone, with no writes: Resolve runs on an engine's single writer
// (pebblestore), where an unrecovered panic would end the process and every other client's batch with it.
func Resolve(r Reader, b *Batch, next func() uint64) (writes []Write, results []Result, err error) {
	return ResolveInto(r, b, next, nil)
}

// ResolveInto is Resolve appending the writes to buf[:0] (a caller that resolves batch after batch, as an engine's
// writer, reuses one buffer instead of allocating one a batch).
func ResolveInto(r Reader, b *Batch, next func() uint64, buf []Write) (writes []Write, results []Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("panic resolving a batch; the batch is refused, nothing of it applied", "panic", p,
				"stack", string(debug.Stack()))
			writes, results, err = nil, nil, fmt.Errorf("%w: %v", ErrInternal, p)
		}
	}()
	now := b.Now
	if b.Clock != nil {
		now = max(now, b.Clock())
	}
	if want := len(b.Muts) + len(b.Muts)/2 + 2; cap(buf) < want {
		buf = make([]Write, 0, want)
	}
	rs := resolver{r: r, now: now, next: next, watch: watcherOf(r), writes: buf[:0], reserve: b.Reserve, nextReserve: ReserveStep}
	results = make([]Result, len(b.Muts))
	if err := rs.applyAll(b.Muts, results, nil); err != nil {
		if rs.refused != nil {
			err = rs.refusal()
		}
		return nil, results, err
	}
	if rs.refused != nil { // a script that caught the refusal of its read (pcall) and went on
		return nil, results, rs.refusal()
	}
	return rs.writes, results, nil
}

// refusal is the batch's error once its Reserve refused.
func (rs *resolver) refusal() error { return fmt.Errorf("%w: %w", ErrReadBudget, rs.refused) }

// count adds n bytes to what the batch's reads hold, telling its Reserve at each ReserveStep, and reports whether
// the batch may go on reading (within MaxBatchRead, not refused).
func (rs *resolver) count(n int) bool {
	rs.read += n
	if rs.reserve != nil && rs.refused == nil && rs.read >= rs.nextReserve {
		if err := rs.reserve(rs.read); err != nil {
			rs.refused = err
		}
		rs.nextReserve = rs.read + ReserveStep
	}
	return rs.read <= MaxBatchRead && rs.refused == nil
}

// applyAll applies muts in order into results, with the guard rules: a failed guard without a group aborts
// (ErrAborted), one with a group aborts the later mutations of its group. check, if not nil, may refuse a
// mutation before it applies (a function's Tx limiting what it writes).
func (rs *resolver) applyAll(muts []Mutation, results []Result, check func(*Mutation) error) error {
	var failed map[uint32]bool // guard groups whose guard failed
	for i := range muts {
		m := &muts[i]
		if m.Group != 0 && failed[m.Group] {
			results[i].Err = ErrAborted
			continue
		}
		if check != nil {
			if err := check(m); err != nil {
				return err
			}
		}
		before := rs.recorded
		res, err := rs.apply(m)
		if err != nil {
			return err
		}
		res.Unchanged = rs.recorded == before
		results[i] = res
		if res.Err != nil && m.Guard && (IsConditionFailure(res.Err) || errors.Is(res.Err, ErrWrongType)) {
			if m.Group == 0 {
				return ErrAborted
			}
			if failed == nil {
				failed = map[uint32]bool{}
			}
			failed[m.Group] = true
		}
	}
	return nil
}

// IsConditionFailure reports whether err is a failed condition (absent, present, version or expiry) rather
// than an error: protocols answer these with nil, 0 or NOT_STORED.
func IsConditionFailure(err error) bool {
	return errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrVersionMismatch) ||
		errors.Is(err, ErrConditionFailed)
}

// get returns the live item at table/key as this batch sees it.
func (rs *resolver) get(table string, key []byte) (Item, bool, error) {
	return rs.getFrom(table, key, false)
}

// getFrom is get; stored says the caller knows the key is stored (StoredReader).
func (rs *resolver) getFrom(table string, key []byte, stored bool) (Item, bool, error) {
	if wr, ok := rs.own(table, key); ok {
		if wr.Delete || !wr.Item.Live(rs.now) { // written earlier in this batch, possibly already expired
			return Item{}, false, nil
		}
		// The write's value may be the batch's own slice (a SET's Value), which the caller reuses once Apply
		// returned, and what this read returns becomes a result (GET after SET in one pipeline): it is copied
		// into the write once, and from then on shared, as a collection's meta (always a value Resolve encoded
		// itself, which nothing changes) is. Shared views are clipped so that an append through them copies.
		if wr.Item.Kind == KindString && !wr.built {
			// Not counted against maxBuilt: a copy a read answers with is a reply's worth, as Redis holds one in
			// its output buffer; and a function that writes the key between reads (SETBIT) leaves it garbage.
			wr.Item.Value = append(make([]byte, 0, len(wr.Item.Value)), wr.Item.Value...)
			wr.built = true
		}
		it := wr.Item
		it.Value = it.Value[:len(it.Value):len(it.Value)]
		return it, true, nil
	}
	if rs.flushedAll || rs.flushed[table] {
		return Item{}, false, nil
	}
	read := rs.r.Read
	if stored { // asked only then: every other read of every batch passes here
		if sr, is := rs.r.(StoredReader); is {
			read = sr.ReadStored
		}
	}
	it, ok, err := read(table, key)
	if err != nil || !ok || !it.Live(rs.now) {
		return Item{}, false, err
	}
	if it.Expires != 0 && rs.watch != nil {
		rs.watch.LiveUntil(it.Expires)
	}
	rs.hold(len(it.Value))
	return it, true, nil
}

// hold counts n bytes a read keeps for its result against MaxBatchRead (writes count nothing: see there).
func (rs *resolver) hold(n int) {
	if rs.reading {
		rs.count(n)
	}
}

// scanWrites is the number of written keys up to which own scans the batch's writes instead of a map.
const scanWrites = 32

// own returns the batch's latest write of table/key, if it wrote the key.
func (rs *resolver) own(table string, key []byte) (*Write, bool) {
	if rs.overlay == nil {
		for i := rs.scanFrom; i < len(rs.writes); i++ {
			if w := &rs.writes[i]; !w.Flush && w.Table == table && bytes.Equal(w.Key, key) {
				return w, true
			}
		}
		return nil, false
	}
	i, ok := rs.overlay[slot{table, string(key)}]
	if !ok {
		return nil, false
	}
	return &rs.writes[i], true
}

func (rs *resolver) put(table string, key []byte, it Item) Item {
	it.Version = rs.next()
	rs.record(Write{Table: table, Key: key, Item: it})
	return it
}

// putBuilt is put of a value whose array this batch allocated (build): the write keeps the whole array, the
// result a clipped view.
func (rs *resolver) putBuilt(table string, key []byte, it Item) Item {
	it.Version = rs.next()
	rs.record(Write{Table: table, Key: key, Item: it, built: true})
	it.Value = it.Value[:len(it.Value):len(it.Value)]
	return it
}

// build returns a new array holding v with room for extra more bytes, counted against maxBuilt.
func (rs *resolver) build(v []byte, extra int) []byte {
	rs.built += len(v) + extra
	return append(make([]byte, 0, len(v)+extra), v...)
}

func (rs *resolver) del(table string, key []byte) {
	rs.record(Write{Table: table, Key: key, Delete: true})
}

// record makes wr the batch's latest write of its key: in place of the key's earlier write, or appended.
func (rs *resolver) record(wr Write) {
	rs.recorded++
	if prev, ok := rs.own(wr.Table, wr.Key); ok {
		if v := wr.Item.Value; prev.built && !wr.built && len(v) > 0 && len(v) == len(prev.Item.Value) &&
			&v[0] == &prev.Item.Value[0] {
			wr.Item.Value, wr.built = prev.Item.Value, true // the same value again (a touch): still the batch's array
		}
		*prev = wr
		return
	}
	rs.writes = append(rs.writes, wr)
	if rs.overlay != nil {
		k := slot{wr.Table, string(wr.Key)}
		rs.overlay[k] = len(rs.writes) - 1
		if rs.sorted != nil {
			rs.sorted.ReplaceOrInsert(k)
		}
	} else if len(rs.writes)-rs.scanFrom > scanWrites {
		rs.index()
	}
}

// ownRange returns the keys of table in r that the batch wrote (or deleted), sorted. Over a big overlay (a
// batch of a hundred pipelined scripts writes a thousand keys, and each of their collection commands scans) it
// reads them from sorted, built once, where it went through the whole map at every scan.
func (rs *resolver) ownRange(table string, r Range) []string {
	var mine []string
	if len(rs.overlay) < 64 {
		for s := range rs.overlay {
			if s.table == table && r.Contains([]byte(s.key)) {
				mine = append(mine, s.key)
			}
		}
		sort.Strings(mine)
		return mine
	}
	if rs.sorted == nil {
		rs.sorted = btree.NewG(16, func(a, b slot) bool { return a.table < b.table || a.table == b.table && a.key < b.key })
		for s := range rs.overlay {
			rs.sorted.ReplaceOrInsert(s)
		}
	}
	rs.sorted.AscendGreaterOrEqual(slot{table, string(r.Start)}, func(s slot) bool {
		if s.table != table || r.End != nil && s.key >= string(r.End) {
			return false
		}
		mine = append(mine, s.key)
		return true
	})
	return mine
}

// index builds the overlay map from the writes own would scan; own uses the map from then on.
func (rs *resolver) index() {
	rs.overlay = make(map[slot]int, 2*(len(rs.writes)-rs.scanFrom))
	for i := rs.scanFrom; i < len(rs.writes); i++ {
		if w := &rs.writes[i]; !w.Flush {
			rs.overlay[slot{w.Table, string(w.Key)}] = i
		}
	}
}

func (rs *resolver) flush(table string) {
	if table == "" {
		rs.flushedAll = true
		rs.overlay, rs.sorted = nil, nil
		rs.scanFrom = len(rs.writes) + 1 // the writes after the flush's own, appended below
	} else {
		if rs.flushed == nil {
			rs.flushed = make(map[string]bool)
		}
		rs.flushed[table] = true
		if rs.overlay == nil {
			rs.index() // the table's earlier writes must leave the batch's view: the map can forget them
		}
		for s := range rs.overlay {
			if s.table == table {
				delete(rs.overlay, s)
			}
		}
		rs.sorted = nil
	}
	rs.writes = append(rs.writes, Write{Table: table, Flush: true})
	rs.recorded++
}

// check evaluates a key condition against the live item (found tells whether there is one).
func check(c Cond, want uint64, old *Item, found bool) error {
	switch c {
	case CondAbsent:
		if found {
			return ErrExists
		}
	case CondPresent:
		if !found {
			return ErrNotFound
		}
	case CondVersion:
		switch {
		case !found && want != 0:
			return ErrNotFound
		case found && old.Version != want:
			return ErrVersionMismatch
		}
	}
	return nil
}

func (rs *resolver) apply(m *Mutation) (Result, error) {
	if m.Op == 0 || m.Op >= opMax {
		return Result{}, fmt.Errorf("%w: op %d", ErrInvalid, m.Op)
	}
	if rs.refused != nil {
		return Result{}, rs.refusal()
	}
	if rs.built > maxBuilt || rs.read > MaxBatchRead {
		return Result{}, ErrBatchTooBig
	}
	rs.reading = m.Op == OpGet && !m.NoValue || m.Op == OpMemberGet || m.Op == OpMembers || m.Op == OpCall && readsOwnKey(m)
	if m.Op == OpFlush {
		rs.flush(m.Table)
		if m.Table != "" {
			rs.flush(MemberTable(m.Table)) // the table's collections' members go with it
		}
		return Result{}, nil
	}
	if m.Op == OpSwap {
		return Result{}, rs.swap(m.Table, m.Target.Table)
	}
	if m.Op == OpSet && m.Set.Blind && m.Cond == CondNone && !m.Set.KeepTTL {
		it := Item{Value: m.Value, Flags: m.Flags, Expires: m.Expires}
		return Result{New: rs.put(m.Table, m.Key, it), NewFound: true}, nil
	}
	old, found, err := rs.get(m.Table, m.Key)
	if err != nil {
		return Result{}, err
	}
	if m.NoValue && m.Op == OpGet && found {
		old.Value = []byte{} // not kept: the caller wants the rest of the item
	}
	res := Result{Old: old, OldFound: found}
	switch {
	case m.Op == OpRename || m.Op == OpCopy:
		return rs.move(m, res)
	case m.Op == OpCall:
		return rs.call(m)
	case m.Op >= OpMemberGet:
		return rs.member(m, res)
	case m.Op == OpCheck && m.Coll.Kind != KindString && found && old.Kind != m.Coll.Kind:
		res.Err = ErrWrongType // a check of a collection's kind (before SMOVE writes its target)
		return res, nil
	case found && old.Kind != KindString && !anyKind(m):
		res.Err = ErrWrongType
		return res, nil
	}
	if res.Err = check(m.Cond, m.Version, &old, found); res.Err != nil {
		return res, nil
	}
	switch m.Op {
	case OpCheck:
	case OpGet:
		if !found {
			res.Err = ErrNotFound
		} else if m.Touch {
			old.Expires = m.Expires
			res.New, res.NewFound = rs.put(m.Table, m.Key, old), true
		} else {
			res.New, res.NewFound = old, true
		}
	case OpSet:
		it := Item{Value: m.Value, Flags: m.Flags, Expires: m.Expires}
		if m.Set.KeepTTL && found {
			it.Expires = old.Expires
		}
		res.New, res.NewFound = rs.put(m.Table, m.Key, it), true
	case OpDelete:
		if !found {
			res.Err = ErrNotFound
		} else {
			rs.del(m.Table, m.Key)
		}
	case OpIncr:
		rs.incr(m, &res, m.Table, m.Key)
	case OpIncrFloat:
		rs.incrFloat(m, &res, m.Table, m.Key)
	case OpAppend, OpPrepend:
		rs.concat(m, &res)
	case OpSetRange:
		rs.setRange(m, &res)
	case OpExpire:
		rs.expire(m, &res)
	}
	return res, nil
}

// anyKind reports whether m acts on an item of any kind, not only on strings.
func anyKind(m *Mutation) bool {
	switch m.Op {
	case OpCheck, OpExpire, OpFlush:
		return true
	case OpGet, OpSet, OpDelete:
		return m.AnyKind
	}
	return false
}

// incr adds to the integer in res.Old (the item at table/key) and stores the sum there.
func (rs *resolver) incr(m *Mutation, res *Result, table string, key []byte) {
	it := res.Old
	if !res.OldFound {
		if !m.Incr.Create {
			res.Err = ErrNotFound
			return
		}
		it = Item{Expires: m.Expires}
		if m.Incr.Unsigned {
			it.Value = strconv.AppendUint(nil, m.Incr.Initial, 10)
			res.New, res.NewFound = rs.put(table, key, it), true
			return
		}
		it.Value = []byte("0")
	}
	var v []byte
	if m.Incr.Unsigned {
		n, ok := ParseUint(it.Value)
		if !ok {
			res.Err = ErrNotInteger
			return
		}
		switch {
		case !m.Incr.Decr:
			n += m.Incr.UDelta // wraps, as memcached's incr does
		case m.Incr.UDelta > n:
			n = 0 // memcached's decr floors at zero
		default:
			n -= m.Incr.UDelta
		}
		v = strconv.AppendUint(nil, n, 10)
	} else {
		n, ok := ParseInt(it.Value)
		if !ok {
			res.Err = ErrNotInteger
			return
		}
		if (m.Incr.Delta > 0 && n > math.MaxInt64-m.Incr.Delta) || (m.Incr.Delta < 0 && n < math.MinInt64-m.Incr.Delta) {
			res.Err = ErrOverflow
			return
		}
		v = strconv.AppendInt(nil, n+m.Incr.Delta, 10)
	}
	it.Value = v
	if m.Touch {
		it.Expires = m.Expires
	}
	res.New, res.NewFound = rs.put(table, key, it), true
}

// incrFloat adds Value's decimal text to the number in res.Old (the item at table/key) and stores the sum there.
func (rs *resolver) incrFloat(m *Mutation, res *Result, table string, key []byte) {
	delta, ok := ParseLongDouble(m.Value)
	if !ok {
		res.Err = ErrNotFloat
		return
	}
	it := res.Old
	n := new(big.Float).SetPrec(longDoublePrec)
	if res.OldFound {
		if n, ok = ParseLongDouble(it.Value); !ok {
			res.Err = ErrNotFloat
			return
		}
	}
	if n.IsInf() || delta.IsInf() { // inf plus anything is inf or NaN (which big.Float cannot even hold)
		res.Err = ErrNaN
		return
	}
	n.Add(n, delta)
	if n.MantExp(nil) > longDoubleMaxExp {
		res.Err = ErrNaN
		return
	}
	it.Value = formatLongDouble(n)
	res.New, res.NewFound = rs.put(table, key, it), true
}

func (rs *resolver) concat(m *Mutation, res *Result) {
	it := res.Old
	if !res.OldFound {
		if !m.Edit.Create {
			res.Err = ErrNotFound
			return
		}
		it = Item{Flags: m.Flags, Expires: m.Expires}
	}
	if m.Edit.MaxSize > 0 && len(it.Value)+len(m.Value) > m.Edit.MaxSize {
		res.Err = ErrTooLarge
		return
	}
	var v []byte
	switch w, own := rs.own(m.Table, m.Key); {
	case m.Op == OpAppend && own && w.built && len(it.Value) > 0 && len(w.Item.Value) == len(it.Value) &&
		&w.Item.Value[0] == &it.Value[0]:
		// The batch built this value and every view of it is no longer: append in place, growing the array as
		// Go's append does, so a pipeline of APPENDs to one big value copies it a few times, not once each.
		before := cap(w.Item.Value)
		if v = append(w.Item.Value, m.Value...); cap(v) != before {
			rs.built += cap(v)
		}
	case m.Op == OpAppend:
		v = append(rs.build(it.Value, len(m.Value)), m.Value...)
	default:
		v = append(rs.build(m.Value, len(it.Value)), it.Value...)
	}
	it.Value = v
	res.New, res.NewFound = rs.putBuilt(m.Table, m.Key, it), true
}

func (rs *resolver) setRange(m *Mutation, res *Result) {
	if m.Edit.Offset < 0 {
		res.Err = ErrInvalid
		return
	}
	it := res.Old
	if len(m.Value) == 0 { // Redis: nothing written, the reply is the current length
		res.New, res.NewFound = it, res.OldFound
		return
	}
	limit := int64(math.MaxInt32) // without MaxSize, still never trust a caller's offset (decoded log entries)
	if m.Edit.MaxSize > 0 {
		limit = int64(m.Edit.MaxSize)
	}
	end := m.Edit.Offset + int64(len(m.Value))
	if end < m.Edit.Offset || end > limit { // end < Offset: the sum overflowed
		res.Err = ErrTooLarge
		return
	}
	n := max(int64(len(it.Value)), end)
	v := rs.build(it.Value, int(n)-len(it.Value))[:n]
	clear(v[len(it.Value):])
	copy(v[m.Edit.Offset:], m.Value)
	it.Value = v
	res.New, res.NewFound = rs.putBuilt(m.Table, m.Key, it), true
}

func (rs *resolver) expire(m *Mutation, res *Result) {
	if !res.OldFound {
		res.Err = ErrNotFound
		return
	}
	cur := res.Old.Expires
	ok := true
	switch m.Expire.Cond {
	case ExpNX:
		ok = cur == 0
	case ExpXX:
		ok = cur != 0
	case ExpGT:
		ok = cur != 0 && m.Expires != 0 && m.Expires > cur
	case ExpLT:
		ok = m.Expires != 0 && (cur == 0 || m.Expires < cur)
	case ExpXXLT:
		ok = cur != 0 && m.Expires != 0 && m.Expires < cur
	}
	if !ok {
		res.Err = ErrConditionFailed
		return
	}
	if m.Expires != 0 && m.Expires <= rs.now {
		rs.del(m.Table, m.Key)
		return
	}
	it := res.Old
	it.Expires = m.Expires
	res.New, res.NewFound = rs.put(m.Table, m.Key, it), true
}

// move carries out OpRename and OpCopy; the condition applies to the target.
func (rs *resolver) move(m *Mutation, res Result) (Result, error) {
	if !res.OldFound {
		res.Err = ErrNotFound
		return res, nil
	}
	if m.Table == m.Target.Table && string(m.Key) == string(m.Target.Key) {
		if m.Cond == CondAbsent {
			res.Err = ErrExists
		} else {
			res.New, res.NewFound = res.Old, true
		}
		return res, nil
	}
	dst, dfound, err := rs.get(m.Target.Table, m.Target.Key)
	if err != nil {
		return res, err
	}
	if res.Err = check(m.Cond, m.Version, &dst, dfound); res.Err != nil {
		return res, nil
	}
	it := res.Old
	it.Value = rs.build(it.Value, 0)
	if it.Kind != KindString { // a collection: its members move to the target's key, under a new generation
		var err error
		if it, err = rs.moveMembers(m.Table, m.Key, it, m.Target.Table, m.Target.Key); err != nil {
			return Result{}, err
		}
	}
	if m.Op == OpRename {
		rs.del(m.Table, m.Key) // the old members are outdated with their meta
	}
	res.New, res.NewFound = rs.put(m.Target.Table, m.Target.Key, it), true
	return res, nil
}

// ParseInt parses a value as Redis does for INCR: optional '-', decimal digits, no spaces, no leading zeros,
// within int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	s := b
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || (s[0] == '0' && (len(s) > 1 || len(b) > 1)) {
		return 0, len(s) == 1 && s[0] == '0' && len(b) == 1
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// ParseUint parses a value as memcached 1.6 does for incr/decr (safe_strtoull, strtoull's rules): leading white
// space, an optional sign, decimal digits within uint64, then the end, a NUL or white space (what follows is ignored:
// memcached pads a shrunk number with spaces, and reads "7 x" as 7). A minus sign is accepted only where the
// result, negated modulo 2^64, is not negative as a signed number ("-0"), as memcached checks.
func ParseUint(b []byte) (uint64, bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var n uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false // strtoull's ERANGE
		}
		n = n*10 + d
	}
	if i == start || i < len(b) && !isSpace(b[i]) && b[i] != 0 { // C's string ends at a NUL
		return 0, false
	}
	if neg {
		n = -n
		if int64(n) < 0 {
			return 0, false
		}
	}
	return n, true
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
