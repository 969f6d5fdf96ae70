// Package collections implements the collection operations whose writes depend on what they read (list pushes
// and pops, moves between lists, ...) as engine Funcs, run inside Resolve through engine.OpCall. So they are
// atomic and durable exactly as string writes are, on every engine, with no type-specific engine code.
//
// The mutations are built with the constructors here (Push, Pop, ...), which protocols call; the functions
// registered at init read their arguments back. Results carry integers as decimal text in Result.New.Value
// (Int reads them) and elements in Result.Members.
package collections

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"

	"anykv/internal/engine"
)

// ErrOutOfRange: a list index outside the list (LSET).
var ErrOutOfRange = errors.New("index out of range")

// Function names; they are part of the mutation codec (a log carries them): never rename.
const (
	fnPush   = "list.push"
	fnPop    = "list.pop"
	fnIndex  = "list.index"
	fnSet    = "list.set"
	fnRange  = "list.range"
	fnValues = "list.values"
	fnTrim   = "list.trim"
	fnRem    = "list.rem"
	fnInsert = "list.insert"
	fnMove   = "list.move"
)

func init() {
	engine.RegisterFunc(fnPush, push)
	engine.RegisterFunc(fnPop, pop)
	engine.RegisterKeyReadFunc(fnIndex, index, nil)
	engine.RegisterFunc(fnSet, setAt)
	engine.RegisterKeyReadFunc(fnRange, lrange, nil)
	engine.RegisterKeyReadFunc(fnValues, lrangeValues, nil)
	engine.RegisterFunc(fnTrim, trim)
	engine.RegisterFunc(fnRem, rem)
	engine.RegisterFunc(fnInsert, insert)
	engine.RegisterFunc(fnMove, move)
}

// call builds an OpCall. It copies the argument list (not the bytes): a protocol's argument array may be reused
// for the next command before the batch runs.
// callOwning is call with an args slice the mutation may keep (the caller built it and keeps no reference).
func callOwning(table string, key []byte, name string, args [][]byte) engine.Mutation {
	return engine.Mutation{Op: engine.OpCall, Table: table, Key: key, Call: engine.CallArgs{Name: name, Args: args}}
}

func num(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

func side(left bool) []byte {
	if left {
		return sideLeft
	}
	return sideRight
}

// The one-byte arguments, shared: a function never changes its arguments.
var (
	sideLeft, sideRight = []byte("L"), []byte("R")
	flagNo, flagYes     = []byte("0"), []byte("1")
)

// Push adds values at the head (left) or tail of the list at key, creating it unless onlyIfExists (LPUSHX);
// the result is the new length (Int), 0 for LPUSHX of a missing list.
func Push(table string, key []byte, left, onlyIfExists bool, values ...[]byte) engine.Mutation {
	flag := flagNo
	if onlyIfExists {
		flag = flagYes
	}
	args := make([][]byte, 0, 2+len(values))
	return callOwning(table, key, fnPush, append(append(args, side(left), flag), values...))
}

// Pop removes up to count elements (count < 0: one, reported in Result.New) from the head or tail; they are
// returned in Members in the order removed. ErrNotFound if the list is missing.
func Pop(table string, key []byte, left bool, count int64) engine.Mutation {
	return engine.CallMutation(table, key, fnPop, side(left), num(count))
}

// Index reads the element at i (negative: from the tail) into Result.New; ErrNotFound outside the list.
func Index(table string, key []byte, i int64) engine.Mutation {
	return engine.CallMutation(table, key, fnIndex, num(i))
}

// Set replaces the element at i: ErrNotFound for a missing list, ErrOutOfRange outside it.
func Set(table string, key []byte, i int64, value []byte) engine.Mutation {
	return engine.CallMutation(table, key, fnSet, num(i), value)
}

// Range reads the elements start..stop (inclusive, negative from the tail, as LRANGE) into Members.
func Range(table string, key []byte, start, stop int64) engine.Mutation {
	return engine.CallMutation(table, key, fnRange, num(start), num(stop))
}

// Trim keeps only the elements start..stop (LTRIM).
func Trim(table string, key []byte, start, stop int64) engine.Mutation {
	return engine.CallMutation(table, key, fnTrim, num(start), num(stop))
}

// Rem removes elements equal to value: count > 0 the first count from the head, < 0 from the tail, 0 all; the
// result is how many (Int).
func Rem(table string, key []byte, count int64, value []byte) engine.Mutation {
	return engine.CallMutation(table, key, fnRem, num(count), value)
}

// Insert puts value before (or after) the first element equal to pivot; the result is the new length, -1 if the
// pivot is missing, 0 if the list is (Int).
func Insert(table string, key []byte, before bool, pivot, value []byte) engine.Mutation {
	where := []byte("A")
	if before {
		where = []byte("B")
	}
	return engine.CallMutation(table, key, fnInsert, where, pivot, value)
}

// Move pops an element from one end of the list at key and pushes it at one end of the list at dst (LMOVE); the
// element is in Result.New, ErrNotFound if the source is empty. dst may equal key (rotation).
func Move(table string, key []byte, dstTable string, dst []byte, fromLeft, toLeft bool) engine.Mutation {
	m := engine.CallMutation(table, key, fnMove, side(fromLeft), side(toLeft))
	m.Target = engine.Target{Table: dstTable, Key: dst}
	return m
}

// Int reads an integer result of these functions.
func Int(r engine.Result) int64 {
	n, _ := strconv.ParseInt(string(r.New.Value), 10, 64)
	return n
}

func intResult(n int64) engine.Result {
	return engine.Result{New: engine.Item{Value: num(n)}, NewFound: true}
}

func parseNum(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, engine.ErrInvalid
	}
	return n, nil
}

// list is one list as a function sees it.
type list struct{ coll }

// openList reads the list at table/key: wrong is true if another kind is stored there.
func openList(tx *engine.Tx, table string, key []byte) (list, bool, error) {
	c, wrong, err := openColl(tx, table, key, engine.KindList)
	return list{c}, wrong, err
}

// elem encodes a list position so that positions sort as numbers.
func elem(i int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)^1<<63) }

func (l *list) memberKey(pos int64) []byte { return engine.MemberKey(l.key, l.meta.Gen, elem(pos)) }

func (l *list) get(pos int64) ([]byte, error) {
	it, found, err := l.tx.GetStored(engine.MemberTable(l.table), l.memberKey(pos))
	if err == nil && !found {
		err = engine.ErrCorrupt // inside Head..Head+Count-1 every position holds an element
	}
	return it.Value, err
}

func (l *list) put(pos int64, v []byte) {
	l.tx.Put(engine.MemberTable(l.table), l.memberKey(pos), engine.Item{Value: v})
}

func (l *list) del(pos int64) { l.tx.Delete(engine.MemberTable(l.table), l.memberKey(pos)) }

// create starts a new list (a new generation).
func (l *list) create() {
	l.meta = engine.CollMeta{Gen: l.tx.NextVersion()}
	l.item = engine.Item{Kind: engine.KindList}
	l.exists = true
}

// pos turns a Redis index (negative from the tail) into a position, and whether it lies inside the list.
func (l *list) pos(i int64) (int64, bool) {
	if i < 0 {
		i += l.meta.Count
	}
	return l.meta.Head + i, i >= 0 && i < l.meta.Count
}

// bounds clamps LRANGE/LTRIM's start..stop to the list, as Redis does: it returns the positions [from, to) kept.
func (l *list) bounds(start, stop int64) (int64, int64) {
	first, last, ok := clampRanks(start, stop, l.meta.Count)
	if !ok {
		return l.meta.Head, l.meta.Head
	}
	return l.meta.Head + first, l.meta.Head + last + 1
}

func (l *list) pushOne(left bool, v []byte) {
	if left {
		l.meta.Head--
		l.put(l.meta.Head, v)
	} else {
		l.put(l.meta.Head+l.meta.Count, v)
	}
	l.meta.Count++
}

func (l *list) popOne(left bool) ([]byte, error) {
	p := l.meta.Head + l.meta.Count - 1
	if left {
		p = l.meta.Head
	}
	v, err := l.get(p)
	if err != nil {
		return nil, err
	}
	l.del(p)
	if left {
		l.meta.Head++
	}
	l.meta.Count--
	return v, nil
}

func push(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 3 {
		return engine.Result{}, engine.ErrInvalid
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	switch {
	case err != nil:
		return engine.Result{}, err
	case wrong:
		return wrongType, nil
	case !l.exists && string(args[1]) == "1":
		return intResult(0), nil
	case !l.exists:
		l.create()
	}
	for _, v := range args[2:] {
		l.pushOne(string(args[0]) == "L", v)
	}
	l.save()
	return intResult(l.meta.Count), nil
}

func pop(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	count, err := parseNum(args[1])
	if err != nil {
		return engine.Result{}, err
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err := settle(l.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	var res engine.Result
	single := count < 0
	if single {
		count = 1
	}
	for i := int64(0); i < count && l.meta.Count > 0; i++ {
		v, err := l.popOne(string(args[0]) == "L")
		if err != nil {
			return engine.Result{}, err
		}
		res.Members = append(res.Members, engine.Member{Item: engine.Item{Value: v}})
	}
	if single {
		res.New, res.NewFound, res.Members = res.Members[0].Item, true, nil
	}
	if len(res.Members) > 0 || single {
		l.save() // a count of 0 pops nothing and leaves the list as it was (WATCH), as in Redis
	}
	return res, nil
}

func index(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	i, err := parseNum(args[0])
	if err != nil {
		return engine.Result{}, err
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	switch {
	case err != nil:
		return engine.Result{}, err
	case wrong:
		return wrongType, nil
	}
	p, ok := l.pos(i)
	if !l.exists || !ok {
		return engine.Result{Err: engine.ErrNotFound}, nil
	}
	v, err := l.get(p)
	return engine.Result{New: engine.Item{Value: v}, NewFound: true}, err
}

func setAt(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	i, err := parseNum(args[0])
	if err != nil || len(args) != 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err := settle(l.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	p, ok := l.pos(i)
	if !ok {
		return engine.Result{Err: ErrOutOfRange}, nil
	}
	l.put(p, args[1])
	l.save() // the meta's version follows every change of the list
	return engine.Result{}, nil
}

// scanElems calls fn for the elements at positions [from, to), in order.
func (l *list) scanElems(from, to int64, fn func(pos int64, v []byte) bool) error {
	return l.scanElemsDir(from, to, false, fn)
}

// scanElemsDir is scanElems, from the last position down if reverse.
func (l *list) scanElemsDir(from, to int64, reverse bool, fn func(pos int64, v []byte) bool) error {
	prefix := engine.MemberPrefix(nil, l.key, l.meta.Gen)
	r := engine.Range{Start: append(prefix[:len(prefix):len(prefix)], elem(from)...), End: append(prefix[:len(prefix):len(prefix)], elem(to)...)}
	scan := l.tx.Scan
	if reverse {
		scan = l.tx.ScanReverse
	}
	return scan(engine.MemberTable(l.table), r, func(k []byte, it engine.Item) bool {
		return fn(int64(binary.BigEndian.Uint64(k[len(prefix):])^1<<63), it.Value)
	})
}

// openSpan opens the list for LRANGE and LTRIM and turns their start and stop (args[0], args[1]) into the
// positions [from, to); done says res and err are already the call's outcome.
func openSpan(tx *engine.Tx, args [][]byte) (l list, from, to int64, res engine.Result, done bool, err error) {
	start, err1 := parseNum(args[0])
	stop, err2 := parseNum(args[1])
	if err1 != nil || err2 != nil {
		return l, 0, 0, engine.Result{}, true, engine.ErrInvalid
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err = settle(l.exists, wrong, err, engine.Result{}); done {
		return l, 0, 0, res, true, err
	}
	from, to = l.bounds(start, stop)
	return l, from, to, engine.Result{}, false, nil
}

func lrange(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	l, from, to, res, done, err := openSpan(tx, args)
	if done {
		return res, err
	}
	res.Members = make([]engine.Member, 0, min(max(to-from, 0), 1<<12)) // most ranges are short: no regrowth
	err = l.scanElems(from, to, func(_ int64, v []byte) bool {
		res.Members = append(res.Members, engine.Member{Item: engine.Item{Value: v}})
		tx.Hold(engine.EntryCost)
		return true
	})
	return res, err
}

// RangeValues is Range with the elements packed into Result.New.Value, each as a uvarint length and its bytes
// (read them with NextValue): one buffer for a reply of any length instead of an 80-byte Member per element
// (LRANGE's allocations were a third of its CPU, with the collector).
func RangeValues(table string, key []byte, start, stop int64) engine.Mutation {
	return engine.CallMutation(table, key, fnValues, num(start), num(stop))
}

// CountValues counts the elements of a RangeValues result.
func CountValues(packed []byte) int {
	n := 0
	for _, rest, ok := NextValue(packed); ok; _, rest, ok = NextValue(rest) {
		n++
	}
	return n
}

// NextValue splits the first element off a RangeValues result: ok is false at the end (or on bytes that are not
// one).
func NextValue(packed []byte) (v, rest []byte, ok bool) {
	n, w := binary.Uvarint(packed)
	if w <= 0 || uint64(len(packed)-w) < n {
		return nil, nil, false
	}
	return packed[w : w+int(n)], packed[w+int(n):], true
}

func lrangeValues(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	l, from, to, res, done, err := openSpan(tx, args)
	if done {
		return res, err
	}
	var out []byte
	err = l.scanElems(from, to, func(_ int64, v []byte) bool {
		if out == nil { // room for the whole range at this element's size, up to 64 KiB
			out = make([]byte, 0, min(max(to-from, 1)*int64(len(v)+2), 64<<10))
		}
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
		return true
	})
	return engine.Result{New: engine.Item{Value: out}, NewFound: true}, err
}

func trim(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	l, from, to, res, done, err := openSpan(tx, args)
	if done {
		return res, err
	}
	end := l.meta.Head + l.meta.Count
	for p := l.meta.Head; p < from; p++ {
		l.del(p)
	}
	for p := max(to, from); p < end; p++ {
		l.del(p)
	}
	l.meta.Head, l.meta.Count = from, to-from
	l.save()
	return engine.Result{}, nil
}

// rewrite replaces the list's elements with vs, under the same generation, positions from the old head.
func (l *list) rewrite(vs [][]byte) {
	end := l.meta.Head + l.meta.Count
	for i, v := range vs {
		l.put(l.meta.Head+int64(i), v)
	}
	for p := l.meta.Head + int64(len(vs)); p < end; p++ {
		l.del(p)
	}
	l.meta.Count = int64(len(vs))
}

// all reads every element.
func (l *list) all() ([][]byte, error) {
	var vs [][]byte
	err := l.scanElems(l.meta.Head, l.meta.Head+l.meta.Count, func(_ int64, v []byte) bool {
		vs = append(vs, v)
		return true
	})
	return vs, err
}

// rem is LREM: it reads from the end count names only as far as its |count|-th match (BullMQ removes a finished
// job with LREM active -1 id, the job most often near the tail), and closes the gaps by moving the shorter side
// of the list (removeAt), where it rewrote every element.
func rem(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	count, err := parseNum(args[0])
	if err != nil || len(args) != 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err := settle(l.exists, wrong, err, intResult(0)); done {
		return res, err
	}
	var hits []int64
	match := func(p int64, v []byte) bool {
		if string(v) == string(args[1]) {
			hits = append(hits, p)
		}
		return count == 0 || int64(len(hits)) < max(count, -count)
	}
	from, to := l.meta.Head, l.meta.Head+l.meta.Count
	err = l.scanElemsDir(from, to, count < 0, match)
	if count < 0 {
		slices.Reverse(hits)
	}
	if err != nil || len(hits) == 0 {
		return intResult(0), err
	}
	if err := l.removeAt(hits); err != nil {
		return engine.Result{}, err
	}
	l.save()
	return intResult(int64(len(hits))), nil
}

// removeAt removes the elements at the positions ps (ascending), moving the elements on the shorter side of
// them: those after ps[0] one step or more toward the head, or those before ps[len(ps)-1] toward the tail (the
// head then starts further on).
func (l *list) removeAt(ps []int64) error {
	end := l.meta.Head + l.meta.Count
	first, last := ps[0], ps[len(ps)-1]
	gone := make(map[int64]bool, len(ps))
	for _, p := range ps {
		gone[p] = true
	}
	var kept [][]byte
	keep := func(p int64, v []byte) bool {
		if !gone[p] {
			kept = append(kept, v)
		}
		return true
	}
	n := int64(len(ps))
	if end-1-first <= last-l.meta.Head { // the tail side is shorter: it moves toward the head
		if err := l.scanElems(first, end, keep); err != nil {
			return err
		}
		for i, v := range kept {
			l.put(first+int64(i), v)
		}
		for p := end - n; p < end; p++ {
			l.del(p)
		}
	} else { // the head side moves toward the tail
		if err := l.scanElems(l.meta.Head, last+1, keep); err != nil {
			return err
		}
		head := l.meta.Head + n
		for i, v := range kept {
			l.put(head+int64(i), v)
		}
		for p := l.meta.Head; p < head; p++ {
			l.del(p)
		}
		l.meta.Head = head
	}
	l.meta.Count -= n
	return nil
}

func insert(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 3 {
		return engine.Result{}, engine.ErrInvalid
	}
	l, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err := settle(l.exists, wrong, err, intResult(0)); done {
		return res, err
	}
	vs, err := l.all()
	if err != nil {
		return engine.Result{}, err
	}
	for i, v := range vs {
		if string(v) != string(args[1]) {
			continue
		}
		if string(args[0]) == "A" {
			i++
		}
		out := append(append(append(make([][]byte, 0, len(vs)+1), vs[:i]...), args[2]), vs[i:]...)
		l.rewrite(out)
		l.save()
		return intResult(l.meta.Count), nil
	}
	return intResult(-1), nil
}

func move(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	dstTable, dstKey := tx.Target()
	src, wrong, err := openList(tx, tx.Table(), tx.Key())
	if res, done, err := settle(src.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	same := dstTable == tx.Table() && string(dstKey) == string(tx.Key())
	dst := src
	if !same {
		if dst, wrong, err = openList(tx, dstTable, dstKey); err != nil {
			return engine.Result{}, err
		} else if wrong {
			return wrongType, nil // checked before anything is written, as Redis does
		}
	}
	v, err := src.popOne(string(args[0]) == "L")
	if err != nil {
		return engine.Result{}, err
	}
	if same {
		src.pushOne(string(args[1]) == "L", v)
		src.save()
		return engine.Result{New: engine.Item{Value: v}, NewFound: true}, nil
	}
	src.save()
	if !dst.exists {
		dst.create()
	}
	dst.pushOne(string(args[1]) == "L", v)
	dst.save()
	return engine.Result{New: engine.Item{Value: v}, NewFound: true}, nil
}
