package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// RangeReader is a Reader that can also list stored items in key order. Resolve needs it for the member ops that
// read many members (OpMembers) and to rename or copy a collection; a Reader without it makes those fail with
// ErrNotSupported.
type RangeReader interface {
	Reader
	// Range calls fn for each stored item of table whose key lies in r, expired or not, in key order, until fn
	// returns false. key and it.Value must stay valid after fn returns (as Read's values).
	Range(table string, r Range, fn func(key []byte, it Item) bool) error
}

// ReverseRangeReader is a RangeReader that can also list items in descending key order, so that a reverse read
// of a few members at the top of a big collection (ZREVRANGE 0 9, ZPOPMAX) does not read all of them. Without
// it a reverse scan reads the range forward first.
type ReverseRangeReader interface {
	RangeReader
	// RangeReverse is Range in descending key order.
	RangeReverse(table string, r Range, fn func(key []byte, it Item) bool) error
}

// scan calls fn for each live item of table with the prefix, in key order, as this batch sees them.
func (rs *resolver) scan(table string, prefix []byte, fn func(key []byte, it Item) bool) error {
	return rs.scanRange(table, PrefixRange(prefix), false, fn)
}

// scanRange calls fn for each live item of table whose key lies in r, in key order (descending if reverse), as
// this batch sees them: the engine's items merged with the batch's own writes.
func (rs *resolver) scanRange(table string, r Range, reverse bool, fn func(key []byte, it Item) bool) error {
	rr, ok := rs.r.(RangeReader)
	if !ok {
		return fmt.Errorf("%w: reading a range of members", ErrNotSupported)
	}
	read := rr.Range
	if rv, ok := rr.(ReverseRangeReader); ok && reverse {
		read = rv.RangeReverse
	} else if reverse {
		read = func(table string, r Range, fn func(key []byte, it Item) bool) error {
			var keys [][]byte
			var items []Item
			if err := rr.Range(table, r, func(k []byte, it Item) bool {
				keys, items = append(keys, k), append(items, it)
				return true
			}); err != nil {
				return err
			}
			for i := len(keys) - 1; i >= 0 && fn(keys[i], items[i]); i-- {
			}
			return nil
		}
	}
	// The batch's own writes in the range, sorted; nil items are deletions.
	if rs.overlay == nil {
		rs.index()
	}
	mine := rs.ownRange(table, r)
	before := func(a, b string) bool { return a < b } // a comes before b in the scan's order
	if reverse {
		slices.Reverse(mine)
		before = func(a, b string) bool { return a > b }
	}
	i := 0
	emit := func(k string) bool { // an overlay entry
		wr, _ := rs.own(table, []byte(k))
		if wr.Delete || !wr.Item.Live(rs.now) {
			return true
		}
		return fn([]byte(k), wr.Item)
	}
	stopped, tooBig := false, false
	if !rs.flushedAll && !rs.flushed[table] {
		err := read(table, r, func(key []byte, it Item) bool {
			for i < len(mine) && before(mine[i], string(key)) {
				if !emit(mine[i]) {
					stopped = true
					return false
				}
				i++
			}
			if i < len(mine) && mine[i] == string(key) {
				return true // the batch rewrote or deleted it: emitted from the overlay
			}
			if !it.Live(rs.now) {
				return true
			}
			if it.Expires != 0 && rs.watch != nil {
				rs.watch.LiveUntil(it.Expires) // found alive as a point read does (getFrom)
			}
			if rs.reading {
				// The caller copies the member's name as well as its value (a set's members are all names).
				// One read alone stops at the bound too: SMEMBERS of a set bigger than memory would otherwise
				// hold all of it, read from the disk it outgrew, until the process ran out of memory.
				if !rs.count(len(key) + len(it.Value)) {
					tooBig = true
					return false
				}
			}
			if !fn(key, it) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		if tooBig {
			if rs.refused != nil {
				return rs.refusal()
			}
			return ErrReadTooBig
		}
	}
	for ; !stopped && i < len(mine); i++ {
		if !emit(mine[i]) {
			break
		}
	}
	return nil
}

// collMeta decodes the meta of the collection at the key, if found is true and it has the wanted kind.
func collMeta(it *Item, found bool, want Kind) (CollMeta, error) {
	if !found {
		return CollMeta{}, nil
	}
	if it.Kind != want {
		return CollMeta{}, ErrWrongType
	}
	return DecodeCollMeta(it.Value)
}

// member carries out the member ops; res holds the collection's meta item as the batch sees it.
func (rs *resolver) member(m *Mutation, res Result) (Result, error) {
	meta, err := collMeta(&res.Old, res.OldFound, m.Coll.Kind)
	switch {
	case errors.Is(err, ErrWrongType):
		return Result{Err: ErrWrongType}, nil
	case err != nil:
		return Result{}, err
	}
	exists := res.OldFound
	mt := MemberTable(m.Table)
	if m.Op == OpMembers {
		if !exists {
			return Result{}, nil
		}
		var out []Member
		prefix := MemberPrefix(nil, m.Key, meta.Gen)
		err := rs.scan(mt, prefix, func(k []byte, it Item) bool {
			out = append(out, Member{Name: append([]byte(nil), k[len(prefix):]...), Item: it})
			rs.hold(EntryCost) // the Member kept
			return true
		})
		return Result{Members: out}, err
	}
	var mk []byte
	var mem Item
	var mfound bool
	if exists {
		mk = MemberKey(m.Key, meta.Gen, m.Coll.Member)
		if mem, mfound, err = rs.get(mt, mk); err != nil {
			return Result{}, err
		}
	}
	out := Result{Old: mem, OldFound: mfound}
	if out.Err = check(m.Cond, m.Version, &mem, mfound); out.Err != nil {
		return out, nil
	}
	metaItem := res.Old
	switch m.Op {
	case OpMemberGet:
		if !mfound {
			out.Err = ErrNotFound
		} else {
			out.New, out.NewFound = mem, true
		}
		return out, nil
	case OpMemberDel:
		if !mfound {
			out.Err = ErrNotFound
			return out, nil
		}
		rs.del(mt, mk)
		if meta.Count--; meta.Count <= 0 {
			rs.del(m.Table, m.Key) // Redis removes an empty collection
			return out, nil
		}
	default: // the writes: create the collection if needed
		if !exists {
			meta = CollMeta{Gen: rs.next()}
			metaItem = Item{Kind: m.Coll.Kind}
			mk = MemberKey(m.Key, meta.Gen, m.Coll.Member)
		}
		switch m.Op {
		case OpMemberSet:
			out.New, out.NewFound = rs.put(mt, mk, Item{Value: m.Value}), true
		case OpMemberIncr:
			rs.incr(m, &out, mt, mk)
		case OpMemberIncrFloat:
			rs.incrFloat(m, &out, mt, mk)
		}
		if out.Err != nil {
			return out, nil // nothing written
		}
		if !mfound {
			meta.Count++
		}
	}
	// Every change of a member rewrites the meta, so its version follows every change of the collection.
	metaItem.Value = AppendCollMeta(nil, meta)
	rs.put(m.Table, m.Key, metaItem)
	return out, nil
}

// memberCopyOverhead is what a copied member costs beside its target's key, its name and its value (counted
// twice: as read, and cloned): the write recorded, the generation in its key.
const memberCopyOverhead = 96

// moveMembers copies the members of the collection in it (at table/key) to a new generation for the collection
// at dst/dstKey, and returns the meta item to store there.
func (rs *resolver) moveMembers(table string, key []byte, it Item, dst string, dstKey []byte) (Item, error) {
	meta, err := DecodeCollMeta(it.Value)
	if err != nil {
		return Item{}, err
	}
	gen := rs.next()
	prefix := MemberPrefix(nil, key, meta.Gen)
	type kv struct {
		name []byte
		it   Item
	}
	var members []kv
	err = rs.scan(MemberTable(table), prefix, func(k []byte, m Item) bool {
		// What the copies build counts against maxBuilt as other writes' values do (one command alone may pass
		// it, the batch's next is refused): a pipeline of COPYs of a 40 MiB hash took the process from 364 MB
		// to 1.9 GB, a MULTI of them to 4 GB (an audit); now a pipeline is answered a command at a time past
		// the bound, and a transaction is refused whole.
		// The copy's key holds the target's key whole (up to 64 KiB), its name and the generation.
		rs.built += len(dstKey) + len(k) - len(prefix) + 2*len(m.Value) + memberCopyOverhead
		members = append(members, kv{bytes.Clone(k[len(prefix):]), m})
		return true
	})
	if err != nil {
		return Item{}, err
	}
	dmt := MemberTable(dst)
	for _, m := range members {
		m.it.Value = bytes.Clone(m.it.Value)
		rs.put(dmt, MemberKey(dstKey, gen, m.name), m.it)
	}
	meta.Gen = gen // the rest (a list's head, a stream's last ID) moves with the members
	it.Value = AppendCollMeta(nil, meta)
	return it, nil
}
