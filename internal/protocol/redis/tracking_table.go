package redis

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// The tracking table of Redis's client-side caching (tracking.go has the commands and a connection's side): which
// connections may hold which keys in their caches, so that a write of a key tells them. As in Redis, keys are
// names only, whatever the database: a write of k in database 1 invalidates a k read in database 0.
//
// Every batch any protocol applies reaches trackWrites through kv.Store.OnApplied while some client tracks (one
// atomic load per batch otherwise), and the sweeper's expiries through Handler.expired; kv.EachWritten names the
// keys a batch changed, as it does for WATCH. A key is registered before its read runs (tracking.go), so a write
// that the read did not see finds the registration once it is applied. The table is bounded
// (tracking-table-max-keys): a key that does not fit evicts another, whose holders are told as if it changed.
//
// One mutex guards the table and every tracker's registrations; messages are sent after it is released.

// defaultTrackingMaxKeys is Redis's tracking-table-max-keys default.
const defaultTrackingMaxKeys = 1000000

// trackTable is a handler's tracking table.
type trackTable struct {
	n       atomic.Int32 // clients with tracking on; 0: nothing below is used
	maxKeys atomic.Int64 // tracking-table-max-keys (0: unbounded)

	mu       sync.Mutex
	keys     map[string]holders               // key → the (default-mode) trackers that read it
	items    int                              // registrations: key and tracker pairs
	clients  map[int64]*tracker               // trackers with tracking on, by client id
	prefixes map[string]map[*tracker]struct{} // BCAST prefix → its trackers
	// lens counts the BCAST prefixes by length and byLen lists those lengths in order: a written key is looked up
	// under each of its own prefixes of those lengths, one map lookup per length in use. A scan of every prefix
	// cost each write of any client one comparison per prefix, under mu (100,000 prefixes: see
	// BenchmarkTrackWritesManyPrefixes).
	lens  map[int]int
	byLen []int
}

// holders are the trackers of one key: most keys have one, kept inline (no allocation).
type holders struct {
	one  *tracker
	more []*tracker
}

// has reports whether t is among h.
func (h *holders) has(t *tracker) bool {
	if h.one == t {
		return true
	}
	for _, o := range h.more {
		if o == t {
			return true
		}
	}
	return false
}

// add adds t, which h does not have.
func (h *holders) add(t *tracker) {
	if h.one == nil {
		h.one = t
		return
	}
	h.more = append(h.more, t)
}

// remove drops t and reports whether h is empty.
func (h *holders) remove(t *tracker) bool {
	if h.one == t {
		h.one = nil
		if n := len(h.more); n > 0 {
			h.one, h.more = h.more[n-1], h.more[:n-1]
		}
		return h.one == nil
	}
	for i, o := range h.more {
		if o == t {
			h.more = append(h.more[:i], h.more[i+1:]...)
			break
		}
	}
	return false
}

// each calls f with every holder.
func (h *holders) each(f func(t *tracker)) {
	if h.one != nil {
		f(h.one)
	}
	for _, t := range h.more {
		f(t)
	}
}

// trackMsg is one invalidation to send: keys of one tracker (one key in default mode, a prefix's keys in BCAST
// mode), or all of them (null: a flush).
type trackMsg struct {
	t     *tracker
	to    *session // its redirect target (nil: gone, or none)
	redir int64    // the redirect's client id; 0: t's own connection
	keys  [][]byte
	null  bool
	// own: the tracker's own write (or flush) in default mode, sent right after that command's reply, as Redis
	// sends it; bcast: a BCAST message, which Redis sends once the commands of the event loop's pass are done.
	own, bcast bool
}

// on reports whether any client tracks keys.
func (tt *trackTable) on() bool { return tt.n.Load() > 0 }

// trackEnable turns tracking on for t (again) in mode, with the prefixes given for BCAST (added to those it has).
func (h *Handler) trackEnable(t *tracker, mode trackMode, prefixes []string) {
	tt := &h.track
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t.on, t.bcast, t.optin, t.optout, t.noloop = true, mode.bcast, mode.optin, mode.optout, mode.noloop
	t.redirect, t.target = mode.redirect, mode.target
	if tt.clients == nil {
		tt.clients, tt.keys, tt.prefixes = map[int64]*tracker{}, map[string]holders{}, map[string]map[*tracker]struct{}{}
	}
	if _, ok := tt.clients[t.s.id]; !ok {
		tt.clients[t.s.id] = t
		if tt.n.Add(1) == 1 {
			h.store.OnApplied(h.trackWrites) // before the client's first read registers anything
		}
	}
	if t.bcast && len(prefixes) == 0 {
		prefixes = []string{""}
	}
	for _, p := range prefixes {
		tt.addPrefix(t, p)
	}
	sort.Strings(t.prefixes)
}

// addPrefix gives t the BCAST prefix p (if it has it not); the caller holds mu.
func (tt *trackTable) addPrefix(t *tracker, p string) {
	set := tt.prefixes[p]
	if set == nil {
		set = map[*tracker]struct{}{}
		tt.prefixes[p] = set
		tt.countLen(len(p), 1)
	}
	if _, ok := set[t]; !ok {
		set[t] = struct{}{}
		t.prefixes = append(t.prefixes, p)
	}
}

// dropPrefixes takes t's BCAST prefixes away; the caller holds mu.
func (tt *trackTable) dropPrefixes(t *tracker) {
	for _, p := range t.prefixes {
		delete(tt.prefixes[p], t)
		if len(tt.prefixes[p]) == 0 {
			delete(tt.prefixes, p)
			tt.countLen(len(p), -1)
		}
	}
	t.prefixes = nil
}

// trackDisable forgets t: its registrations, its prefixes, and its place among the tracking clients.
func (h *Handler) trackDisable(t *tracker) {
	tt := &h.track
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t.on, t.bcast, t.optin, t.optout, t.noloop, t.redirect, t.target = false, false, false, false, false, 0, nil
	for k := range t.keys {
		if hs, ok := tt.keys[k]; ok {
			if hs.remove(t) {
				delete(tt.keys, k)
			} else {
				tt.keys[k] = hs
			}
			tt.items--
		}
	}
	t.keys = nil
	tt.dropPrefixes(t)
	if _, ok := tt.clients[t.s.id]; ok {
		delete(tt.clients, t.s.id)
		if tt.n.Add(-1) == 0 {
			h.store.OnApplied(nil)
		}
	}
}

// trackKeys registers keys as read by t, evicting other keys past the table's bound, and sends the evictions'
// invalidations.
func (h *Handler) trackKeys(t *tracker, keys [][]byte) {
	tt := &h.track
	var out []trackMsg
	tt.mu.Lock()
	if tt.clients[t.s.id] != t { // turned off meanwhile (a script's read, run in the engine)
		tt.mu.Unlock()
		return
	}
	for _, k := range keys {
		_, out = tt.register(t, k, out)
	}
	tt.mu.Unlock()
	h.sendTracking(out)
}

// register adds t to key's holders, evicting another key first if the table is full, and reports whether t held
// it already; the caller holds the lock.
func (tt *trackTable) register(t *tracker, key []byte, out []trackMsg) (bool, []trackMsg) {
	if hs, ok := tt.keys[string(key)]; ok {
		if hs.has(t) {
			return true, out
		}
		hs.add(t)
		tt.keys[string(key)] = hs
		t.remember(string(key), tt)
		return false, out
	}
	for max := int(tt.maxKeys.Load()); max > 0 && len(tt.keys) >= max; {
		out = tt.evictOne(out)
	}
	ks := string(key)
	tt.keys[ks] = holders{one: t}
	t.remember(ks, tt)
	return false, out
}

// unregister drops t from key's holders; the caller holds the lock.
func (tt *trackTable) unregister(t *tracker, key string) {
	hs, ok := tt.keys[key]
	if !ok || !hs.has(t) {
		return
	}
	t.forget(key, tt)
	if hs.remove(t) {
		delete(tt.keys, key)
	} else {
		tt.keys[key] = hs
	}
}

// remember notes key (the table's own string) among t's registrations.
func (t *tracker) remember(key string, tt *trackTable) {
	if t.keys == nil {
		t.keys = map[string]struct{}{}
	}
	t.keys[key] = struct{}{}
	tt.items++
}

// trackKeysOf registers keys as read by the tracking client with this id (a script's reads, which run in the
// engine and know the client by id).
func (h *Handler) trackKeysOf(id int64, keys [][]byte) {
	h.track.mu.Lock()
	t := h.track.clients[id]
	h.track.mu.Unlock()
	if t != nil {
		h.trackKeys(t, keys)
	}
}

// evictOne drops a key the map's iteration picks (Go starts it at random) and adds its invalidations to out.
func (tt *trackTable) evictOne(out []trackMsg) []trackMsg {
	for k := range tt.keys {
		return tt.invalidate(nil, []byte(k), out)
	}
	return out
}

// trackTrim evicts keys until the table is within its bound (CONFIG SET tracking-table-max-keys lowered it).
func (h *Handler) trackTrim() {
	tt := &h.track
	var out []trackMsg
	tt.mu.Lock()
	for max := int(tt.maxKeys.Load()); max > 0 && len(tt.keys) > max; {
		out = tt.evictOne(out)
	}
	tt.mu.Unlock()
	h.sendTracking(out)
}

// invalidate forgets key, adding a message for each of its holders to out, but for a NOLOOP holder that wrote it
// itself (writer). A writer running a transaction with tracked reads keeps its registration here: replayExec
// judges it in the transaction's order.
func (tt *trackTable) invalidate(writer *tracker, key []byte, out []trackMsg) []trackMsg {
	hs, ok := tt.keys[string(key)]
	if !ok {
		return out
	}
	var kept holders
	hs.each(func(t *tracker) {
		if t == writer && t.exec != nil {
			kept.add(t)
			return
		}
		t.forget(string(key), tt)
		if t.noloop && t == writer {
			return
		}
		m := t.msg([][]byte{key}, false)
		m.own = t == writer
		out = append(out, m)
	})
	if kept.one != nil {
		tt.keys[string(key)] = kept
	} else {
		delete(tt.keys, string(key))
	}
	return out
}

// forget drops key from t's registrations.
func (t *tracker) forget(key string, tt *trackTable) {
	delete(t.keys, key)
	tt.items--
}

// trackWrites is the store's OnApplied function while some client tracks: it invalidates the keys the batch
// changed in any database (and, for a flush, every key of every tracking client, with a null), and sends
// BCAST clients the keys under their prefixes, one message per prefix.
func (h *Handler) trackWrites(ctx context.Context, muts []engine.Mutation, res []engine.Result) {
	writer, _ := ctx.Value(trackerKey{}).(*tracker)
	tt := &h.track
	var out []trackMsg
	var bcast map[string][][]byte // prefix → keys written under it
	tt.mu.Lock()
	var own []execEvent // a transaction's own writes, for replayExec
	flushed := -1       // the mutation last told as a flush
	kv.EachWritten(muts, res, func(i int, table string, key []byte) {
		if !h.isDB(table) {
			return
		}
		if writer != nil && writer.exec != nil {
			own = append(own, execEvent{at: i - writer.exec.off, key: string(key), write: true})
		}
		out = tt.invalidate(writer, key, out)
		bcast = tt.under(key, bcast)
	}, func(i int, table string) {
		if (table == "" || h.isDB(table)) && i != flushed { // a SWAPDB flushes two tables: one null for both
			flushed = i
			out = tt.flush(writer, out)
			if writer != nil && writer.exec != nil {
				own = append(own, execEvent{at: i - writer.exec.off, flush: true})
			}
		}
	})
	if writer != nil && writer.exec != nil {
		out = tt.replayExec(writer, own, out)
	}
	out = tt.broadcast(writer, bcast, out)
	tt.mu.Unlock()
	h.sendTracking(out)
}

// execReads are a transaction's tracked reads while EXEC's batch runs: their places among its mutations (off:
// where its own mutations begin, after WATCH's guards), and whether the client held each key before.
type execReads struct {
	off   int
	reads []execEvent
	held  map[string]bool
}

// execEvent is a read of key, a write of it, or a flush, at a mutation of a transaction.
type execEvent struct {
	at           int
	key          string
	write, flush bool
}

// trackExecKeys registers keys read by a command queued in the transaction EXEC is compiling, at mutation pos.
func (h *Handler) trackExecKeys(t *tracker, keys [][]byte, pos int) {
	tt := &h.track
	var out []trackMsg
	tt.mu.Lock()
	if tt.clients[t.s.id] == t {
		if t.exec == nil {
			t.exec = &execReads{held: map[string]bool{}}
		}
		for _, k := range keys {
			var had bool
			had, out = tt.register(t, k, out)
			if _, seen := t.exec.held[string(k)]; !seen {
				t.exec.held[string(k)] = had
			}
			t.exec.reads = append(t.exec.reads, execEvent{at: pos, key: string(k)})
		}
	}
	tt.mu.Unlock()
	h.sendTracking(out)
}

// trackExecDone ends the transaction's tracked reads (EXEC's batch ran, or did not).
func (h *Handler) trackExecDone(t *tracker) {
	h.track.mu.Lock()
	t.exec = nil
	h.track.mu.Unlock()
}

// replayExec judges a transaction's own writes of the keys it tracks in the order Redis runs its commands: a
// write of a key the client holds at that point sends the client its invalidation (after EXEC's reply) and
// forgets the key, a read registers it again; the client ends holding the keys read after their last write.
// (Its reads were registered before the batch ran, so that other clients' writes find them.)
func (tt *trackTable) replayExec(t *tracker, own []execEvent, out []trackMsg) []trackMsg {
	byKey := map[string][]execEvent{}
	var flushes []execEvent
	for _, e := range append(own, t.exec.reads...) {
		if e.flush {
			flushes = append(flushes, e)
			continue
		}
		byKey[e.key] = append(byKey[e.key], e)
	}
	for key, evs := range byKey {
		evs = append(evs, flushes...)
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
		live, read := t.exec.held[key]
		if !read { // only written: held as it was before the transaction
			_, live = t.keys[key]
		}
		for _, e := range evs {
			switch {
			case e.flush:
				live = false // its null went to every tracking client
			case e.write:
				if live && !t.noloop {
					m := t.msg([][]byte{[]byte(key)}, false)
					m.own = true
					out = append(out, m)
				}
				live = false
			default:
				live = true
			}
		}
		if live {
			_, out = tt.register(t, []byte(key), out)
		} else {
			tt.unregister(t, key)
		}
	}
	return out
}

// trackExpired invalidates a key the sweeper removed because it expired.
func (h *Handler) trackExpired(table string, key []byte) {
	if !h.track.on() || !h.isDB(table) {
		return
	}
	tt := &h.track
	tt.mu.Lock()
	out := tt.invalidate(nil, key, nil)
	out = tt.broadcast(nil, tt.under(key, nil), out)
	tt.mu.Unlock()
	h.sendTracking(out)
}

// under adds key to bcast (prefix → keys written under it, made if nil) under each BCAST prefix key has, shortest
// first, and returns bcast; the caller holds mu. A written key is looked up under its own prefixes of the lengths
// in use (byLen).
func (tt *trackTable) under(key []byte, bcast map[string][][]byte) map[string][][]byte {
	for _, l := range tt.byLen {
		if l > len(key) {
			break
		}
		if _, ok := tt.prefixes[string(key[:l])]; ok {
			if bcast == nil {
				bcast = map[string][][]byte{}
			}
			p := string(key[:l])
			bcast[p] = append(bcast[p], key)
		}
	}
	return bcast
}

// countLen adds d to the BCAST prefixes of length l, keeping byLen the lengths in use; the caller holds mu.
func (tt *trackTable) countLen(l, d int) {
	if tt.lens == nil {
		tt.lens = map[int]int{}
	}
	n := tt.lens[l] + d
	i, found := slices.BinarySearch(tt.byLen, l)
	switch {
	case n > 0 && !found:
		tt.byLen = slices.Insert(tt.byLen, i, l)
	case n <= 0 && found:
		tt.byLen = slices.Delete(tt.byLen, i, i+1)
	}
	if n > 0 {
		tt.lens[l] = n
	} else {
		delete(tt.lens, l)
	}
}

// broadcast adds, for each prefix in bcast (in order), one message with its keys (sorted, each once, as Redis's
// radix tree gives them) for each of its trackers, but a NOLOOP one that wrote them itself.
func (tt *trackTable) broadcast(writer *tracker, bcast map[string][][]byte, out []trackMsg) []trackMsg {
	if len(bcast) == 0 {
		return out
	}
	ps := make([]string, 0, len(bcast))
	for p := range bcast {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for _, p := range ps {
		keys := bcast[p]
		sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
		uniq := keys[:0]
		for i, k := range keys {
			if i == 0 || !bytes.Equal(k, keys[i-1]) {
				uniq = append(uniq, k)
			}
		}
		for t := range tt.prefixes[p] {
			if t.noloop && t == writer {
				continue
			}
			m := t.msg(uniq, false)
			m.bcast = true
			out = append(out, m)
		}
	}
	return out
}

// flush forgets every registration and adds a null message for every tracking client (BCAST ones too), in the
// order they connected, as Redis's FLUSHDB and FLUSHALL send.
func (tt *trackTable) flush(writer *tracker, out []trackMsg) []trackMsg {
	ids := make([]int64, 0, len(tt.clients))
	for id := range tt.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := tt.clients[id]
		t.keys = nil
		m := t.msg(nil, true)
		m.own = t == writer
		out = append(out, m)
	}
	clear(tt.keys)
	tt.items = 0
	return out
}

// isDB reports whether table backs one of the databases.
func (h *Handler) isDB(table string) bool {
	if table == kv.DefaultTable {
		return true
	}
	n, ok := strings.CutPrefix(table, "db")
	if !ok || n == "" || n[0] == '0' || len(n) > 6 {
		return false
	}
	db := 0
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
		db = db*10 + int(c-'0')
	}
	return db < h.opts.Databases
}

// trackStats are INFO's figures: tracking clients, keys, registrations and BCAST prefixes.
func (tt *trackTable) stats() (clients, keys, items, prefixes int) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.clients), len(tt.keys), tt.items, len(tt.prefixes)
}
