package hll

import (
	"errors"
	"strconv"

	"anykv/internal/engine"
)

// The writes (PFADD, PFMERGE, PFDEBUG's conversions) run inside the engine's batch as registered functions
// (engine.OpCall), so each reads and rewrites its value atomically and durably on every engine. PFCOUNT is a pure
// function of values the protocol reads (Count, Max).

const (
	fnAdd   = "hll.add"
	fnMerge = "hll.merge"
	fnDebug = "hll.debug"
)

func init() {
	engine.RegisterFunc(fnAdd, add)
	engine.RegisterFunc(fnMerge, merge)
	engine.RegisterFunc(fnDebug, debug)
}

// read reads the HyperLogLog at key: found false if absent; engine.ErrWrongType for another kind, ErrNotHLL for
// a string that is not one. A non-nil error with a nil second error is the command's own failure.
func read(tx *engine.Tx, key []byte) (it engine.Item, found bool, fail, err error) {
	it, found, err = tx.Get(tx.Table(), key)
	switch {
	case err != nil || !found:
		return it, false, nil, err
	case it.Kind != engine.KindString:
		return it, true, engine.ErrWrongType, nil
	}
	return it, true, Check(it.Value), nil
}

// withMax is args after the sparse encoding's bound (SparseMaxBytes), which add and merge take first.
func withMax(args [][]byte) [][]byte {
	return append([][]byte{strconv.AppendInt(nil, SparseMaxBytes, 10)}, args...)
}

// maxOf parses the bound withMax put first.
func maxOf(args [][]byte) (int, error) {
	if len(args) == 0 {
		return 0, engine.ErrInvalid
	}
	n, err := strconv.Atoi(string(args[0]))
	if err != nil {
		return 0, engine.ErrInvalid
	}
	return n, nil
}

// PFAdd adds elems to the HyperLogLog at key, creating it; the result's Value is "1" if a register changed or
// the key was created, else "0" (and the result is Unchanged).
func PFAdd(table string, key []byte, elems [][]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnAdd, withMax(elems)...)
}

func add(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	maxBytes, err := maxOf(args)
	if err != nil {
		return engine.Result{}, err
	}
	it, found, fail, err := read(tx, tx.Key())
	if err != nil || fail != nil {
		return engine.Result{Err: fail}, err
	}
	var v []byte
	if found {
		v = it.Value
	} else {
		it = engine.Item{}
	}
	nv, updated, err := Add(v, args[1:], maxBytes)
	if err != nil {
		return engine.Result{Err: err}, nil
	}
	if !updated {
		return engine.Result{New: engine.Item{Value: []byte("0")}, NewFound: true, Unchanged: true}, nil
	}
	it.Value = nv
	tx.Put(tx.Table(), tx.Key(), it)
	return engine.Result{New: engine.Item{Value: []byte("1")}, NewFound: true}, nil
}

// PFMerge stores at dest the union of the HyperLogLogs at dest and srcs (absent keys count as empty).
func PFMerge(table string, dest []byte, srcs [][]byte) engine.Mutation {
	return engine.CallMutation(table, dest, fnMerge, withMax(srcs)...)
}

func merge(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	maxBytes, err := maxOf(args)
	if err != nil {
		return engine.Result{}, err
	}
	var m Max
	dense := false
	var dest engine.Item
	destFound := false
	for i, k := range append([][]byte{tx.Key()}, args[1:]...) {
		it, found, fail, err := read(tx, k)
		if err != nil || fail != nil {
			return engine.Result{Err: fail}, err
		}
		if !found {
			continue
		}
		if i == 0 {
			dest, destFound = it, true
		}
		dense = dense || it.Value[4] == Dense
		if err := m.Merge(it.Value); err != nil {
			return engine.Result{Err: err}, nil
		}
	}
	var v []byte
	if destFound {
		v = dest.Value
	} else {
		dest = engine.Item{}
	}
	nv, err := m.Store(v, dense, maxBytes)
	if err != nil {
		return engine.Result{Err: err}, nil
	}
	dest.Value = nv
	tx.Put(tx.Table(), tx.Key(), dest)
	return engine.Result{New: engine.Item{Value: []byte("OK")}, NewFound: true}, nil
}

// Debug reads the HyperLogLog at key for PFDEBUG sub (lower case); "getreg" and "todense" first turn a sparse
// value dense, and store it. The result's Value is the value after that, Flags 1 when it was converted;
// engine.ErrNotFound when the key is absent.
func Debug(table string, key []byte, sub string) engine.Mutation {
	return engine.CallMutation(table, key, fnDebug, []byte(sub))
}

func debug(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	it, found, fail, err := read(tx, tx.Key())
	switch {
	case err != nil:
		return engine.Result{}, err
	case !found:
		return engine.Result{Err: engine.ErrNotFound}, nil
	case fail != nil:
		return engine.Result{Err: fail}, nil
	}
	sub := string(args[0])
	if (sub != "getreg" && sub != "todense") || it.Value[4] == Dense {
		return engine.Result{New: engine.Item{Value: it.Value}, NewFound: true, Unchanged: true}, nil
	}
	d, _, err := ToDense(it.Value)
	if err != nil {
		return engine.Result{Err: err}, nil
	}
	it.Value = d
	tx.Put(tx.Table(), tx.Key(), it)
	return engine.Result{New: engine.Item{Value: d, Flags: 1}, NewFound: true}, nil
}

// IsCommandError reports whether err is one of this package's replies (ErrNotHLL, ErrCorrupt).
func IsCommandError(err error) bool { return errors.Is(err, ErrNotHLL) || errors.Is(err, ErrCorrupt) }
