package collections

import "anykv/internal/engine"

// coll is the meta item of one collection (list, sorted set, stream) as a registered function sees it: where
// it lives, its decoded meta, and whether it exists. list, zset and stream embed it.
type coll struct {
	tx     *engine.Tx
	table  string
	key    []byte
	meta   engine.CollMeta
	item   engine.Item // the meta item
	exists bool
}

// openColl reads the collection of kind at table/key: wrong is true if another kind is stored there.
func openColl(tx *engine.Tx, table string, key []byte, kind engine.Kind) (c coll, wrong bool, err error) {
	c = coll{tx: tx, table: table, key: key}
	it, found, err := tx.Get(table, key)
	if err != nil || !found {
		return c, false, err
	}
	if it.Kind != kind {
		return c, true, nil
	}
	c.meta, err = engine.DecodeCollMeta(it.Value)
	c.item, c.exists = it, true
	return c, false, err
}

// memberPrefix is the key prefix of the collection's items, one per member in member order: the members
// themselves for hashes and sets, the member → score items ("m"+member) for sorted sets.
func (c *coll) memberPrefix() []byte {
	p := engine.MemberPrefix(nil, c.key, c.meta.Gen)
	if c.item.Kind == engine.KindZSet {
		p = append(p, 'm')
	}
	return p
}

// memberValue is what a reply shows of a member item's value: the value itself (copied), or for a sorted set
// the score's text.
func (c *coll) memberValue(v []byte) ([]byte, error) {
	if c.item.Kind != engine.KindZSet {
		return append([]byte(nil), v...), nil
	}
	f, err := decodeScore(v)
	return FormatScore(f), err
}

// clampRanks turns Redis's start and stop indexes (inclusive, negative from the end) over n entries into the
// ranks they select, first..last; ok is false when they select none (LRANGE, LTRIM, ZRANGE by rank).
func clampRanks(start, stop, n int64) (first, last int64, ok bool) {
	if start < 0 {
		start = max(start+n, 0)
	}
	if stop < 0 {
		stop += n
	}
	stop = min(stop, n-1)
	return start, stop, start <= stop && start < n
}

// save writes the meta back (its version follows every change), or deletes the collection once it is empty.
func (c *coll) save() {
	if c.meta.Count <= 0 {
		c.tx.Delete(c.table, c.key)
		return
	}
	c.put()
}

// put writes the meta back whatever the count (an empty stream stays, as in Redis).
func (c *coll) put() {
	c.item.Value = engine.AppendCollMeta(nil, c.meta)
	c.tx.Put(c.table, c.key, c.item)
}

// settle decides what every function decides first: an engine error, WRONGTYPE, or a collection that does not
// exist (answered with absent) end the call (done).
func settle(exists, wrong bool, err error, absent engine.Result) (res engine.Result, done bool, _ error) {
	switch {
	case err != nil:
		return engine.Result{}, true, err
	case wrong:
		return wrongType, true, nil
	case !exists:
		return absent, true, nil
	}
	return engine.Result{}, false, nil
}

// wrongType is the result of a function called on a key that holds another kind.
var wrongType = engine.Result{Err: engine.ErrWrongType}
