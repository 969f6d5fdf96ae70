package collections

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"anykv/internal/engine"
)

// Random members of sets, hashes and sorted sets (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, SPOP).
//
// Members are stored in member order and an LSM has no rank index, so a uniform pick cannot seek to its member.
// It can count to it: a pick draws ranks from the meta's exact count and reads up to the farthest of them from
// the nearer end of the collection, a quarter of the members on average for one pick instead of all of them, and
// without copying or shuffling the ones it skips. Picks as many as half the collection read it whole.

const fnRand = "coll.rand"

func init() { engine.RegisterUncachedKeyReadFunc(fnRand, randMembers) }

// RandMembers picks members of the set, hash or sorted set (kind) at the key as SRANDMEMBER, HRANDFIELD and
// ZRANDMEMBER do: min(count, n) distinct members for count ≥ 0, -count picks that may repeat for count < 0, in
// random order, into Members (with their values; a sorted set's: the score text). The draw comes from seed, so
// the mutation stays deterministic.
func RandMembers(table string, key []byte, kind engine.Kind, count int64, seed uint64) engine.Mutation {
	return engine.CallMutation(table, key, fnRand, num(int64(kind)), num(count), num(int64(seed)))
}

func randMembers(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) != 3 {
		return engine.Result{}, engine.ErrInvalid
	}
	kind, err1 := parseNum(args[0])
	count, err2 := parseNum(args[1])
	seed, err3 := parseNum(args[2])
	if err1 != nil || err2 != nil || err3 != nil ||
		kind != int64(engine.KindSet) && kind != int64(engine.KindHash) && kind != int64(engine.KindZSet) {
		return engine.Result{}, engine.ErrInvalid
	}
	c, wrong, err := openColl(tx, tx.Table(), tx.Key(), engine.Kind(kind))
	if res, done, err := settle(c.exists, wrong, err, engine.Result{}); done {
		return res, err
	}
	ms, err := c.pick(rand.New(rand.NewPCG(uint64(seed), 1)), count)
	return engine.Result{Members: ms}, err
}

// pick draws members of the set or hash c (which exists) as RandMembers describes.
func (c *coll) pick(rng *rand.Rand, count int64) ([]engine.Member, error) {
	n := c.meta.Count
	repeat := count < 0
	picks := count
	if repeat {
		picks = -count
	}
	if picks == 0 {
		return nil, nil
	}
	if !repeat && picks >= n || picks > n/2 { // most of it: read it all
		return c.pickAll(rng, count)
	}
	ranks := make([]int64, 0, picks) // the ranks drawn, in draw order
	if repeat {
		for i := int64(0); i < picks; i++ {
			ranks = append(ranks, rng.Int64N(n))
		}
	} else { // Floyd's sampling: picks distinct ranks
		seen := make(map[int64]bool, picks)
		for j := n - picks; j < n; j++ {
			r := rng.Int64N(j + 1)
			if seen[r] {
				r = j
			}
			seen[r] = true
			ranks = append(ranks, r)
		}
		rng.Shuffle(len(ranks), func(i, j int) { ranks[i], ranks[j] = ranks[j], ranks[i] })
	}
	wanted := slices.Clone(ranks)
	slices.Sort(wanted)
	wanted = slices.Compact(wanted)
	got, err := c.members(wanted)
	if err != nil {
		return nil, err
	}
	if len(got) != len(wanted) { // the count and the members disagree: never expected, but stay correct
		return c.pickAll(rng, count)
	}
	out := make([]engine.Member, len(ranks))
	for i, r := range ranks {
		j, _ := slices.BinarySearch(wanted, r)
		out[i] = got[j]
	}
	return out, nil
}

// pickAll is pick over a full read of the collection, whatever its count says.
func (c *coll) pickAll(rng *rand.Rand, count int64) ([]engine.Member, error) {
	all, err := c.members(nil)
	if err != nil {
		return nil, err
	}
	if count < 0 {
		out := make([]engine.Member, 0, min(-count, 1<<20))
		for i := int64(0); i < -count && len(all) > 0; i++ {
			out = append(out, all[rng.IntN(len(all))])
		}
		return out, nil
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(count, int64(len(all)))], nil
}

// members reads the members at the given ranks (sorted, distinct; nil: all of them), in rank order, from the end
// of the collection nearer to the ranks, copying only those it returns (a sorted set's values: score texts).
func (c *coll) members(ranks []int64) ([]engine.Member, error) {
	prefix := c.memberPrefix()
	mt := engine.MemberTable(c.table)
	var out []engine.Member
	var bad error // a member item that does not decode
	take := func(k []byte, it engine.Item) bool {
		it.Value, bad = c.memberValue(it.Value)
		out = append(out, engine.Member{Name: append([]byte(nil), k[len(prefix):]...), Item: it})
		return bad == nil
	}
	if ranks == nil {
		err := c.tx.Scan(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool { return take(k, it) })
		return out, cmp.Or(err, bad)
	}
	n := c.meta.Count
	lo, hi := ranks[0], ranks[len(ranks)-1]
	if n-1-lo < hi { // nearer the end: read down, ranks counted from the top
		next, i := len(ranks)-1, n-1
		err := c.tx.ScanReverse(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
			if i == ranks[next] {
				if !take(k, it) {
					return false
				}
				next--
			}
			i--
			return next >= 0
		})
		slices.Reverse(out)
		return out, cmp.Or(err, bad)
	}
	next, i := 0, int64(0)
	err := c.tx.Scan(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
		if i == ranks[next] {
			if !take(k, it) {
				return false
			}
			next++
		}
		i++
		return next < len(ranks)
	})
	return out, cmp.Or(err, bad)
}
