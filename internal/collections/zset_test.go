package collections

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// zmodel is a sorted set as a map, with Redis's range rules written out plainly: the reference the range scans
// and the floor are checked against.
type zmodel map[string]float64

func (m zmodel) sorted() []entry {
	out := make([]entry, 0, len(m))
	for k, s := range m {
		out = append(out, entry{member: []byte(k), score: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score < out[j].score
		}
		return bytes.Compare(out[i].member, out[j].member) < 0
	})
	return out
}

// selectRank is ZRANGE start stop [REV] over the model.
func (m zmodel) selectRank(start, stop int64, rev bool) []entry {
	es := m.sorted()
	if rev {
		reverse(es)
	}
	n := int64(len(es))
	if start < 0 {
		start = max(start+n, 0)
	}
	if stop < 0 {
		stop += n
	}
	stop = min(stop, n-1)
	if start > stop || start >= n {
		return nil
	}
	return es[start : stop+1]
}

// selectScore is ZRANGE lo hi BYSCORE [REV] [LIMIT offset count] over the model.
func (m zmodel) selectScore(lo, hi float64, loEx, hiEx, rev bool, offset, count int64) []entry {
	var in []entry
	for _, e := range m.sorted() {
		if (e.score > lo || !loEx && e.score == lo) && (e.score < hi || !hiEx && e.score == hi) {
			in = append(in, e)
		}
	}
	if rev {
		reverse(in)
	}
	if offset < 0 || offset >= int64(len(in)) {
		return nil
	}
	in = in[offset:]
	if count >= 0 && count < int64(len(in)) {
		in = in[:count]
	}
	return in
}

func bound(f float64, excl bool) []byte {
	b := FormatScore(f)
	if excl {
		return append([]byte("("), b...)
	}
	return b
}

// TestZSetRangesMatchModel drives random writes, pops, range removals and range reads at one sorted set and
// checks each reply against the model: the bounded index scans (rank up to its end, score span, early stop at
// a LIMIT) and the floor that pops raise and lower entries pull down must select exactly what Redis would.
func TestZSetRangesMatchModel(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	var pending []engine.Mutation // writes applied in the same batch as the next mutation: its reads see them
	apply := func(m engine.Mutation) engine.Result {
		t.Helper()
		res, err := st.Apply(ctx, &engine.Batch{Now: 1, Muts: append(pending, m)})
		if err != nil {
			t.Fatal(err)
		}
		pending = nil
		last := res[len(res)-1]
		if last.Err != nil && last.Err != engine.ErrNotFound {
			t.Fatalf("%v", last.Err)
		}
		return last
	}
	scores := []float64{math.Inf(-1), -2, 0, 0, 1, 1, 1, 2.5, 7, math.Inf(1)}
	key := []byte("z")
	model := zmodel{}
	rng := rand.New(rand.NewPCG(7, 16))
	for step := 0; step < 6000; step++ {
		pick := func() float64 { return scores[rng.IntN(len(scores))] }
		var want []entry
		var got engine.Result
		op := rng.IntN(11)
		var what string
		switch op {
		case 0, 1, 2: // ZADD, often several members, often at equal scores
			var pairs [][]byte
			for i := rng.IntN(4); i >= 0; i-- {
				s, mem := pick(), fmt.Sprintf("m%02d", rng.IntN(40))
				pairs = append(pairs, FormatScore(s), []byte(mem))
				model[mem] = s
			}
			if rng.IntN(2) == 0 {
				pending = append(pending, ZAdd("t", key, 0, pairs...))
			} else {
				apply(ZAdd("t", key, 0, pairs...))
			}
			continue
		case 3: // ZPOPMIN / ZPOPMAX
			high, count := rng.IntN(2) == 0, int64(rng.IntN(4))
			if count > 0 {
				want = model.selectRank(0, count-1, high)
			}
			what = fmt.Sprintf("ZPOP high=%v %d", high, count)
			got = apply(ZPop("t", key, high, count))
			for _, e := range want {
				delete(model, string(e.member))
			}
			if it, err := st.Get(ctx, "t", key, 1); len(want) > 0 && err == nil { // the floor or ceiling moves
				meta, _ := engine.DecodeCollMeta(it.Value)
				last, hint := want[len(want)-1], meta.Floor
				if high {
					hint = meta.Ceil
				}
				if string(hint) != string(indexSuffix(last.score, last.member)) {
					t.Fatalf("step %d %s: floor %x ceiling %x, want the last popped entry's %x", step, what, meta.Floor, meta.Ceil, indexSuffix(last.score, last.member))
				}
			}
		case 4: // ZREMRANGEBYSCORE, many from -inf or to +inf (what moves the floor or ceiling)
			lo, hi := pick(), pick()
			if rng.IntN(2) == 0 {
				lo = math.Inf(-1)
			}
			if rng.IntN(3) == 0 {
				hi = math.Inf(1)
			}
			want = model.selectScore(lo, hi, false, false, false, 0, -1)
			what = fmt.Sprintf("ZREMRANGEBYSCORE %v %v", lo, hi)
			got = apply(ZRemRange("t", key, RangeSpec{By: "score", Min: FormatScore(lo), Max: FormatScore(hi)}))
			if n, _ := strconv.Atoi(string(got.New.Value)); n != len(want) {
				t.Fatalf("step %d %s: removed %d, want %d", step, what, n, len(want))
			}
			for _, e := range want {
				delete(model, string(e.member))
			}
			got = apply(ZRange("t", key, RangeSpec{By: "rank", Min: []byte("0"), Max: []byte("-1"), Count: -1}))
			want, what = model.selectRank(0, -1, false), what+", then ZRANGE 0 -1"
		case 5: // ZREMRANGEBYRANK, half of them from rank 0
			start, stop := int64(rng.IntN(5)-2), int64(rng.IntN(5)-1)
			if rng.IntN(2) == 0 {
				start = 0
			}
			if rng.IntN(3) == 0 {
				stop = -1
			}
			for _, e := range model.selectRank(start, stop, false) {
				delete(model, string(e.member))
			}
			what = fmt.Sprintf("ZREMRANGEBYRANK %d %d, then ZRANGE 0 -1", start, stop)
			apply(ZRemRange("t", key, RangeSpec{By: "rank", Min: num(start), Max: num(stop)}))
			got = apply(ZRange("t", key, RangeSpec{By: "rank", Min: []byte("0"), Max: []byte("-1"), Count: -1}))
			want = model.selectRank(0, -1, false)
		case 9: // ZRANK / ZREVRANK of a member, present or not
			mem, rev := fmt.Sprintf("m%02d", rng.IntN(40)), rng.IntN(2) == 0
			r := apply(ZRank("t", key, []byte(mem), rev))
			wantRank := -1
			for i, e := range model.selectRank(0, -1, rev) {
				if string(e.member) == mem {
					wantRank = i
				}
			}
			gotRank := -1
			if r.Err == nil {
				gotRank, _ = strconv.Atoi(string(r.New.Value))
			}
			if gotRank != wantRank {
				t.Fatalf("step %d ZRANK %s rev=%v: %d, want %d", step, mem, rev, gotRank, wantRank)
			}
			continue
		case 6, 7: // ZRANGE by rank, either direction, negative ranks too
			start, stop, rev := int64(rng.IntN(9)-4), int64(rng.IntN(9)-4), rng.IntN(2) == 0
			want = model.selectRank(start, stop, rev)
			what = fmt.Sprintf("ZRANGE %d %d rev=%v", start, stop, rev)
			got = apply(ZRange("t", key, RangeSpec{By: "rank", Min: num(start), Max: num(stop), Rev: rev, Count: -1}))
		default: // ZRANGE BYSCORE, exclusive ends, REV, LIMIT
			lo, hi := pick(), pick()
			loEx, hiEx, rev := rng.IntN(3) == 0, rng.IntN(3) == 0, rng.IntN(2) == 0
			off, cnt := int64(rng.IntN(3)), int64(rng.IntN(5)-1)
			want = model.selectScore(lo, hi, loEx, hiEx, rev, off, cnt)
			what = fmt.Sprintf("ZRANGE %s %s BYSCORE rev=%v LIMIT %d %d", bound(lo, loEx), bound(hi, hiEx), rev, off, cnt)
			got = apply(ZRange("t", key, RangeSpec{By: "score", Min: bound(lo, loEx), Max: bound(hi, hiEx), Rev: rev, Offset: off, Count: cnt}))
		}
		if len(got.Members) != len(want) {
			t.Fatalf("step %d %s: %d members, want %d (%v)", step, what, len(got.Members), len(want), want)
		}
		for i, e := range want {
			g := got.Members[i]
			if string(g.Name) != string(e.member) || string(g.Item.Value) != string(FormatScore(e.score)) {
				t.Fatalf("step %d %s: member %d is %s %s, want %s %v", step, what, i, g.Name, g.Item.Value, e.member, e.score)
			}
		}
	}
}

// TestLexRangesMatchModel: BYLEX ranges (ZRANGE, REV, LIMIT, ZLEXCOUNT, ZREMRANGEBYLEX) over a set whose scores
// are all equal read only their span of the index, and over one whose scores differ (Redis leaves that
// undefined) filter every entry in index order as before; both must select what the model selects. Members are
// short strings over a small alphabet, so bounds are often prefixes of members, and both ends are often exclusive.
func TestLexRangesMatchModel(t *testing.T) {
	st := memstore.New()
	apply := func(m engine.Mutation) engine.Result { t.Helper(); return applyOne(t, st, m) }
	rng := rand.New(rand.NewPCG(11, 12))
	word := func() string {
		b := make([]byte, 1+rng.IntN(3))
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	bound := func() []byte {
		switch rng.IntN(8) {
		case 0:
			return []byte("-")
		case 1:
			return []byte("+")
		case 2, 3, 4:
			return []byte("[" + word())
		}
		return []byte("(" + word())
	}
	key := []byte("lex")
	model := zmodel{}
	for step := 0; step < 4000; step++ {
		switch op := rng.IntN(10); {
		case op < 4: // ZADD at score 0; now and then a member at another score breaks the premise for a while
			mem, score := word(), 0.0
			if rng.IntN(40) == 0 {
				score = 1
			}
			apply(ZAdd("t", key, 0, FormatScore(score), []byte(mem)))
			model[mem] = score
		case op < 5:
			mem := word()
			apply(ZRem("t", key, []byte(mem)))
			delete(model, mem)
		default:
			lo, hi := bound(), bound()
			rev := rng.IntN(2) == 0
			off, cnt := int64(0), int64(-1)
			if rng.IntN(3) == 0 {
				off, cnt = int64(rng.IntN(3)), int64(rng.IntN(4))
			}
			var want []entry
			lb, _ := ParseLexBound(lo)
			hb, _ := ParseLexBound(hi)
			for _, e := range model.sorted() {
				if above, below := inRange(e, lb, hb); above && below {
					want = append(want, e)
				}
			}
			if rev {
				reverse(want)
			}
			if off < int64(len(want)) {
				want = want[off:]
			} else {
				want = nil
			}
			if cnt >= 0 && cnt < int64(len(want)) {
				want = want[:cnt]
			}
			spec := RangeSpec{By: "lex", Min: lo, Max: hi, Rev: rev, Offset: off, Count: cnt} // min then max, also for REV
			if rng.IntN(4) == 0 && !rev && cnt < 0 {
				got := apply(ZRemRange("t", key, spec))
				if n, _ := strconv.Atoi(string(got.New.Value)); n != len(want) {
					t.Fatalf("step %d ZREMRANGEBYLEX %s %s: removed %d, want %d", step, lo, hi, n, len(want))
				}
				for _, e := range want {
					delete(model, string(e.member))
				}
				continue
			}
			spec.Tally = rng.IntN(4) == 0 && cnt < 0 && off == 0
			got := apply(ZRange("t", key, spec))
			if spec.Tally {
				if n, _ := strconv.Atoi(string(got.New.Value)); n != len(want) {
					t.Fatalf("step %d ZLEXCOUNT %s %s: %d, want %d", step, lo, hi, n, len(want))
				}
				continue
			}
			var names []string
			for _, m := range got.Members {
				names = append(names, string(m.Name))
			}
			var wantNames []string
			for _, e := range want {
				wantNames = append(wantNames, string(e.member))
			}
			if fmt.Sprint(names) != fmt.Sprint(wantNames) {
				t.Fatalf("step %d ZRANGE %s %s BYLEX rev=%v LIMIT %d %d: %v, want %v (model %v)", step, lo, hi, rev, off, cnt, names, wantNames, model)
			}
		}
	}
}

// ZCOUNT and ZLEXCOUNT count the entries in range without keeping them: their allocations do not grow with the
// range (they kept every entry, a copy of each member, only to count them: a count over millions of members held
// them all until it answered).
func TestCountsKeepNoEntries(t *testing.T) {
	st := memstore.New()
	for i := 0; i < 20000; i += 1000 {
		byScore, byLex := make([][]byte, 0, 2000), make([][]byte, 0, 2000)
		for j := i; j < i+1000; j++ {
			m := []byte(fmt.Sprintf("m%05d", j))
			byScore = append(byScore, []byte(strconv.Itoa(j)), m)
			byLex = append(byLex, []byte("0"), m) // one score: lex ranges apply
		}
		applyOne(t, st, ZAdd("t", []byte("zs"), 0, byScore...))
		applyOne(t, st, ZAdd("t", []byte("zl"), 0, byLex...))
	}
	for _, c := range []struct {
		key, by                  string
		fewMin, fewMax, min, max string
		want                     string
	}{
		{"zs", "score", "100", "(200", "100", "(19900", "19800"},
		{"zl", "lex", "[m00100", "(m00200", "[m00100", "(m19900", "19800"},
	} {
		count := func(lo, hi string) engine.Result {
			return applyOne(t, st, ZRange("t", []byte(c.key), RangeSpec{By: c.by, Min: []byte(lo), Max: []byte(hi), Count: -1, Tally: true}))
		}
		few := testing.AllocsPerRun(3, func() { count(c.fewMin, c.fewMax) })
		many := testing.AllocsPerRun(3, func() { count(c.min, c.max) })
		if got := count(c.min, c.max); string(got.New.Value) != c.want {
			t.Fatalf("%s count: %s, want %s", c.by, got.New.Value, c.want)
		}
		if many > few+200 {
			t.Errorf("%s count over %s entries: %.0f allocations, against %.0f over 100: it keeps what it counts", c.by, c.want, many, few)
		}
	}
}
