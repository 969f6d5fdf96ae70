package collections

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"unsafe"

	"anykv/internal/engine"
	"anykv/internal/geo"
)

// SORT and SORT_RO, as Redis 7's sort.c: the elements of a list, set or sorted set, numerically or ALPHA, by
// themselves or by the values of other keys (BY pattern), their range (LIMIT), what other keys hold for each
// (GET pattern), returned or stored as a list (STORE). The patterns name keys built from the elements, which no
// mutation can name ahead of time: the read form is registered as a function that may read any key
// (engine.RegisterReadFunc) and the STORE form writes only its destination, its mutation's key.

// Function names; they are part of the mutation codec (a log carries them): never rename.
const (
	fnSortRead  = "sort.read"
	fnSortStore = "sort.store"
)

func init() {
	engine.RegisterReadFunc(fnSortRead, func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		return sortRun(tx, args, false)
	})
	engine.RegisterFunc(fnSortStore, func(tx *engine.Tx, args [][]byte) (engine.Result, error) {
		return sortRun(tx, args, true)
	})
}

// ErrSortNotDouble: a numeric SORT met an element or weight that is not a number.
var ErrSortNotDouble = errors.New("one or more scores can't be converted into double")

// SortSpec is what SORT's options say, as Redis's sortCommandGeneric reads them.
type SortSpec struct {
	Src  []byte   // the key sorted
	By   []byte   // the last BY pattern; nil: none
	Gets [][]byte // the GET patterns, in order
	// NoSort: a BY pattern without '*' was given, so nothing is sorted and the container's order is kept
	// (Redis keeps it so even when a later BY has a '*').
	NoSort       bool
	Desc, Alpha  bool
	Start, Count int64 // LIMIT; Count < 0: to the end
	// Script: called from a script, where Redis sorts a set ALPHA even under NoSort (its order would differ
	// between replicas).
	Script bool
}

// Sort reads the elements spec selects in its order into Members: each Name an element or, with GET patterns,
// a value (Item.Flags 1 where the key or field is missing: a null reply). ErrWrongType for a source that is no
// list, set or sorted set; ErrSortNotDouble for a numeric sort of what is not a number.
func Sort(table string, spec SortSpec) engine.Mutation {
	return callOwning(table, spec.Src, fnSortRead, spec.args())
}

// SortStore replaces dst with a list of what Sort would return (a missing value as ""), or deletes it when that
// is empty; Int is the list's length.
func SortStore(table string, dst []byte, spec SortSpec) engine.Mutation {
	return callOwning(table, dst, fnSortStore, spec.args())
}

// args encodes spec: flags, LIMIT's start and count, the source, the BY pattern, then the GET patterns.
func (spec SortSpec) args() [][]byte {
	var flags []byte
	for _, f := range []struct {
		on bool
		c  byte
	}{{spec.By != nil, 'b'}, {spec.NoSort, 'n'}, {spec.Desc, 'd'}, {spec.Alpha, 'a'}, {spec.Script, 's'}} {
		if f.on {
			flags = append(flags, f.c)
		}
	}
	a := make([][]byte, 0, 5+len(spec.Gets))
	return append(append(a, flags, num(spec.Start), num(spec.Count), spec.Src, spec.By), spec.Gets...)
}

func parseSortSpec(a [][]byte) (SortSpec, error) {
	if len(a) < 5 {
		return SortSpec{}, engine.ErrInvalid
	}
	start, err1 := parseNum(a[1])
	count, err2 := parseNum(a[2])
	if err1 != nil || err2 != nil {
		return SortSpec{}, engine.ErrInvalid
	}
	flags := string(a[0])
	spec := SortSpec{Src: a[3], Gets: a[5:], Start: start, Count: count, NoSort: strings.IndexByte(flags, 'n') >= 0,
		Desc: strings.IndexByte(flags, 'd') >= 0, Alpha: strings.IndexByte(flags, 'a') >= 0,
		Script: strings.IndexByte(flags, 's') >= 0}
	if strings.IndexByte(flags, 'b') >= 0 {
		spec.By = a[4]
	}
	return spec, nil
}

// sortItem is one element being sorted, with what it sorts by: its score (numeric), or the value its BY
// pattern found (ALPHA; hasBy false when none was found).
type sortItem struct {
	elem  []byte
	score float64
	by    []byte
	hasBy bool
}

// sortRun is both functions: it loads the elements as Redis does (only LIMIT's range of a list or sorted set
// under NoSort), sorts them, and answers or stores the range.
func sortRun(tx *engine.Tx, args [][]byte, store bool) (engine.Result, error) {
	spec, err := parseSortSpec(args)
	if err != nil {
		return engine.Result{}, err
	}
	c := coll{tx: tx, table: tx.Table(), key: spec.Src}
	it, found, err := tx.Get(c.table, c.key)
	switch {
	case err != nil:
		return engine.Result{}, err
	case found && it.Kind != engine.KindList && it.Kind != engine.KindSet && it.Kind != engine.KindZSet:
		return wrongType, nil
	case found:
		if c.meta, err = engine.DecodeCollMeta(it.Value); err != nil {
			return engine.Result{}, err
		}
		c.item, c.exists = it, true
	}
	kind := engine.KindList // a missing key sorts as an empty list
	if found {
		kind = it.Kind
	}
	noSort, alpha, by := spec.NoSort, spec.Alpha, spec.By
	if noSort && kind == engine.KindSet && (store || spec.Script) {
		noSort, alpha, by = false, true, nil // sorted all the same, so that replicas and scripts agree
	}
	n := c.meta.Count
	start, end := sortLimits(spec.Start, spec.Count, n)
	var vec []sortItem
	if noSort && kind != engine.KindSet {
		vec, err = c.sortSpan(start, end, spec.Desc)
		if end >= start || kind == engine.KindZSet {
			start, end = 0, end-start // the range read is the vector
		}
	} else {
		vec, err = c.sortAll()
	}
	if err != nil {
		return engine.Result{}, err
	}
	if !noSort {
		cmp, err := prepareSort(tx, vec, by, alpha, spec.Desc, store)
		switch {
		case errors.Is(err, ErrSortNotDouble):
			return engine.Result{Err: err}, nil
		case err != nil:
			return engine.Result{}, err
		case by != nil && (start != 0 || end != int64(len(vec))-1):
			geo.PartialSort(vec, cmp, int(start), int(end)) // Redis's pqsort: equal elements end as it leaves them
		default:
			geo.MergeSort(vec, cmp) // glibc's qsort: stable
		}
	}
	switch {
	case end < start:
		vec = nil // LIMIT selects nothing
	case end >= int64(len(vec)):
		return engine.Result{}, engine.ErrCorrupt // fewer elements than the meta counts
	default:
		vec = vec[start : end+1]
	}
	return sortOutput(tx, vec, spec.Gets, store)
}

// sortLimits turns LIMIT's offset and count into the ranks start..end of n elements, as Redis does (an empty
// range is start = n-1, end = n-2 when the offset lies past the end).
func sortLimits(offset, count, n int64) (start, end int64) {
	start = min(max(offset, 0), n)
	count = min(max(count, -1), n)
	end = start + count - 1
	if count < 0 {
		end = n - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	return start, min(end, n-1)
}

// sortAll loads every element: a list's in order, a set's and a sorted set's in member and score order.
func (c *coll) sortAll() ([]sortItem, error) {
	if !c.exists {
		return nil, nil
	}
	vec := make([]sortItem, 0, min(c.meta.Count, 1<<16))
	var err error
	switch c.item.Kind {
	case engine.KindList:
		l := list{*c}
		err = l.scanElems(l.meta.Head, l.meta.Head+l.meta.Count, func(_ int64, v []byte) bool {
			vec = append(vec, sortItem{elem: v})
			return true
		})
	case engine.KindSet:
		var names [][]byte
		names, _, _, err = setMembers(c.tx, c.table, c.key)
		for _, n := range names {
			vec = append(vec, sortItem{elem: n})
		}
	case engine.KindZSet:
		z := zset{*c}
		err = z.each(func(e entry) bool { vec = append(vec, sortItem{elem: e.member}); return true })
	}
	return vec, err
}

// sortSpan loads the ranks start..end of a list or sorted set in its own order (from the end when desc), what
// Redis reads under NoSort: the whole container unless LIMIT narrows it.
func (c *coll) sortSpan(start, end int64, desc bool) ([]sortItem, error) {
	if !c.exists || end < start {
		return nil, nil
	}
	vec := make([]sortItem, 0, min(end-start+1, 1<<16))
	if c.item.Kind == engine.KindZSet {
		z := zset{*c}
		picked, _, _, _, err := z.selectRange(RangeSpec{By: "rank", Min: num(start), Max: num(end), Rev: desc})
		for _, e := range picked {
			vec = append(vec, sortItem{elem: e.member})
		}
		return vec, err
	}
	l := list{*c}
	from, to := start, end+1 // indexes from the head, [from, to)
	if desc {
		from, to = l.meta.Count-1-end, l.meta.Count-start
	}
	err := l.scanElems(l.meta.Head+from, l.meta.Head+to, func(_ int64, v []byte) bool {
		vec = append(vec, sortItem{elem: v})
		return true
	})
	if desc {
		slices.Reverse(vec)
	}
	return vec, err
}

// prepareSort fills in what each element sorts by and returns Redis's sortCompare for the options: numeric by
// score and then by the element's bytes, or ALPHA by the BY value (missing ones first) or the element, compared
// as strcoll in the C locale (up to a NUL byte) or, when storing, as bytes. ErrSortNotDouble when a numeric sort
// meets what is not a number.
func prepareSort(tx *engine.Tx, vec []sortItem, by []byte, alpha, desc, store bool) (func(a, b *sortItem) int, error) {
	notDouble := false
	for i := range vec {
		v := vec[i].elem
		if by != nil {
			val, ok, err := lookupPattern(tx, by, v)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			v = val
		}
		switch {
		case alpha && by != nil:
			vec[i].by, vec[i].hasBy = v, true
		case !alpha:
			f, ok := sortDouble(v)
			vec[i].score, notDouble = f, notDouble || !ok
		}
	}
	if notDouble {
		return nil, ErrSortNotDouble
	}
	compare := collate
	if store {
		compare = bytes.Compare
	}
	sign := 1
	if desc {
		sign = -1
	}
	return func(a, b *sortItem) int {
		var c int
		switch {
		case !alpha && a.score != b.score:
			c = 1
			if a.score < b.score {
				c = -1
			}
		case !alpha:
			c = bytes.Compare(a.elem, b.elem)
		case by == nil:
			c = compare(a.elem, b.elem)
		case !a.hasBy || !b.hasBy:
			c = boolInt(a.hasBy) - boolInt(b.hasBy)
		default:
			c = compare(a.by, b.by)
		}
		return sign * c
	}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// collate compares as strcoll does in the C locale (and in C.UTF-8): the bytes up to the first NUL.
func collate(a, b []byte) int { return bytes.Compare(cString(a), cString(b)) }

// cString is b as C sees it: up to its first NUL byte.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// sortOutput answers the sorted range, or stores it at the mutation's key: each element, or what each GET
// pattern finds for it. What it holds is bounded by engine.MaxBatchRead, as the values a batch reads are: the
// values' bytes, and the entry of each value past one per element. GET patterns multiply the entries, and a
// missing key's entry (a null) has no bytes of its own: a thousand GETs of missing keys over a list of a thousand
// elements, a request of a few kilobytes, held a million entries (80 MB) uncounted, a thousand times that as
// easily.
func sortOutput(tx *engine.Tx, vec []sortItem, gets [][]byte, store bool) (engine.Result, error) {
	out := make([]engine.Member, 0, min(len(vec)*max(len(gets), 1), 1<<16))
	size := 0
	add := func(v []byte, missing bool) error {
		size += len(v)
		if len(out) >= len(vec) {
			size += int(unsafe.Sizeof(engine.Member{}))
		}
		if size > engine.MaxBatchRead {
			return engine.ErrBatchTooBig
		}
		m := engine.Member{Name: v}
		switch {
		case missing && store:
			m.Name = []byte{}
		case missing:
			m.Item.Flags = 1
		}
		out = append(out, m)
		return nil
	}
	for i := range vec {
		if len(gets) == 0 {
			if err := add(vec[i].elem, false); err != nil {
				return engine.Result{}, err
			}
		}
		for _, g := range gets {
			v, ok, err := lookupPattern(tx, g, vec[i].elem)
			if err == nil {
				err = add(v, !ok)
			}
			if err != nil {
				return engine.Result{}, err
			}
		}
	}
	if !store {
		return engine.Result{Members: out}, nil
	}
	if _, found, err := tx.Get(tx.Table(), tx.Key()); err != nil {
		return engine.Result{}, err
	} else if found {
		tx.Delete(tx.Table(), tx.Key()) // whatever it held goes, members and expiry with it
	}
	if len(out) > 0 {
		l := list{coll{tx: tx, table: tx.Table(), key: tx.Key()}}
		l.create()
		for _, m := range out {
			l.pushOne(false, m.Name)
		}
		l.save()
	}
	return intResult(int64(len(out))), nil
}
