package redis

import (
	"bytes"
	"errors"

	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

// SORT and SORT_RO. The options are read here as Redis reads them (its errors come before the key's type is
// known); the sort itself is one engine function (internal/collections/sort.go), which reads the key, the keys
// its BY and GET patterns name, and, with STORE, writes the destination in the same batch: atomic and durable,
// inside MULTI and scripts too.

func init() {
	g := func(c *command) *command { c.groupName = "generic"; return c }
	register(
		g(&command{name: "sort", arity: -2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, movable: sortKeys, data: cmdSort, since: "1.0.0", summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result."}),
		g(&command{name: "sort_ro", arity: -2, flags: flagReadonly, firstKey: 1, lastKey: 1, step: 1, movable: func([][]byte) []int { return []int{1} }, data: cmdSort, since: "7.0.0", summary: "Returns the sorted elements of a list, a set, or a sorted set."}),
	)
	// STORE sends sortstore about the destination, or del when an empty result removed it.
	notes["sort"] = func(n *noteCtx) {
		if _, dst, _ := parseSort(n.args, false, false, false); dst > 0 {
			storeInto(notifyList, "sortstore", func(*noteCtx) []byte { return n.args[dst] })(n)
		}
	}
}

// parseSort reads SORT's options (SORT_RO's when readonly) as Redis's sortCommandGeneric does: dst is the index of
// the last STORE's destination (0: none), errMsg Redis's error for the first bad option. limited: the user may not
// read every key (ACL), so BY with a pattern and GET are refused, as in Redis (the keys they read are not
// arguments).
func parseSort(args [][]byte, readonly, script, limited bool) (spec collections.SortSpec, dst int, errMsg string) {
	spec = collections.SortSpec{Src: args[1], Count: -1, Script: script}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case eq(a, "asc"):
			spec.Desc = false
		case eq(a, "desc"):
			spec.Desc = true
		case eq(a, "alpha"):
			spec.Alpha = true
		case eq(a, "limit") && left >= 2:
			start, ok1 := argInt(args[j+1])
			count, ok2 := argInt(args[j+2])
			if !ok1 || !ok2 {
				return spec, 0, errNotInt
			}
			spec.Start, spec.Count = start, count
			j += 2
		case !readonly && eq(a, "store") && left >= 1:
			dst = j + 1
			j++
		case eq(a, "by") && left >= 1:
			spec.By = args[j+1]
			if p := args[j+1]; bytes.IndexByte(p[:cLen(p)], '*') < 0 {
				spec.NoSort = true // a constant: nothing to sort by (and it stays so, as in Redis)
			} else if limited {
				return spec, 0, "ERR BY option of SORT denied due to insufficient ACL permissions."
			}
			j++
		case eq(a, "get") && left >= 1:
			if limited {
				return spec, 0, "ERR GET option of SORT denied due to insufficient ACL permissions."
			}
			spec.Gets = append(spec.Gets, args[j+1])
			j++
		default:
			return spec, 0, "ERR syntax error"
		}
	}
	return spec, dst, ""
}

// cLen is the length of b as a C string: up to its first NUL byte.
func cLen(b []byte) int {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return i
	}
	return len(b)
}

// sortKeys finds SORT's keys as Redis's sortGetKeys does (the key sorted and the last argument after a STORE,
// skipping LIMIT's two arguments and BY's and GET's one), and the key it stores into when its options read
// otherwise (SORT k STORE get STORE d stores into d), so that a write is never to a key the command did not name.
func sortKeys(args [][]byte) []int {
	if len(args) < 2 {
		return nil
	}
	idx, store := []int{1}, 0
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "limit"):
			i += 2
		case eq(args[i], "store") && i+1 < len(args):
			store = i + 1
		case eq(args[i], "get") || eq(args[i], "by"):
			i++
		}
	}
	if store > 0 {
		idx = append(idx, store)
	}
	if _, dst, msg := parseSort(args, false, false, false); msg == "" && dst > 0 && (store == 0 || string(args[dst]) != string(args[store])) {
		idx = append(idx, dst)
	}
	return idx
}

func cmdSort(s *session, args [][]byte) {
	limited := s.user != nil && !s.user.get().fullKeyAccess(s.lookup(args[0]), args)
	spec, dst, msg := parseSort(args, eq(args[0], "sort_ro"), s.inScript, limited)
	if msg != "" {
		s.fail(msg)
		return
	}
	if dst > 0 {
		s.add(collections.SortStore(s.table(), args[dst], spec))
		s.plan(func(w *resp.Writer, res []engine.Result) {
			if r := res[0]; r.Err != nil {
				w.Error(sortErr(r.Err))
				return
			}
			w.Int(collections.Int(res[0]))
		})
		return
	}
	s.add(collections.Sort(s.table(), spec))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		if r.Err != nil {
			w.Error(sortErr(r.Err))
			return
		}
		w.ArrayHeader(len(r.Members))
		for _, m := range r.Members {
			if m.Item.Flags == 1 {
				w.Null()
			} else {
				w.Bulk(m.Name)
			}
		}
	})
}

// sortErr answers the sort function's own error in Redis's words.
func sortErr(err error) string {
	if errors.Is(err, collections.ErrSortNotDouble) {
		return "ERR One or more scores can't be converted into double"
	}
	return errText(err)
}
