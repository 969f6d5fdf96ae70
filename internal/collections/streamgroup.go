package collections

import (
	"bytes"
	"encoding/binary"
	"errors"

	"anykv/internal/engine"
)

// Stream consumer groups. A group's state lives beside the stream's entries, as further members of the
// stream's member table under keys that sort after every entry ID: sixteen 0xFF bytes (the largest ID's key,
// which they extend) and a tag byte (lp(x) is x after its length as a uvarint):
//
//	'g' group                                a group: last-delivered-id (16 bytes), entries-read (varint, -1: unknown), pending entries (uvarint)
//	'p' lp(group) id(16)                     a pending entry: lp(consumer), delivery time (ms, varint), deliveries (uvarint)
//	'c' lp(group) consumer                   a consumer: seen time, active time (ms, varints; -1: never), pending entries (uvarint)
//	'o' lp(group) lp(consumer) id(16)        a consumer's pending entry (empty: an index, so that reading one
//	                                         consumer's pending entries reads only those)
//	's'                                      the stream's tally: entries deleted (uvarint), the largest ID XDEL deleted (16 bytes)
//
// So the entry scans (XRANGE, XREAD, trims), which end at the largest ID's key, and XLEN (the meta's count)
// never see them, while whatever handles a collection's members whole carries them: DEL, UNLINK and expiry
// reclaim them with the entries, RENAME and COPY move or copy them (a copy keeps its groups, as Redis's COPY
// does). A call that writes rewrites the meta (its version), as every collection write does; so a WATCH of the
// stream sees group changes, which Redis's does not (docs/resp.md), and a call that changes nothing writes nothing.
//
// The tally gives Redis 7's entries-added (count + deleted) and max-deleted-entry-id, from which XINFO's
// entries-read and lag are derived as Redis derives them; XADD does not write it, only deletions do.
//
// Times (delivery, seen, active) are the batch's time, so every function stays deterministic.

var groupSpace = bytes.Repeat([]byte{0xFF}, 16)

// Tags of the group records (after groupSpace).
const (
	tagGroup    = 'g'
	tagPending  = 'p'
	tagConsumer = 'c'
	tagOwner    = 'o'
	tagTally    = 's'
)

// Errors of the group functions; the protocol adds Redis's text (which names the key and group) to ErrNoGroup.
var (
	ErrNoGroup   = errors.New("NOGROUP")
	ErrBusyGroup = errors.New("BUSYGROUP Consumer Group name already exists")
)

// invalidRead is Redis's SCG_INVALID_ENTRIES_READ: a group's entries-read that is not known.
const invalidRead = -1

// gkey is the member key of a group record: groupSpace, tag, then parts.
func (st *stream) gkey(tag byte, parts ...[]byte) []byte {
	m := append(append([]byte(nil), groupSpace...), tag)
	for _, p := range parts {
		m = append(m, p...)
	}
	return engine.MemberKey(st.key, st.meta.Gen, m)
}

// lp is b with its length in front, so that one group's records never run into another's.
func lp(b []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(b))), b...) }

func (st *stream) mt() string { return engine.MemberTable(st.table) }

// scanPrefix calls fn for each member under the group-record prefix (tag and parts), with the rest of its key.
func (st *stream) scanPrefix(fn func(rest, v []byte) bool, tag byte, parts ...[]byte) error {
	prefix := st.gkey(tag, parts...)
	return st.tx.Scan(st.mt(), engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
		return fn(k[len(prefix):], it.Value)
	})
}

// group is a consumer group's record.
type group struct {
	name    []byte
	last    ID
	read    int64 // entries-read
	pending int64 // its pending entries
	found   bool
}

// decodeGroup reads a group record's value: last-delivered-id, entries-read (varint), pending (uvarint).
func decodeGroup(name, v []byte) (group, error) {
	g := group{name: name, found: true}
	if len(v) < 17 {
		return g, engine.ErrCorrupt
	}
	g.last = idOf(v)
	var w1, w2 int
	g.read, w1 = binary.Varint(v[16:])
	if w1 > 0 {
		var n uint64
		n, w2 = binary.Uvarint(v[16+w1:])
		g.pending = int64(n)
	}
	if w1 <= 0 || w2 <= 0 {
		return g, engine.ErrCorrupt
	}
	return g, nil
}

func (st *stream) group(name []byte) (group, error) {
	g := group{name: name, read: invalidRead}
	if !st.exists {
		return g, nil
	}
	it, found, err := st.tx.Get(st.mt(), st.gkey(tagGroup, name))
	if err != nil || !found {
		return g, err
	}
	return decodeGroup(name, it.Value)
}

func (st *stream) putGroup(g group) {
	v := binary.AppendUvarint(binary.AppendVarint(g.last.key(), g.read), uint64(g.pending))
	st.tx.Put(st.mt(), st.gkey(tagGroup, g.name), engine.Item{Value: v})
}

// groups calls fn for each group in name order.
func (st *stream) groups(fn func(g group) bool) error {
	var ferr error
	err := st.scanPrefix(func(rest, v []byte) bool {
		var g group
		if g, ferr = decodeGroup(append([]byte(nil), rest...), v); ferr != nil {
			return false
		}
		return fn(g)
	}, tagGroup)
	if err == nil {
		err = ferr
	}
	return err
}

// nack is a pending entry: delivered to consumer, not acknowledged yet.
type nack struct {
	id       ID
	consumer []byte
	at       int64 // delivery time
	count    int64 // deliveries
}

func decodeNack(id ID, v []byte) (nack, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return nack{}, engine.ErrCorrupt
	}
	p := nack{id: id, consumer: append([]byte(nil), v[w:w+int(n)]...)}
	v = v[w+int(n):]
	at, w1 := binary.Varint(v)
	cnt, w2 := binary.Uvarint(v[max(w1, 0):])
	if w1 <= 0 || w2 <= 0 {
		return nack{}, engine.ErrCorrupt
	}
	p.at, p.count = at, int64(cnt)
	return p, nil
}

func (st *stream) nack(g []byte, id ID) (nack, bool, error) {
	it, found, err := st.tx.Get(st.mt(), st.gkey(tagPending, lp(g), id.key()))
	if err != nil || !found {
		return nack{}, false, err
	}
	p, err := decodeNack(id, it.Value)
	return p, err == nil, err
}

// putNack stores p, pending for p.consumer; prev is who it was pending for before (nil: nobody), whose index
// entry moves to p.consumer's.
func (st *stream) putNack(g []byte, p nack, prev []byte) {
	v := binary.AppendUvarint(binary.AppendVarint(lp(p.consumer), p.at), uint64(p.count))
	st.tx.Put(st.mt(), st.gkey(tagPending, lp(g), p.id.key()), engine.Item{Value: v})
	if prev == nil || string(prev) != string(p.consumer) {
		if prev != nil {
			st.tx.Delete(st.mt(), st.gkey(tagOwner, lp(g), lp(prev), p.id.key()))
			st.count(prev, -1)
		} else {
			st.pel.total++
		}
		st.tx.Put(st.mt(), st.gkey(tagOwner, lp(g), lp(p.consumer), p.id.key()), engine.Item{})
		st.count(p.consumer, 1)
	}
}

// delNack deletes p (acknowledged, or its entry gone) with its consumer's index entry.
func (st *stream) delNack(g []byte, p nack) {
	st.tx.Delete(st.mt(), st.gkey(tagPending, lp(g), p.id.key()))
	st.tx.Delete(st.mt(), st.gkey(tagOwner, lp(g), lp(p.consumer), p.id.key()))
	st.pel.total--
	st.count(p.consumer, -1)
}

// pelDelta is how a call changed its group's pending counts, kept until flushPel writes them.
type pelDelta struct {
	total int64
	per   map[string]int64 // by consumer
}

func (st *stream) count(consumer []byte, d int64) {
	if st.pel.per == nil {
		st.pel.per = map[string]int64{}
	}
	st.pel.per[string(consumer)] += d
}

// flushPel adds the call's changes to the pending counts of group g and of its consumers, reading their records
// as the batch has them now: a call writes its group and consumer first, then flushes.
func (st *stream) flushPel(g []byte) error {
	d := st.pel
	st.pel = pelDelta{}
	if d.total != 0 {
		gr, err := st.group(g)
		if err != nil || !gr.found {
			return err
		}
		gr.pending += d.total
		st.putGroup(gr)
	}
	for name, n := range d.per {
		if n == 0 {
			continue
		}
		c, err := st.consumer(g, []byte(name))
		if err != nil {
			return err
		}
		if c.found { // not one DELCONSUMER deleted
			c.pending += n
			st.putConsumer(g, c)
		}
	}
	return nil
}

// idRange is the range of keys under prefix whose last 16 bytes are IDs in [from, to].
func idRange(prefix []byte, from, to ID) engine.Range {
	r := engine.Range{Start: append(prefix[:len(prefix):len(prefix)], from.key()...), End: engine.PrefixEnd(prefix)}
	if end, ok := to.Next(); ok {
		r.End = append(prefix[:len(prefix):len(prefix)], end.key()...)
	}
	return r
}

// nacks calls fn for the group's pending entries with IDs in [from, to], in ID order.
func (st *stream) nacks(g []byte, from, to ID, fn func(p nack) bool) error {
	prefix := st.gkey(tagPending, lp(g))
	var ferr error
	err := st.tx.Scan(st.mt(), idRange(prefix, from, to), func(k []byte, it engine.Item) bool {
		p, err := decodeNack(idOf(k[len(prefix):]), it.Value)
		if err != nil {
			ferr = err
			return false
		}
		return fn(p)
	})
	if err == nil {
		err = ferr
	}
	return err
}

// nacksOf calls fn for consumer c's pending entries with IDs in [from, to], in ID order: its index gives their
// IDs, so this reads the consumer's entries only, not the group's.
func (st *stream) nacksOf(g, c []byte, from, to ID, fn func(p nack) bool) error {
	prefix := st.gkey(tagOwner, lp(g), lp(c))
	var ids []ID
	err := st.tx.Scan(st.mt(), idRange(prefix, from, to), func(k []byte, _ engine.Item) bool {
		ids = append(ids, idOf(k[len(prefix):]))
		return true
	})
	for _, id := range ids {
		if err != nil {
			return err
		}
		var p nack
		var found bool
		if p, found, err = st.nack(g, id); err == nil && !found {
			err = engine.ErrCorrupt // the index names an entry the group does not hold
		}
		if err == nil && !fn(p) {
			break
		}
	}
	return err
}

// consumer is a group's consumer record.
type consumer struct {
	name         []byte
	seen, active int64
	pending      int64 // its pending entries
	found        bool
}

// decodeConsumer reads a consumer record's value: seen and active times (varints), pending (uvarint).
func decodeConsumer(name, v []byte) (consumer, error) {
	c := consumer{name: name, active: -1, found: true}
	var w1, w2, w3 int
	c.seen, w1 = binary.Varint(v)
	if w1 > 0 {
		c.active, w2 = binary.Varint(v[w1:])
	}
	if w2 > 0 {
		var n uint64
		n, w3 = binary.Uvarint(v[w1+w2:])
		c.pending = int64(n)
	}
	if w1 <= 0 || w2 <= 0 || w3 <= 0 {
		return c, engine.ErrCorrupt
	}
	return c, nil
}

func (st *stream) consumer(g, name []byte) (consumer, error) {
	it, found, err := st.tx.Get(st.mt(), st.gkey(tagConsumer, lp(g), name))
	if err != nil || !found {
		return consumer{name: name, active: -1}, err
	}
	return decodeConsumer(name, it.Value)
}

func (st *stream) putConsumer(g []byte, c consumer) {
	v := binary.AppendUvarint(binary.AppendVarint(binary.AppendVarint(nil, c.seen), c.active), uint64(c.pending))
	st.tx.Put(st.mt(), st.gkey(tagConsumer, lp(g), c.name), engine.Item{Value: v})
}

// consumers calls fn for each consumer of the group in name order.
func (st *stream) consumers(g []byte, fn func(c consumer) bool) error {
	var ferr error
	err := st.scanPrefix(func(rest, v []byte) bool {
		var c consumer
		if c, ferr = decodeConsumer(append([]byte(nil), rest...), v); ferr != nil {
			return false
		}
		return fn(c)
	}, tagConsumer, lp(g))
	if err == nil {
		err = ferr
	}
	return err
}

// touchConsumer finds or creates the consumer and marks it seen now; created says it was new.
func (st *stream) touchConsumer(g, name []byte) (c consumer, created bool, err error) {
	if c, err = st.consumer(g, name); err != nil {
		return c, false, err
	}
	created = !c.found
	c.seen, c.found = st.tx.Now(), true
	return c, created, nil
}

// tally is what the stream's tally record keeps.
type tally struct {
	deleted    uint64
	maxDeleted ID
}

func (st *stream) loadTally() error {
	if st.tallyLoaded || !st.exists {
		st.tallyLoaded = true
		return nil
	}
	st.tallyLoaded = true
	it, found, err := st.tx.Get(st.mt(), st.gkey(tagTally))
	if err != nil || !found {
		return err
	}
	n, w := binary.Uvarint(it.Value)
	if w <= 0 || len(it.Value)-w < 16 {
		return engine.ErrCorrupt
	}
	st.tally = tally{deleted: n, maxDeleted: idOf(it.Value[w:])}
	return nil
}

// noteDeleted counts an entry deleted (by XDEL when byXDel: it may raise max-deleted-entry-id).
func (st *stream) noteDeleted(id ID, byXDel bool) error {
	if err := st.loadTally(); err != nil {
		return err
	}
	st.tally.deleted++
	if byXDel && st.tally.maxDeleted.less(id) {
		st.tally.maxDeleted = id
	}
	st.tallyDirty = true
	return nil
}

// store writes the meta back, and the tally if deletions changed it.
func (st *stream) store() {
	if st.tallyDirty {
		v := append(binary.AppendUvarint(nil, st.tally.deleted), st.tally.maxDeleted.key()...)
		st.tx.Put(st.mt(), st.gkey(tagTally), engine.Item{Value: v})
		st.tallyDirty = false
	}
	st.put()
}

func (st *stream) lastID() ID { return ID{st.meta.LastMS, st.meta.LastSeq} }

// entriesAdded is Redis's entries_added: every entry ever added.
func (st *stream) entriesAdded() int64 { return st.meta.Count + int64(st.tally.deleted) }

// firstID is the first entry's ID (0-0 when empty), Redis's first_id; read once per call (the group functions
// delete no entries).
func (st *stream) firstID() (ID, error) {
	if st.first != nil {
		return *st.first, nil
	}
	var first ID
	err := st.entries(ID{}, maxStreamID, false, func(id ID, _ []byte) bool { first = id; return false })
	if err == nil {
		st.first = &first
	}
	return first, err
}

var maxStreamID = ID{^uint64(0), ^uint64(0)}

// hasTombstones is Redis's streamRangeHasTombstones(s, start, NULL).
func (st *stream) hasTombstones(start ID) (bool, error) {
	md := st.tally.maxDeleted
	if st.meta.Count == 0 || md == (ID{}) {
		return false, nil
	}
	first, err := st.firstID()
	if err != nil || md.less(first) {
		return false, err
	}
	return !md.less(start), nil
}

// estimateRead is Redis's streamEstimateDistanceFromFirstEverEntry: the entries-read of a group whose last
// delivered ID is id, or invalidRead.
func (st *stream) estimateRead(id ID) (int64, error) {
	added, last := st.entriesAdded(), st.lastID()
	switch {
	case added == 0:
		return 0, nil
	case st.meta.Count == 0 && !last.less(id):
		return added, nil
	case id == last:
		return added, nil
	case last.less(id):
		return invalidRead, nil
	}
	first, err := st.firstID()
	if err != nil {
		return 0, err
	}
	if md := st.tally.maxDeleted; md == (ID{}) || md.less(first) {
		if id.less(first) {
			return added - st.meta.Count, nil
		}
		if id == first {
			return added - st.meta.Count + 1, nil
		}
	}
	return invalidRead, nil
}

// lag is Redis's group lag: how many entries the group has still to read, or false when unknown.
func (st *stream) lag(g group) (int64, bool, error) {
	added := st.entriesAdded()
	if added == 0 {
		return 0, true, nil
	}
	if g.read != invalidRead {
		tomb, err := st.hasTombstones(g.last)
		if err != nil {
			return 0, false, err
		}
		if !tomb {
			return added - g.read, true, nil
		}
	}
	read, err := st.estimateRead(g.last)
	if err != nil || read == invalidRead {
		return 0, false, err
	}
	return added - read, true, nil
}

// advance moves the group's last-delivered-id to id (a delivered entry above it), keeping entries-read as
// Redis keeps it.
func (st *stream) advance(g *group, id ID) error {
	if !g.last.less(id) {
		return nil
	}
	tomb, err := st.hasTombstones(id)
	if err != nil {
		return err
	}
	if g.read != invalidRead && !tomb {
		g.read++
	} else if st.entriesAdded() > 0 {
		if g.read, err = st.estimateRead(id); err != nil {
			return err
		}
	}
	g.last = id
	return nil
}

// entry reads one entry's fields (false: deleted).
func (st *stream) entry(id ID) ([]byte, bool, error) {
	it, found, err := st.tx.Get(st.mt(), engine.MemberKey(st.key, st.meta.Gen, id.key()))
	return it.Value, found, err
}

// openGroup opens the stream at the mutation's key and its group; done says the call ends there, with res and
// err (an engine error, WRONGTYPE, or ErrNoGroup: no stream or no such group).
func openGroup(tx *engine.Tx, name []byte) (st stream, g group, res engine.Result, done bool, err error) {
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	switch {
	case err != nil:
		return st, g, res, true, err
	case wrong:
		return st, g, wrongType, true, nil
	}
	if err = st.loadTally(); err != nil {
		return st, g, res, true, err
	}
	if g, err = st.group(name); err != nil || !g.found {
		return st, g, engine.Result{Err: ErrNoGroup}, true, err
	}
	return st, g, res, false, nil
}

// consumerCreated marks a result whose call created a consumer (for the xgroup-createconsumer event).
func consumerCreated(res *engine.Result, created bool) {
	if created {
		res.Old, res.OldFound = engine.Item{Value: []byte("created")}, true
	}
}

// ConsumerCreated reports whether a group function's call created a consumer.
func ConsumerCreated(r engine.Result) bool { return r.OldFound && string(r.Old.Value) == "created" }

// ConsumerDeleted reports whether XGROUP DELCONSUMER's call found the consumer it deleted.
func ConsumerDeleted(r engine.Result) bool { return r.OldFound && string(r.Old.Value) == "deleted" }
