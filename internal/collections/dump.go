package collections

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"anykv/internal/engine"
	"anykv/internal/rdb"
)

// DUMP and RESTORE: a key's value in Redis's serialization (internal/rdb), read whole and written whole.

const (
	fnDump    = "key.dump"
	fnRestore = "key.restore"
)

func init() {
	engine.RegisterUncachedKeyReadFunc(fnDump, dump)
	engine.RegisterFunc(fnRestore, restore)
}

// ErrDumpStream: DUMP of a stream, which anykv does not serialize.
var ErrDumpStream = errors.New("ERR anykv does not DUMP streams")

// RestoreError is a RESTORE refused for its arguments or payload once the key was found free (or REPLACE given):
// its text is the reply, as Redis checks the key first.
type RestoreError struct{ Msg string }

func (e *RestoreError) Error() string { return e.Msg }

// Dump reads the key's value as a DUMP payload into Result.New.Value; ErrNotFound for a missing key.
func Dump(table string, key []byte) engine.Mutation { return engine.CallMutation(table, key, fnDump) }

func dump(tx *engine.Tx, _ [][]byte) (engine.Result, error) {
	v, found, err := readValue(tx, tx.Table(), tx.Key())
	switch {
	case err != nil:
		return engine.Result{}, err
	case !found:
		return engine.Result{Err: engine.ErrNotFound}, nil
	case v == nil:
		return engine.Result{Err: ErrDumpStream}, nil
	}
	return engine.Result{New: engine.Item{Value: rdb.Encode(*v)}, NewFound: true}, nil
}

// readValue reads the value at table/key whole; nil for a stream.
func readValue(tx *engine.Tx, table string, key []byte) (*rdb.Value, bool, error) {
	it, found, err := tx.Get(table, key)
	if err != nil || !found {
		return nil, false, err
	}
	kind, ok := map[engine.Kind]rdb.Kind{engine.KindString: rdb.String, engine.KindHash: rdb.Hash,
		engine.KindList: rdb.List, engine.KindSet: rdb.Set, engine.KindZSet: rdb.ZSet}[it.Kind]
	if !ok {
		return nil, true, nil
	}
	v := &rdb.Value{Kind: kind}
	if kind == rdb.String {
		v.Str = it.Value
		return v, true, nil
	}
	c, _, err := openColl(tx, table, key, it.Kind)
	if err != nil {
		return nil, false, err
	}
	prefix := c.memberPrefix()
	err = tx.Scan(engine.MemberTable(table), engine.PrefixRange(prefix), func(k []byte, m engine.Item) bool {
		name := k[len(prefix):]
		switch kind {
		case rdb.List:
			v.Elems = append(v.Elems, m.Value)
		case rdb.Set:
			v.Elems = append(v.Elems, name)
		case rdb.Hash:
			v.Elems = append(v.Elems, name, m.Value)
		case rdb.ZSet:
			f, ferr := decodeScore(m.Value)
			if ferr != nil {
				err = ferr
				return false
			}
			v.Elems, v.Scores = append(v.Elems, name), append(v.Scores, f)
		}
		return true
	})
	return v, true, err
}

// Restore writes v at the key, with the expiry given (absolute unix ms; 0: none), replacing what is there only
// when replace: else a key found is ErrExists (Redis's BUSYKEY). A refusal decided before the batch (a bad TTL or
// payload) comes as refuse, reported as a RestoreError once the key is known free, as Redis checks in that
// order. An expiry already past writes nothing, and with replace deletes the key (Result.OldFound says one was
// there). The value's members are all written in this one call: atomic and durable, as a batch is.
func Restore(table string, key []byte, v rdb.Value, expires int64, replace bool, refuse string) engine.Mutation {
	flags := "-"
	if replace {
		flags = "R"
	}
	args := make([][]byte, 0, 5+len(v.Elems)*2)
	args = append(args, []byte(refuse), []byte(flags), num(expires), []byte{byte(v.Kind)})
	switch v.Kind {
	case rdb.String:
		args = append(args, v.Str)
	case rdb.ZSet:
		for i, e := range v.Elems {
			args = append(args, e, binary.BigEndian.AppendUint64(nil, math.Float64bits(v.Scores[i])))
		}
	default:
		args = append(args, v.Elems...)
	}
	return callOwning(table, key, fnRestore, args)
}

func restore(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 4 || len(args[3]) != 1 {
		return engine.Result{}, engine.ErrInvalid
	}
	refuse, replace := string(args[0]), string(args[1]) == "R"
	expires, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return engine.Result{}, engine.ErrInvalid
	}
	kind, elems := rdb.Kind(args[3][0]), args[4:]
	table, key := tx.Table(), tx.Key()
	_, found, err := tx.Get(table, key)
	switch {
	case err != nil:
		return engine.Result{}, err
	case found && !replace:
		return engine.Result{Err: engine.ErrExists, OldFound: true}, nil
	case refuse != "":
		return engine.Result{Err: &RestoreError{refuse}}, nil
	}
	if found {
		tx.Delete(table, key)
	}
	if expires != 0 && expires <= tx.Now() { // already expired: nothing is created
		return engine.Result{OldFound: found, Unchanged: !found}, nil
	}
	if kind == rdb.String {
		if len(elems) != 1 {
			return engine.Result{}, engine.ErrInvalid
		}
		tx.Put(table, key, engine.Item{Value: elems[0], Expires: expires})
		return engine.Result{OldFound: found, NewFound: true}, nil
	}
	ek, ok := map[rdb.Kind]engine.Kind{rdb.Hash: engine.KindHash, rdb.List: engine.KindList,
		rdb.Set: engine.KindSet, rdb.ZSet: engine.KindZSet}[kind]
	if !ok || len(elems) == 0 || (kind == rdb.Hash || kind == rdb.ZSet) && len(elems)%2 != 0 {
		return engine.Result{}, engine.ErrInvalid
	}
	c := coll{tx: tx, table: table, key: key, meta: engine.CollMeta{Gen: tx.NextVersion()},
		item: engine.Item{Kind: ek, Expires: expires}, exists: true}
	mt := engine.MemberTable(table)
	switch kind {
	case rdb.List:
		l := list{c}
		for i, e := range elems {
			l.put(int64(i), e)
		}
		c.meta.Count = int64(len(elems))
	case rdb.Set:
		for _, e := range elems {
			tx.Put(mt, engine.MemberKey(key, c.meta.Gen, e), engine.Item{Value: []byte{}})
		}
		c.meta.Count = int64(len(elems))
	case rdb.Hash:
		for i := 0; i < len(elems); i += 2 {
			tx.Put(mt, engine.MemberKey(key, c.meta.Gen, elems[i]), engine.Item{Value: elems[i+1]})
		}
		c.meta.Count = int64(len(elems) / 2)
	case rdb.ZSet:
		z := zset{c}
		for i := 0; i < len(elems); i += 2 {
			f, err := decodeScore(elems[i+1])
			if err != nil || math.IsNaN(f) {
				return engine.Result{}, engine.ErrInvalid
			}
			z.set(elems[i], f, 0, false)
		}
		c.meta.Count = z.meta.Count
	}
	c.put()
	return engine.Result{OldFound: found, NewFound: true}, nil
}
