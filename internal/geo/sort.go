package geo

// The two sorts Redis orders search results with, reproduced step for step so that points at equal distances
// (and a NaN distance, which compares as neither above nor equal) come out in redis-server's order: glibc's
// qsort, a stable merge sort, when every result is returned, and Redis's pqsort (NetBSD's quicksort that only
// sorts the part of the array holding the ranks asked for) when COUNT returns fewer. SORT orders its elements
// with the same two (internal/collections/sort.go), the partial one under BY with LIMIT.

// MergeSort sorts a as glibc's qsort does (msort): the first n/2 elements and the rest are sorted, then merged,
// the left element taken while cmp(left, right) <= 0.
func MergeSort[T any](a []T, cmp func(x, y *T) int) {
	msort(a, make([]T, 0, len(a)), cmp)
}

func msort[T any](b, tmp []T, cmp func(x, y *T) int) {
	n := len(b)
	if n <= 1 {
		return
	}
	b1, b2 := b[:n/2], b[n/2:]
	msort(b1, tmp, cmp)
	msort(b2, tmp, cmp)
	t := tmp[:0]
	i, j := 0, 0
	for i < len(b1) && j < len(b2) {
		if cmp(&b1[i], &b2[j]) <= 0 {
			t = append(t, b1[i])
			i++
		} else {
			t = append(t, b2[j])
			j++
		}
	}
	t = append(t, b1[i:]...) // what is left of b2 is in place already
	copy(b, t)
}

// PartialSort orders a so that its elements lo through hi (indexes) are those a full sort puts there, in that
// order, as Redis's pqsort does; the rest is left partly sorted.
func PartialSort[T any](a []T, cmp func(x, y *T) int, lo, hi int) {
	q := pqsorter[T]{a: a, cmp: cmp, lo: lo, hi: hi}
	q.sort(0, len(a))
}

type pqsorter[T any] struct {
	a      []T
	cmp    func(x, y *T) int
	lo, hi int
}

func (q *pqsorter[T]) c(i, j int) int { return q.cmp(&q.a[i], &q.a[j]) }
func (q *pqsorter[T]) swap(i, j int)  { q.a[i], q.a[j] = q.a[j], q.a[i] }

// vecswap swaps the n elements from i with the n from j, pair by pair from the first.
func (q *pqsorter[T]) vecswap(i, j, n int) {
	for k := 0; k < n; k++ {
		q.swap(i+k, j+k)
	}
}

func (q *pqsorter[T]) med3(a, b, c int) int {
	if q.c(a, b) < 0 {
		switch {
		case q.c(b, c) < 0:
			return b
		case q.c(a, c) < 0:
			return c
		}
		return a
	}
	switch {
	case q.c(b, c) > 0:
		return b
	case q.c(a, c) < 0:
		return a
	}
	return c
}

// wanted reports whether the elements from first to last (inclusive) meet the range to sort.
func (q *pqsorter[T]) wanted(first, last int) bool {
	return !(q.lo < first && q.hi < first || q.lo > last && q.hi > last)
}

// sort is Bentley and McIlroy's quicksort (insertion sort below 7 elements, a median of three or of three
// medians for the pivot, a three-way partition) on the n elements from a, recursing only into parts that meet
// the range to sort.
func (q *pqsorter[T]) sort(a, n int) {
	for {
		if n < 7 {
			for pm := a + 1; pm < a+n; pm++ {
				for pl := pm; pl > a && q.c(pl-1, pl) > 0; pl-- {
					q.swap(pl, pl-1)
				}
			}
			return
		}
		pm := a + n/2
		if n > 7 {
			pl, pn := a, a+n-1
			if n > 40 {
				d := n / 8
				pl = q.med3(pl, pl+d, pl+2*d)
				pm = q.med3(pm-d, pm, pm+d)
				pn = q.med3(pn-2*d, pn-d, pn)
			}
			pm = q.med3(pl, pm, pn)
		}
		q.swap(a, pm)
		pa, pb := a+1, a+1
		pc, pd := a+n-1, a+n-1
		for {
			for pb <= pc {
				r := q.c(pb, a)
				if r > 0 {
					break
				}
				if r == 0 {
					q.swap(pa, pb)
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := q.c(pc, a)
				if r < 0 {
					break
				}
				if r == 0 {
					q.swap(pc, pd)
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			q.swap(pb, pc)
			pb++
			pc--
		}
		pn := a + n
		r := min(pa-a, pb-pa)
		q.vecswap(a, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		q.vecswap(pb, pn-r, r)
		if r = pb - pa; r > 1 && q.wanted(a, a+r-1) {
			q.sort(a, r)
		}
		if r = pd - pc; r <= 1 {
			return
		}
		a, n = pn-r, r
		if !q.wanted(a, a+n-1) {
			return
		}
	}
}
