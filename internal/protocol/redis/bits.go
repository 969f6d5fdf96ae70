package redis

import (
	"errors"
	"strconv"
	"strings"

	"anykv/internal/bitops"
	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

// Bitmaps, LCS, TOUCH and OBJECT: commands on values of any kind that read or rewrite a string's bits.

func init() {
	rw, ro := flagWrite, flagReadonly
	b := func(c *command) *command { c.groupName = "bitmap"; return c }
	register(
		b(&command{name: "setbit", arity: 4, flags: rw, data: cmdSetBit, since: "2.2.0", summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."}),
		b(&command{name: "getbit", arity: 3, flags: ro | flagFast, data: cmdGetBit, since: "2.2.0", summary: "Returns a bit value by offset."}),
		b(&command{name: "bitcount", arity: -2, flags: ro, data: cmdBitCount, since: "2.6.0", summary: "Counts the number of set bits (population counting) in a string."}),
		b(&command{name: "bitpos", arity: -3, flags: ro, data: cmdBitPos, since: "2.8.7", summary: "Finds the first set (1) or clear (0) bit in a string."}),
		b(&command{name: "bitop", arity: -4, flags: rw, firstKey: 2, lastKey: -1, data: cmdBitOp, since: "2.6.0", summary: "Performs bitwise operations on multiple strings, and stores the result."}),
		b(&command{name: "bitfield", arity: -2, flags: rw, data: cmdBitField, since: "3.2.0", summary: "Performs arbitrary bitfield integer operations on strings."}),
		b(&command{name: "bitfield_ro", arity: -2, flags: ro | flagFast, data: cmdBitField, since: "6.0.0", summary: "Performs arbitrary read-only bitfield integer operations on strings."}),
		&command{name: "lcs", arity: -3, flags: ro, lastKey: 2, data: cmdLCS, groupName: "string", since: "7.0.0", summary: "Finds the longest common substring."},
		&command{name: "touch", arity: -2, flags: ro | flagFast, lastKey: -1, data: cmdExists, since: "3.2.1", summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed."},
		&command{name: "object", arity: -2, flags: ro, firstKey: 2, lastKey: 2, data: cmdObject, since: "2.2.3", summary: "A container for object introspection commands."},
		&command{name: "memory", arity: -2, flags: ro, firstKey: 2, lastKey: 2, data: cmdMemory, groupName: "server", since: "4.0.0", summary: "A container for memory diagnostics commands."},
	)
}

const errBitOffset = "ERR bit offset is not an integer or out of range"

func cmdSetBit(s *session, args [][]byte) {
	off, ok := argInt(args[2])
	if !ok || off < 0 || off >= 1<<32 {
		s.fail(errBitOffset)
		return
	}
	if !eq(args[3], "0") && !eq(args[3], "1") {
		s.fail("ERR bit is not an integer or out of range")
		return
	}
	s.add(bitops.SetBit(s.table(), args[1], off, eq(args[3], "1"), s.h.store.Limits().MaxValue))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case errors.Is(r.Err, bitops.ErrBitOffset):
			w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		case r.Err != nil:
			w.Error(errText(r.Err))
		default:
			w.Int(bitops.Int(r))
		}
	})
}

// readValue plans a read of the string at key and calls fn with its value (nil if absent) to write the reply.
func (s *session) readValue(key []byte, fn func(w *resp.Writer, v []byte)) {
	s.getPart(key)
	s.plan(func(w *resp.Writer, res []engine.Result) {
		switch r := res[0]; {
		case r.Err == nil && r.New.Value == nil:
			fn(w, []byte{}) // an empty string is not a missing key (BITPOS tells them apart)
		case r.Err == nil:
			fn(w, r.New.Value)
		case errors.Is(r.Err, engine.ErrNotFound):
			fn(w, nil)
		default:
			w.Error(errText(r.Err))
		}
	})
}

func cmdGetBit(s *session, args [][]byte) {
	off, ok := argInt(args[2])
	if !ok || off < 0 || off >= 1<<32 {
		s.fail(errBitOffset)
		return
	}
	s.readValue(args[1], func(w *resp.Writer, v []byte) { w.Int(bitops.GetBit(v, off)) })
}

// bitUnit parses BITCOUNT's and BITPOS's optional BYTE|BIT.
func bitUnit(a [][]byte) (bit, ok bool) {
	switch {
	case len(a) == 0:
		return false, true
	case len(a) == 1 && eq(a[0], "bit"):
		return true, true
	case len(a) == 1 && eq(a[0], "byte"):
		return false, true
	}
	return false, false
}

func cmdBitCount(s *session, args [][]byte) {
	start, end := int64(0), int64(-1)
	bit := false
	switch {
	case len(args) == 2:
	case len(args) >= 4:
		n, ok := s.intArgs(args[2], args[3])
		if !ok {
			return
		}
		start, end = n[0], n[1]
		var unitOK bool
		if bit, unitOK = bitUnit(args[4:]); !unitOK {
			s.fail("ERR syntax error")
			return
		}
	default:
		s.fail("ERR syntax error")
		return
	}
	s.readValue(args[1], func(w *resp.Writer, v []byte) { w.Int(bitops.Count(v, start, end, bit)) })
}

func cmdBitPos(s *session, args [][]byte) {
	b, ok := argInt(args[2])
	if !ok || (b != 0 && b != 1) {
		s.fail("ERR The bit argument must be 1 or 0.")
		return
	}
	start, end, hasEnd, bit := int64(0), int64(-1), false, false
	if len(args) > 3 {
		n, ok := s.intArgs(args[3])
		if !ok {
			return
		}
		start = n[0]
	}
	if len(args) > 4 {
		n, ok := s.intArgs(args[4])
		if !ok {
			return
		}
		end, hasEnd = n[0], true
		var unitOK bool
		if bit, unitOK = bitUnit(args[5:]); !unitOK {
			s.fail("ERR syntax error")
			return
		}
	}
	s.readValue(args[1], func(w *resp.Writer, v []byte) {
		if v == nil && b == 0 {
			w.Int(0)
			return
		}
		w.Int(bitops.Pos(v, b, start, end, hasEnd, bit))
	})
}

func cmdBitOp(s *session, args [][]byte) {
	op := lower(args[1])
	switch {
	case op != "and" && op != "or" && op != "xor" && op != "not":
		s.fail("ERR syntax error")
		return
	case op == "not" && len(args) != 4:
		s.fail("ERR BITOP NOT must be called with a single source key.")
		return
	}
	s.add(bitops.BitOp(s.table(), args[2], op, args[3:]...))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		if r := res[0]; r.Err != nil {
			w.Error(errText(r.Err))
			return
		}
		w.Int(bitops.Int(res[0]))
	})
}

// parseBitType parses a BITFIELD type: i1..i64 or u1..u63.
func parseBitType(a []byte) (signed bool, width int, ok bool) {
	if len(a) < 2 || (a[0] != 'i' && a[0] != 'u' && a[0] != 'I' && a[0] != 'U') {
		return false, 0, false
	}
	w, err := strconv.Atoi(string(a[1:]))
	signed = a[0] == 'i' || a[0] == 'I'
	if err != nil || w < 1 || w > 64 || (!signed && w > 63) {
		return false, 0, false
	}
	return signed, w, true
}

func cmdBitField(s *session, args [][]byte) {
	ro := eq(args[0], "bitfield_ro")
	var fields []bitops.Field
	overflow := "wrap"
	for i := 2; i < len(args); {
		op := lower(args[i])
		switch {
		case op == "overflow" && !ro && i+1 < len(args):
			ov := lower(args[i+1])
			if ov != "wrap" && ov != "sat" && ov != "fail" {
				s.fail("ERR Invalid OVERFLOW type specified")
				return
			}
			overflow = ov
			i += 2
			continue
		case op == "get" && i+2 < len(args), (op == "set" || op == "incrby") && !ro && i+3 < len(args):
		case (op == "set" || op == "incrby") && ro:
			s.fail("ERR BITFIELD_RO only supports the GET subcommand")
			return
		default:
			s.fail("ERR syntax error")
			return
		}
		signed, width, ok := parseBitType(args[i+1])
		if !ok {
			s.fail("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
			return
		}
		offArg := string(args[i+2])
		mult := int64(1)
		if strings.HasPrefix(offArg, "#") {
			offArg, mult = offArg[1:], int64(width)
		}
		off, err := strconv.ParseInt(offArg, 10, 64)
		if err != nil || off < 0 || off > (1<<32-1)/mult { // off*mult < 2^32, compared without overflowing
			s.fail(errBitOffset)
			return
		}
		f := bitops.Field{Op: op, Signed: signed, Width: width, Offset: off * mult, Overflow: overflow}
		i += 3
		if op != "get" {
			v, ok := argInt(args[i])
			if !ok {
				s.fail(errNotInt)
				return
			}
			f.Value = v
			i++
		}
		fields = append(fields, f)
	}
	s.add(bitops.BitField(s.table(), args[1], fields, s.h.store.Limits().MaxValue))
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, bitops.ErrBitOffset):
			w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
			return
		case r.Err != nil:
			w.Error(errText(r.Err))
			return
		}
		w.ArrayHeader(len(r.Members))
		for _, m := range r.Members {
			if m.Item.Flags == 1 {
				w.Null()
			} else {
				n, _ := strconv.ParseInt(string(m.Item.Value), 10, 64)
				w.Int(n)
			}
		}
	})
}

// cmdLCS answers the longest common subsequence of two strings, as Redis 7's LCS.
func cmdLCS(s *session, args [][]byte) {
	var lenOnly, idx, withLen bool
	minLen := int64(0)
	// Redis checks the keys' types before it reads the options: a bad option is answered only when both keys
	// hold strings (or nothing).
	optErr := ""
	for i := 3; i < len(args) && optErr == ""; i++ {
		switch {
		case eq(args[i], "len"):
			lenOnly = true
		case eq(args[i], "idx"):
			idx = true
		case eq(args[i], "withmatchlen"):
			withLen = true
		case eq(args[i], "minmatchlen") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				optErr = errNotInt
				break
			}
			minLen = max(n, 0)
			i++
		default:
			optErr = "ERR syntax error"
		}
	}
	if optErr == "" && lenOnly && idx {
		optErr = "ERR If you want both the length and indexes, please just use IDX."
	}
	s.get(args[1])
	s.get(args[2])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		var v [2][]byte
		for _, r := range res {
			if errors.Is(r.Err, engine.ErrWrongType) {
				w.Error("ERR The specified keys must contain string values")
				return
			}
		}
		for i, r := range res {
			if r.Err != nil && !errors.Is(r.Err, engine.ErrNotFound) {
				w.Error(errText(r.Err))
				return
			}
			v[i] = r.New.Value
		}
		if optErr != "" {
			w.Error(optErr)
			return
		}
		table := 4 * int64(len(v[0])+1) * int64(len(v[1])+1)
		if table > int64(s.h.limits.Load().MaxBulk) { // as Redis 7.2
			w.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
			return
		}
		// Several clients' LCS tables at once count against maxmemory-clients, as their requests do: each
		// may be as big as proto-max-bulk-len (Redis, single-threaded, holds one at a time).
		if err := s.acct.Reserve(int(table)); err != nil {
			w.Error("ERR Insufficient memory, transient memory for LCS exceeds maxmemory-clients")
			return
		}
		defer s.acct.Release(int(table))
		writeLCS(w, v[0], v[1], lenOnly, idx, withLen, minLen)
	})
}

// writeLCS computes the LCS table (O(len(a)·len(b)), as Redis) and writes the reply LCS's options ask for; the
// caller bounds the table's size.
func writeLCS(w *resp.Writer, a, b []byte, lenOnly, idx, withLen bool, minLen int64) {
	t := make([]uint32, (len(a)+1)*(len(b)+1))
	at := func(i, j int) *uint32 { return &t[i*(len(b)+1)+j] }
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				*at(i, j) = *at(i-1, j-1) + 1
			} else {
				*at(i, j) = max(*at(i-1, j), *at(i, j-1))
			}
		}
	}
	n := *at(len(a), len(b))
	if lenOnly {
		w.Int(int64(n))
		return
	}
	// Walk back from the end, collecting the common string and the matching ranges (from the end, as Redis).
	out := make([]byte, n)
	type rng struct{ a0, a1, b0, b1 int }
	var matches []rng
	var cur *rng
	i, j, k := len(a), len(b), int(n)
	for i > 0 && j > 0 {
		switch {
		case a[i-1] == b[j-1]:
			k--
			out[k] = a[i-1]
			if cur != nil && cur.a0 == i && cur.b0 == j {
				cur.a0, cur.b0 = i-1, j-1
			} else {
				if cur != nil {
					matches = append(matches, *cur)
				}
				cur = &rng{i - 1, i - 1, j - 1, j - 1}
			}
			i, j = i-1, j-1
		case *at(i-1, j) > *at(i, j-1):
			i--
		default:
			j--
		}
	}
	if cur != nil {
		matches = append(matches, *cur)
	}
	if !idx {
		w.Bulk(out)
		return
	}
	var kept []rng
	for _, m := range matches {
		if int64(m.a1-m.a0+1) >= minLen {
			kept = append(kept, m)
		}
	}
	w.MapHeader(2)
	w.BulkString("matches")
	w.ArrayHeader(len(kept))
	for _, m := range kept {
		if withLen {
			w.ArrayHeader(3)
		} else {
			w.ArrayHeader(2)
		}
		w.ArrayHeader(2)
		w.Int(int64(m.a0))
		w.Int(int64(m.a1))
		w.ArrayHeader(2)
		w.Int(int64(m.b0))
		w.Int(int64(m.b1))
		if withLen {
			w.Int(int64(m.a1 - m.a0 + 1))
		}
	}
	w.BulkString("len")
	w.Int(int64(n))
}

// cmdObject answers what OBJECT can mean for anykv: ENCODING by kind, and the access figures anykv does not keep
// as neutral values (FREQ 0, IDLETIME 0, REFCOUNT 1).
func cmdObject(s *session, args [][]byte) {
	sub := lower(args[1])
	if sub == "help" && len(args) == 2 {
		s.plan(func(w *resp.Writer, _ []engine.Result) {
			helpTo(w, objectHelp)
		})
		return
	}
	if sub != "encoding" && sub != "freq" && sub != "idletime" && sub != "refcount" && sub != "help" {
		s.fail("ERR unknown subcommand '" + string(args[1]) + "'. Try OBJECT HELP.")
		return
	}
	if len(args) != 3 || sub == "help" {
		s.fail("ERR wrong number of arguments for 'object|" + sub + "' command")
		return
	}
	s.getAny(args[2])
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Null()
		case r.Err != nil:
			w.Error(errText(r.Err))
		case sub == "encoding":
			w.BulkString(encodingOf(r.New))
		case sub == "refcount":
			w.Int(1)
		default:
			w.Int(0)
		}
	})
}

// encodingOf names how anykv stores an item, in Redis's vocabulary where one fits.
func encodingOf(it engine.Item) string {
	switch it.Kind {
	case engine.KindString:
		if _, ok := engine.ParseInt(it.Value); ok {
			return "int"
		}
		if len(it.Value) <= 44 {
			return "embstr"
		}
		return "raw"
	case engine.KindHash:
		return "hashtable"
	case engine.KindList:
		return "quicklist"
	case engine.KindSet:
		return "hashtable"
	case engine.KindStream:
		return "stream"
	}
	return "skiplist"
}

// cmdMemory serves MEMORY USAGE: the bytes anykv keeps for the key and its value (all members of a collection,
// as Redis's SAMPLES 0), plus a fixed per-item overhead. It reads the whole collection: O(members).
// memoryUsage is MEMORY USAGE key: the bytes stored for the key and its members, read in the batch.
func memoryUsage(s *session, args [][]byte) {
	key := args[2]
	const overhead = 48 // header, version and index entry of one stored item
	s.getAny(key)
	// The members, read in the same batch whatever the kind (only the one matching the kind answers).
	s.members(engine.KindHash, key)
	s.members(engine.KindSet, key)
	s.add(collections.Range(s.table(), key, 0, -1))
	s.add(collections.ZRange(s.table(), key, collections.RangeSpec{By: "rank", Min: []byte("0"), Max: []byte("-1"), Count: -1}))
	s.add(collections.XRange(s.table(), key, collections.ID{}, maxID, false, -1))
	s.add(collections.XInfo(s.table(), key, "records", nil)) // a stream's consumer groups
	s.plan(func(w *resp.Writer, res []engine.Result) {
		r := res[0]
		switch {
		case errors.Is(r.Err, engine.ErrNotFound):
			w.Null()
			return
		case r.Err != nil:
			w.Error(errText(r.Err))
			return
		}
		n := int64(len(key) + len(r.New.Value) + overhead)
		for _, mr := range res[1:] {
			if mr.Err == nil {
				for _, m := range mr.Members {
					n += int64(len(key) + len(m.Name) + len(m.Item.Value) + overhead)
				}
			}
		}
		w.Int(n)
	})
}
