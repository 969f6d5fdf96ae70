package collections

import (
	"encoding/binary"
	"math"
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

func init() { engine.RegisterReadFunc(fnRand, randMembers) }

// RandMembers picks members of the set, hash or sorted set (kind) at the key as SRANDMEMBER, HRANDFIELD and
// ZRANDMEMBER do: min(count, n) distinct members for count ≥ 0, -count picks that may repeat for count < 0, in
// random order, into Members (with their values; a sorted set's: the score text). The draw comes from seed, so
// the mutation stays deterministic.
func RandMembers(table string, key []byte, kind engine.Kind, count int64, seed uint64) engine.Mutation {
	return call(table, key, fnRand, num(int64(kind)), num(count), num(int64(seed)))
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
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	ms, err := c.pick(rng, count)
	if err == nil && kind == int64(engine.KindZSet) {
		for i := range ms { // the member → score items hold the float's bits
			if len(ms[i].Item.Value) != 8 {
				return engine.Result{}, engine.ErrCorrupt
			}
			ms[i].Item.Value = FormatScore(math.Float64frombits(binary.BigEndian.Uint64(ms[i].Item.Value)))
		}
	}
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
// of the collection nearer to the ranks, copying only those it returns.
func (c *coll) members(ranks []int64) ([]engine.Member, error) {
	prefix := engine.MemberPrefix(nil, c.key, c.meta.Gen)
	if c.item.Kind == engine.KindZSet {
		prefix = append(prefix, 'm') // a sorted set's member → score items, one per member in member order
	}
	mt := engine.MemberTable(c.table)
	var out []engine.Member
	take := func(k []byte, it engine.Item) {
		it.Value = append([]byte(nil), it.Value...)
		out = append(out, engine.Member{Name: append([]byte(nil), k[len(prefix):]...), Item: it})
	}
	if ranks == nil {
		err := c.tx.Scan(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
			take(k, it)
			return true
		})
		return out, err
	}
	n := c.meta.Count
	lo, hi := ranks[0], ranks[len(ranks)-1]
	if n-1-lo < hi { // nearer the end: read down, ranks counted from the top
		next, i := len(ranks)-1, n-1
		err := c.tx.ScanReverse(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
			if i == ranks[next] {
				take(k, it)
				next--
			}
			i--
			return next >= 0
		})
		slices.Reverse(out)
		return out, err
	}
	next, i := 0, int64(0)
	err := c.tx.Scan(mt, engine.PrefixRange(prefix), func(k []byte, it engine.Item) bool {
		if i == ranks[next] {
			take(k, it)
			next++
		}
		i++
		return next < len(ranks)
	})
	return out, err
}
