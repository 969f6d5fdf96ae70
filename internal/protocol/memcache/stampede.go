package memcache

import (
	"encoding/binary"
	"fmt"

	"anykv/internal/engine"
)

// Stampede protection of the meta protocol, as memcached 1.6's protocol.txt describes it: mg N (vivify on
// miss) and R (recache when the TTL left is below the token) hand one client a "win" (W) and tell the others
// that a win was handed out (Z); md I marks an item stale instead of deleting it, and mg then returns it with X,
// the first such reader winning.
//
// The two bits memcached keeps in an item (stale, win token sent) are an engine annotation of the item's
// current version (engine/annotation.go): written atomically with the item by the functions below, durable
// like it, and void as soon as anything rewrites the item (a set, an incr, a touch), from any protocol.

// The annotation's payload: one byte of these bits.
const (
	bitStale byte = 1 << iota // md I marked the item stale
	bitWon                    // a W was handed out for this version
)

// The stampede flags of an mg reply, returned by mgFunc in Result.Old.Flags (Old is otherwise unused by it).
const (
	replyW = 1 << iota
	replyZ
	replyX
)

// Registered engine functions (OpCall), so that the bits are read and set in the same atomic step as the item.
const (
	fnMg      = "memcache.mg"       // mg with N, T or R, or on a stale item
	fnStale   = "memcache.stale"    // md I
	fnMsStale = "memcache.ms-stale" // ms I C<cas>
)

func init() {
	engine.RegisterFunc(fnMg, mgFunc)
	engine.RegisterFunc(fnStale, staleFunc)
	engine.RegisterFunc(fnMsStale, msStaleFunc)
}

// callParams are the arguments of the functions: which options were given, and their values (expiries as
// absolute unix ms, already converted from memcached's exptime at the edge; recache in seconds; cas; ms's
// client flags, its value being the call's second argument).
type callParams struct {
	viv, ttl, recache, cas             int64
	flags                              uint32
	hasViv, hasTTL, hasRecache, hasCas bool
}

func (p callParams) encode() []byte {
	var b byte
	for i, on := range []bool{p.hasViv, p.hasTTL, p.hasRecache, p.hasCas} {
		if on {
			b |= 1 << i
		}
	}
	out := []byte{b}
	for _, v := range []int64{p.viv, p.ttl, p.recache, p.cas} {
		out = binary.BigEndian.AppendUint64(out, uint64(v))
	}
	return binary.BigEndian.AppendUint32(out, p.flags)
}

func decodeCallParams(args [][]byte) (callParams, error) {
	if len(args) < 1 || len(args) > 2 || len(args[0]) != 37 {
		return callParams{}, fmt.Errorf("%w: memcache function arguments", engine.ErrInvalid)
	}
	a := args[0]
	v := func(i int) int64 { return int64(binary.BigEndian.Uint64(a[1+8*i:])) }
	return callParams{viv: v(0), ttl: v(1), recache: v(2), cas: v(3), flags: binary.BigEndian.Uint32(a[33:]),
		hasViv: a[0]&1 != 0, hasTTL: a[0]&2 != 0, hasRecache: a[0]&4 != 0, hasCas: a[0]&8 != 0}, nil
}

// callTarget decodes a function's arguments and reads the item it addresses.
func callTarget(tx *engine.Tx, args [][]byte) (p callParams, it engine.Item, found bool, err error) {
	if p, err = decodeCallParams(args); err != nil {
		return p, it, false, err
	}
	it, found, err = tx.Get(tx.Table(), tx.Key())
	return p, it, found, err
}

// annotation reads the stampede bits of the item version at table/key inside a function.
func annotation(tx *engine.Tx, table string, key []byte, version uint64) (byte, error) {
	a, ok, err := tx.Get(engine.MemberTable(table), engine.AnnotationKey(key))
	if err != nil || !ok {
		return 0, err
	}
	if v, payload, ok := engine.DecodeAnnotation(a.Value); ok && v == version && len(payload) == 1 {
		return payload[0], nil
	}
	return 0, nil
}

// annotate stores the bits for the item it (just written or read at table/key); it expires with the item.
func annotate(tx *engine.Tx, table string, key []byte, it engine.Item, bits byte) {
	tx.Put(engine.MemberTable(table), engine.AnnotationKey(key),
		engine.Item{Value: engine.AppendAnnotation(nil, it.Version, []byte{bits}), Expires: it.Expires})
}

// mgFunc is mg with N, T or R: vivify a missing item (the caller wins), apply the new TTL, and decide W, Z and
// X from the bits, marking the win. Result.New is the item as read (after T); Result.Old holds the reply's
// stampede flags (Flags) and the version found before T rewrote the item (Version; 0 if vivified); a miss
// without N is ErrNotFound.
func mgFunc(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	p, it, found, err := callTarget(tx, args)
	if err != nil {
		return engine.Result{}, err
	}
	table, key := tx.Table(), tx.Key()
	if found && it.Kind != engine.KindString {
		return engine.Result{Err: engine.ErrWrongType}, nil
	}
	var bits, was byte
	var reply uint32
	switch {
	case found:
		if bits, err = annotation(tx, table, key, it.Version); err != nil {
			return engine.Result{}, err
		}
		was = bits
	case p.hasViv:
		it = tx.Put(table, key, engine.Item{Value: []byte{}, Expires: p.viv})
		bits, reply = bitWon, replyW
	default:
		return engine.Result{Err: engine.ErrNotFound}, nil
	}
	touched := p.hasTTL
	var read uint64 // the version found, before T's rewrite gives the item a new one (mg's h and l: access.go)
	if found {
		read = it.Version
	}
	if touched {
		it.Expires = p.ttl
		it = tx.Put(table, key, it)
	}
	if found {
		switch {
		case bits&bitWon != 0:
			reply = replyZ
			if bits&bitStale != 0 {
				reply |= replyX
			}
		case bits&bitStale != 0:
			reply, bits = replyX|replyW, bits|bitWon
		case p.hasRecache && it.Expires != 0 && ttlLeft(it.Expires, tx.Now()) < p.recache:
			reply, bits = replyW, bits|bitWon
		}
	}
	if bits != 0 && (bits != was || touched || !found) {
		annotate(tx, table, key, it, bits)
	}
	return engine.Result{New: it, NewFound: true, Old: engine.Item{Flags: reply, Version: read}}, nil
}

// staleFunc is md I: instead of deleting, give the item a new CAS (and the TTL of T, if given) and mark it
// stale with no win handed out, so that the next mg wins the recache. C must match the item's CAS.
func staleFunc(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	p, it, found, err := callTarget(tx, args)
	table, key := tx.Table(), tx.Key()
	switch {
	case err != nil:
		return engine.Result{}, err
	case !found:
		return engine.Result{Err: engine.ErrNotFound}, nil
	case it.Kind != engine.KindString:
		return engine.Result{Err: engine.ErrWrongType}, nil
	case p.hasCas && uint64(p.cas) != it.Version:
		return engine.Result{Err: engine.ErrVersionMismatch}, nil
	}
	if p.hasTTL {
		it.Expires = p.ttl
	}
	it = tx.Put(table, key, it)
	annotate(tx, table, key, it, bitStale)
	return engine.Result{New: it, NewFound: true}, nil
}

// stampedeCall is the OpCall mutation of fn for the request's key and options (and ms's value).
func (c *conn) stampedeCall(fn string, req *request) engine.Mutation {
	m := &req.meta
	p := callParams{hasViv: m.hasViv, hasTTL: m.hasTTL, hasRecache: m.hasRecache, hasCas: m.hasCas,
		recache: m.recache, cas: int64(m.cas), flags: m.flags}
	if m.hasViv {
		p.viv = c.expires(m.viv)
	}
	if m.hasTTL || req.cmd == cmdMs { // ms: no T means no expiry
		p.ttl = c.expires(m.ttl)
	}
	args := [][]byte{p.encode()}
	if req.cmd == cmdMs {
		args = append(args, req.data)
	}
	return engine.Mutation{Op: engine.OpCall, Key: req.key, Call: engine.CallArgs{Name: fn, Args: args}}
}

// msStaleFunc is ms I C<cas> in set or replace mode: with the item's CAS it is a plain compare-and-swap; with
// an older CAS the value is stored anyway but marked stale, with the old item's expiry and its win as it was
// (not handed out: the next reader refreshes the late writer's value; handed out: the winner still does); with
// a newer one, or C0, it fails (EX).
func msStaleFunc(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	p, it, found, err := callTarget(tx, args)
	switch {
	case err != nil:
		return engine.Result{}, err
	case len(args) != 2:
		return engine.Result{}, fmt.Errorf("%w: memcache ms function without a value", engine.ErrInvalid)
	case !found:
		return engine.Result{Err: engine.ErrNotFound}, nil
	case it.Kind != engine.KindString:
		return engine.Result{Err: engine.ErrWrongType}, nil
	case p.cas == 0 || uint64(p.cas) > it.Version: // C0 matches no item (memcached 1.6: EX, nothing stored)
		return engine.Result{Err: engine.ErrVersionMismatch}, nil
	}
	table, key := tx.Table(), tx.Key()
	if uint64(p.cas) == it.Version {
		nw := tx.Put(table, key, engine.Item{Value: args[1], Flags: p.flags, Expires: p.ttl})
		return engine.Result{New: nw, NewFound: true}, nil
	}
	// An older CAS: as memcached's do_store_item, the stale value keeps the replaced item's expiry (T is
	// ignored) and its "win sent" bit, so no second reader is told to recache while the winner still is.
	bits, err := annotation(tx, table, key, it.Version)
	if err != nil {
		return engine.Result{}, err
	}
	nw := tx.Put(table, key, engine.Item{Value: args[1], Flags: p.flags, Expires: it.Expires})
	annotate(tx, table, key, nw, bitStale|bits&bitWon)
	return engine.Result{New: nw, NewFound: true}, nil
}

// appendStampede appends the W, Z and X flags of reply in memcached's order ("X W" for a stale item's win,
// "Z X" once it was handed out).
func (c *conn) appendStampede(reply uint32) {
	switch {
	case reply&replyW != 0:
		if reply&replyX != 0 {
			c.out = append(c.out, " X"...)
		}
		c.out = append(c.out, " W"...)
	case reply&replyZ != 0:
		c.out = append(c.out, " Z"...)
		if reply&replyX != 0 {
			c.out = append(c.out, " X"...)
		}
	}
}

// casMode reports whether C makes an ms a compare-and-swap: in set (the default) and replace modes.
func (m *metaFlags) casMode() bool { return m.mode == 0 || m.mode == 'S' || m.mode == 'R' }

// writes reports whether an mg writes whatever it finds: N, T and R go through mgFunc.
func (m *metaFlags) writes() bool { return m.hasViv || m.hasTTL || m.hasRecache }
