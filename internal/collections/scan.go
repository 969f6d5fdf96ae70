package collections

import (
	"cmp"
	"slices"

	"anykv/internal/engine"
)

// HSCAN, SSCAN and ZSCAN: a page of members in member order from where the previous page ended, so iterating a
// collection of a million members holds one page at a time (the protocol keeps the resume member behind its
// integer cursor). Every member present for the whole iteration is returned exactly once.

const fnScan = "coll.scan"

func init() { engine.RegisterUncachedKeyReadFunc(fnScan, scanMembers) }

// ScanMembers reads up to count members of the hash, set or sorted set (kind) at the key that sort after the
// member after (from the first member if !resume), in member order, into Members with their values (a sorted
// set's: its score text). If members follow, Result.New.Value is the last member returned (NewFound), where the
// next page resumes. A whole sorted set read in one page (from the first member, none left) comes in score order,
// ties in member order: the order of Redis's listpack, which ZSCAN answers a small sorted set in (walrus's ZSet
// iterates with ZSCAN and its full-text search ranks by it).
func ScanMembers(table string, key []byte, kind engine.Kind, resume bool, after []byte, count int64) engine.Mutation {
	r := []byte("0")
	if resume {
		r = []byte("1")
	}
	return engine.CallMutation(table, key, fnScan, num(int64(kind)), num(count), r, after)
}

func scanMembers(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 4 {
		return engine.Result{}, engine.ErrInvalid
	}
	kind, err1 := parseNum(args[0])
	count, err2 := parseNum(args[1])
	if err1 != nil || err2 != nil || count < 1 ||
		kind != int64(engine.KindHash) && kind != int64(engine.KindSet) && kind != int64(engine.KindZSet) {
		return engine.Result{}, engine.ErrInvalid
	}
	c, wrong, err := openColl(tx, tx.Table(), tx.Key(), engine.Kind(kind))
	if res, done, err := settle(c.exists, wrong, err, engine.Result{}); done {
		return res, err
	}
	prefix := c.memberPrefix()
	r := engine.PrefixRange(prefix)
	if string(args[2]) == "1" {
		r.Start = append(append(prefix[:len(prefix):len(prefix)], args[3]...), 0) // just after the resume member
	}
	var res engine.Result
	type scored struct {
		score float64
		at    int // the member's place in Members (member order)
	}
	var scores []scored // a sorted set's, to answer a whole one in score order
	var bad error       // a member item that does not decode: the page fails, never comes back short
	more := false
	err = tx.Scan(engine.MemberTable(c.table), r, func(k []byte, it engine.Item) bool {
		if int64(len(res.Members)) == count {
			more = true
			return false
		}
		m := engine.Member{Name: append([]byte(nil), k[len(prefix):]...)}
		m.Item.Value, bad = c.memberValue(it.Value)
		res.Members = append(res.Members, m)
		if bad == nil && c.item.Kind == engine.KindZSet {
			var f float64
			f, bad = decodeScore(it.Value)
			scores = append(scores, scored{f, len(scores)})
		}
		return bad == nil
	})
	if err = cmp.Or(err, bad); err != nil {
		return engine.Result{}, err
	}
	if c.item.Kind == engine.KindZSet && string(args[2]) != "1" && !more {
		slices.SortStableFunc(scores, func(a, b scored) int { return cmp.Compare(a.score, b.score) })
		byScore := make([]engine.Member, len(scores))
		for i, s := range scores {
			byScore[i] = res.Members[s.at]
		}
		res.Members = byScore
	}
	if more {
		res.New, res.NewFound = engine.Item{Value: res.Members[len(res.Members)-1].Name}, true
	}
	return res, nil
}
