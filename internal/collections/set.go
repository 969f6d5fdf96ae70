package collections

import (
	"math/rand/v2"
	"sort"

	"anykv/internal/engine"
)

// Sets whose writes depend on what they read: SPOP and the STORE forms of SINTER, SUNION and SDIFF. Plain set
// writes (SADD, SREM, SMOVE) are engine member ops.

const (
	fnSPop   = "set.pop"
	fnSStore = "set.store"
)

func init() {
	engine.RegisterFunc(fnSPop, spop)
	engine.RegisterFunc(fnSStore, sstore)
}

// SPop removes up to count random members (count < 0: one, in Result.New.Value) into Members. The choice is
// drawn from seed, so the mutation stays deterministic: the protocol picks a random seed.
func SPop(table string, key []byte, count int64, seed uint64) engine.Mutation {
	return engine.CallMutation(table, key, fnSPop, num(count), num(int64(seed)))
}

// SStore replaces the key with the intersection, union or difference ("inter", "union", "diff") of the sets at
// keys; Int is its size.
func SStore(table string, dst []byte, op string, keys ...[]byte) engine.Mutation {
	return engine.CallMutation(table, dst, fnSStore, append([][]byte{[]byte(op)}, keys...)...)
}

// setMembers reads every member name of the set at key: nil for a missing key, wrong for another kind.
func setMembers(tx *engine.Tx, table string, key []byte) (names [][]byte, meta engine.CollMeta, wrong bool, err error) {
	it, found, err := tx.Get(table, key)
	if err != nil || !found {
		return nil, meta, false, err
	}
	if it.Kind != engine.KindSet {
		return nil, meta, true, nil
	}
	if meta, err = engine.DecodeCollMeta(it.Value); err != nil {
		return nil, meta, false, err
	}
	prefix := engine.MemberPrefix(nil, key, meta.Gen)
	err = tx.Scan(engine.MemberTable(table), engine.PrefixRange(prefix), func(k []byte, _ engine.Item) bool {
		names = append(names, append([]byte(nil), k[len(prefix):]...))
		tx.Hold(engine.EntryCost)
		return true
	})
	return names, meta, false, err
}

func spop(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	count, err1 := parseNum(args[0])
	seed, err2 := parseNum(args[1])
	if err1 != nil || err2 != nil {
		return engine.Result{}, engine.ErrInvalid
	}
	c, wrong, err := openColl(tx, tx.Table(), tx.Key(), engine.KindSet)
	if res, done, err := settle(c.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	single := count < 0
	if single {
		count = 1
	}
	picked, err := c.pick(rand.New(rand.NewPCG(uint64(seed), 0)), count)
	if err != nil {
		return engine.Result{}, err
	}
	var res engine.Result
	for _, m := range picked {
		tx.Delete(engine.MemberTable(tx.Table()), engine.MemberKey(tx.Key(), c.meta.Gen, m.Name))
		res.Members = append(res.Members, engine.Member{Name: m.Name})
	}
	if len(picked) > 0 {
		c.meta.Count -= int64(len(picked))
		c.save()
	}
	if single && len(picked) > 0 {
		res.New, res.NewFound, res.Members = engine.Item{Value: picked[0].Name}, true, nil
	}
	return res, nil
}

func sstore(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 2 {
		return engine.Result{}, engine.ErrInvalid
	}
	op := string(args[0])
	count := map[string]int{}
	for i, k := range args[1:] {
		names, _, wrong, err := setMembers(tx, tx.Table(), k)
		if err != nil {
			return engine.Result{}, err
		}
		if wrong {
			return wrongType, nil
		}
		for _, n := range names {
			switch {
			case op == "diff" && i > 0:
				delete(count, string(n))
			default:
				count[string(n)]++
			}
		}
	}
	var out []string
	for n, c := range count {
		if op != "inter" || c == len(args)-1 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if _, found, err := tx.Get(tx.Table(), tx.Key()); err != nil {
		return engine.Result{}, err
	} else if found {
		tx.Delete(tx.Table(), tx.Key())
	}
	if len(out) > 0 {
		meta := engine.CollMeta{Gen: tx.NextVersion(), Count: int64(len(out))}
		for _, n := range out {
			tx.Put(engine.MemberTable(tx.Table()), engine.MemberKey(tx.Key(), meta.Gen, []byte(n)), engine.Item{Value: []byte{}})
		}
		tx.Put(tx.Table(), tx.Key(), engine.Item{Kind: engine.KindSet, Value: engine.AppendCollMeta(nil, meta)})
	}
	return intResult(int64(len(out))), nil
}
