package collections

import (
	"bytes"
	"errors"
	"strconv"

	"anykv/internal/engine"
)

// XSETID: set a stream's last ID, and optionally its entries-added count and max-deleted-entry-id (Redis 7).

const fnXSetID = "stream.setid"

func init() { engine.RegisterFunc(fnXSetID, xsetid) }

// Errors of XSETID, in Redis's words.
var (
	ErrSetIDSmallerThanTop = errors.New("ERR The ID specified in XSETID is smaller than the target stream top item")
	ErrSetIDEntriesAdded   = errors.New("ERR The entries_added specified in XSETID is smaller than the target stream length")
)

// XSetID sets key's last ID to id; entriesAdded (-1: unchanged) and maxDeleted (0-0: unchanged) set Redis 7's
// entries-added and max-deleted-entry-id. The stream must exist (ErrNotFound).
func XSetID(table string, key []byte, id ID, entriesAdded int64, maxDeleted ID) engine.Mutation {
	return engine.CallMutation(table, key, fnXSetID, []byte(id.String()), num(entriesAdded), []byte(maxDeleted.String()))
}

func xsetid(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 3 {
		return engine.Result{}, engine.ErrInvalid
	}
	id, ok1 := ParseID(args[0], false)
	added, err := strconv.ParseInt(string(args[1]), 10, 64)
	maxDeleted, ok2 := ParseID(args[2], false)
	if !ok1 || !ok2 || err != nil {
		return engine.Result{}, engine.ErrInvalid
	}
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	if err := st.loadTally(); err != nil {
		return engine.Result{}, err
	}
	if st.meta.Count > 0 {
		var top ID
		if err := st.entries(ID{}, ID{^uint64(0), ^uint64(0)}, true, func(e ID, _ []byte) bool { top = e; return false }); err != nil {
			return engine.Result{}, err
		}
		if id.less(top) {
			return engine.Result{Err: ErrSetIDSmallerThanTop}, nil
		}
		if added >= 0 && added < st.meta.Count {
			return engine.Result{Err: ErrSetIDEntriesAdded}, nil
		}
	}
	st.meta.LastMS, st.meta.LastSeq = id.MS, id.Seq
	if k := id.key(); bytes.Compare(k, st.meta.Floor) < 0 { // an emptied stream set back below its trims' deletions:
		st.meta.Floor = k // the entries added next come above the ID, below the old floor (entries)
	}
	if added >= 0 {
		st.tally.deleted = uint64(added - st.meta.Count)
		st.tallyDirty = true
	}
	if maxDeleted != (ID{}) {
		st.tally.maxDeleted = maxDeleted
		st.tallyDirty = true
	}
	st.store()
	return engine.Result{NewFound: true}, nil
}
