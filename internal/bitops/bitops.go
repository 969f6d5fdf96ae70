// Package bitops implements Redis's bit operations on string values. The writes (SETBIT, BITFIELD's SET and
// INCRBY, BITOP) run inside the engine's batch as registered functions (engine.OpCall), so they read and write
// the value atomically on every engine; the reads (GETBIT, BITCOUNT, BITPOS, BITFIELD GET) are pure functions of
// a value that the protocol reads.
package bitops

import (
	"errors"
	"math/bits"
	"strconv"

	"anykv/internal/engine"
)

// ErrBitOffset: an offset past the largest value the store accepts.
var ErrBitOffset = errors.New("bit offset is not an integer or out of range")

const (
	fnSetBit   = "bits.set"
	fnBitOp    = "bits.op"
	fnBitField = "bits.field"
)

func init() {
	engine.RegisterFunc(fnSetBit, setBit)
	engine.RegisterFunc(fnBitOp, bitOp)
	engine.RegisterFunc(fnBitField, bitField)
}

func num(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// Int reads an integer result (SETBIT's old bit, BITOP's length).
func Int(r engine.Result) int64 {
	n, _ := strconv.ParseInt(string(r.New.Value), 10, 64)
	return n
}

// readString reads the string at the mutation's key: nil if absent, wrong if another kind is there.
func readString(tx *engine.Tx, table string, key []byte) (engine.Item, bool, error) {
	it, found, err := tx.Get(table, key)
	if err != nil || !found {
		return engine.Item{}, false, err
	}
	if it.Kind != engine.KindString {
		return it, true, engine.ErrWrongType
	}
	return it, true, nil
}

// SetBit sets bit offset of the string at key to value (0 or 1), growing it with zero bytes, up to maxSize bytes;
// Int is the old bit. A bit that holds value already in a string long enough is not written (the result is
// Unchanged), as Redis writes nothing and sends no event then.
func SetBit(table string, key []byte, offset int64, value bool, maxSize int) engine.Mutation {
	v := []byte("0")
	if value {
		v = []byte("1")
	}
	return engine.CallMutation(table, key, fnSetBit, num(offset), v, num(int64(maxSize)))
}

func setBit(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	off, err1 := strconv.ParseInt(string(args[0]), 10, 64)
	maxSize, err2 := strconv.ParseInt(string(args[2]), 10, 64)
	if err1 != nil || err2 != nil || off < 0 {
		return engine.Result{}, engine.ErrInvalid
	}
	it, found, err := readString(tx, tx.Table(), tx.Key())
	if errors.Is(err, engine.ErrWrongType) { // before the size, as Redis: another kind is WRONGTYPE at any offset
		return engine.Result{Err: err}, nil
	} else if err != nil {
		return engine.Result{}, err
	}
	if off/8 >= maxSize {
		return engine.Result{Err: ErrBitOffset}, nil
	}
	v := it.Value
	if need := int(off/8) + 1; len(v) < need {
		v = append(append([]byte(nil), v...), make([]byte, need-len(v))...)
	} else {
		v = append([]byte(nil), v...)
	}
	mask := byte(0x80) >> (off % 8)
	old := int64(0)
	if v[off/8]&mask != 0 {
		old = 1
	}
	if found && len(v) == len(it.Value) && (old == 1) == (string(args[1]) == "1") {
		return engine.Result{New: engine.Item{Value: num(old)}, NewFound: true}, nil
	}
	if string(args[1]) == "1" {
		v[off/8] |= mask
	} else {
		v[off/8] &^= mask
	}
	if !found {
		it = engine.Item{}
	}
	it.Value = v
	tx.Put(tx.Table(), tx.Key(), it)
	return engine.Result{New: engine.Item{Value: num(old)}, NewFound: true}, nil
}

// GetBit is the bit at offset of v (0 past its end).
func GetBit(v []byte, offset int64) int64 {
	if offset/8 >= int64(len(v)) {
		return 0
	}
	if v[offset/8]&(0x80>>(offset%8)) != 0 {
		return 1
	}
	return 0
}

// Span resolves Redis's start and end (inclusive, negative from the end) over n units into [from, to), and
// whether the span is empty.
func Span(start, end, n int64) (int64, int64, bool) {
	if start < 0 {
		start = max(start+n, 0)
	}
	if end < 0 {
		end = max(end+n, 0) // an end before the first unit is the first unit, as in Redis
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		return 0, 0, true
	}
	return start, end + 1, false
}

// Count counts the set bits of v within the byte (or, with bitUnit, bit) span start..end.
func Count(v []byte, start, end int64, bitUnit bool) int64 {
	n := int64(len(v))
	if bitUnit {
		n *= 8
	}
	if start < 0 && end < 0 && start > end {
		return 0 // Redis's BITCOUNT (not BITPOS) answers this case before clamping
	}
	from, to, empty := Span(start, end, n)
	if empty {
		return 0
	}
	c := int64(0)
	if !bitUnit {
		for _, b := range v[from:to] {
			c += int64(bits.OnesCount8(b))
		}
		return c
	}
	// Whole bytes at once: bit by bit, BITCOUNT k 0 -1 BIT over a 64 MiB value took 2 s (redis-server 0.04 s).
	i := from
	for ; i < to && i%8 != 0; i++ {
		c += GetBit(v, i)
	}
	for ; i+8 <= to; i += 8 {
		c += int64(bits.OnesCount8(v[i/8]))
	}
	for ; i < to; i++ {
		c += GetBit(v, i)
	}
	return c
}

// Pos finds the first bit equal to bit within the span, as BITPOS does: -1 if none; looking for 0 without an
// explicit end, the first bit past the value counts as 0. An empty string has no bit at all (-1); a missing
// key, which the caller answers itself, counts as all zeros.
func Pos(v []byte, bit int64, start, end int64, hasEnd, bitUnit bool) int64 {
	n := int64(len(v))
	if bitUnit {
		n *= 8
	}
	if n == 0 {
		return -1
	}
	from, to, empty := Span(start, end, n)
	if empty {
		return -1
	}
	if !bitUnit {
		from, to = from*8, to*8
	}
	// A whole byte without the bit sought is passed at once: bit by bit, BITPOS over a 64 MiB value took 2.5 s
	// (redis-server 0.02 s).
	skip := byte(0)
	if bit == 0 {
		skip = 0xff
	}
	for i := from; i < to; {
		if i%8 == 0 && i+8 <= to && v[i/8] == skip {
			i += 8
			continue
		}
		if GetBit(v, i) == bit {
			return i
		}
		i++
	}
	if bit == 0 && !hasEnd {
		return to
	}
	return -1
}

// BitOp stores at key the AND, OR, XOR or NOT of the strings at srcs; Int is the result's length.
func BitOp(table string, key []byte, op string, srcs ...[]byte) engine.Mutation {
	m := engine.CallMutation(table, key, fnBitOp, append([][]byte{[]byte(op)}, srcs...)...)
	return m
}

func bitOp(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	op := string(args[0])
	// The result is combined one source at a time, each read dropped before the next: holding every source's
	// value (a copy on a disk engine) until the end, BITOP AND d k k ... k of one 64 MiB key held 64 MiB per
	// argument, 4.4 GB for 60 of them from a 400-byte command (and one of a few thousand ran the server out of
	// memory).
	var out []byte
	for n, k := range args[1:] {
		it, _, err := readString(tx, tx.Table(), k)
		if errors.Is(err, engine.ErrWrongType) {
			return engine.Result{Err: err}, nil
		} else if err != nil {
			return engine.Result{}, err
		}
		v := it.Value
		if n == 0 {
			out = append([]byte(nil), v...)
			continue
		}
		if len(v) > len(out) { // the bytes past a shorter string count as zeros
			out = append(out, make([]byte, len(v)-len(out))...)
		}
		switch op {
		case "and":
			for i, b := range v {
				out[i] &= b
			}
			clear(out[len(v):])
		case "or":
			for i, b := range v {
				out[i] |= b
			}
		case "xor":
			for i, b := range v {
				out[i] ^= b
			}
		}
	}
	if op == "not" {
		for i := range out {
			out[i] = ^out[i]
		}
	}
	longest := len(out)
	if longest == 0 {
		if _, found, err := tx.Get(tx.Table(), tx.Key()); err != nil {
			return engine.Result{}, err
		} else if found {
			tx.Delete(tx.Table(), tx.Key())
		}
	} else {
		tx.Put(tx.Table(), tx.Key(), engine.Item{Value: out})
	}
	return engine.Result{New: engine.Item{Value: num(int64(longest))}, NewFound: true}, nil
}

// Field is one BITFIELD operation: Op is "get", "set" or "incrby"; Signed and Width the type (i8, u16, ...);
// Offset in bits; Value the value to set or the increment; Overflow "wrap", "sat" or "fail".
type Field struct {
	Op       string
	Signed   bool
	Width    int
	Offset   int64
	Value    int64
	Overflow string
}

// BitField runs fields on the string at key, growing it as needed up to maxSize bytes; Members hold one result
// each (Item.Value the number, Flags 1 for a null after an overflow with FAIL). NewFound says what Redis counts
// as a change, for which it sends "setbit": a SET or INCRBY that did not fail and changed its field's value, or
// ran on a string the command made or grew.
func BitField(table string, key []byte, fields []Field, maxSize int) engine.Mutation {
	args := [][]byte{num(int64(maxSize))}
	for _, f := range fields {
		sign := "u"
		if f.Signed {
			sign = "i"
		}
		args = append(args, []byte(f.Op), []byte(sign+strconv.Itoa(f.Width)), num(f.Offset), num(f.Value), []byte(f.Overflow))
	}
	return engine.CallMutation(table, key, fnBitField, args...)
}

func bitField(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	maxSize, err := strconv.ParseInt(string(args[0]), 10, 64)
	if err != nil || (len(args)-1)%5 != 0 {
		return engine.Result{}, engine.ErrInvalid
	}
	it, found, err := readString(tx, tx.Table(), tx.Key())
	if errors.Is(err, engine.ErrWrongType) {
		return engine.Result{Err: err}, nil
	} else if err != nil {
		return engine.Result{}, err
	}
	v := append([]byte(nil), it.Value...)
	wrote, changed := false, false
	var res engine.Result
	for a := args[1:]; len(a) > 0; a = a[5:] {
		f := Field{Op: string(a[0]), Signed: a[1][0] == 'i', Overflow: string(a[4])}
		w, _ := strconv.Atoi(string(a[1][1:]))
		f.Width = w
		f.Offset, _ = strconv.ParseInt(string(a[2]), 10, 64)
		f.Value, _ = strconv.ParseInt(string(a[3]), 10, 64)
		if f.Op != "get" && (f.Offset+int64(f.Width)+7)/8 > maxSize {
			return engine.Result{Err: ErrBitOffset}, nil
		}
		if f.Op != "get" {
			if need := int((f.Offset + int64(f.Width) + 7) / 8); len(v) < need {
				v = append(v, make([]byte, need-len(v))...)
			}
		}
		cur := getField(v, f)
		out := engine.Member{Item: engine.Item{Value: num(cur)}}
		switch f.Op {
		case "set", "incrby":
			next, overflow := fit(f.Value, f)
			if f.Op == "incrby" {
				next, overflow = add(cur, f.Value, f)
			}
			if overflow && f.Overflow == "fail" {
				out.Item = engine.Item{Flags: 1}
				break
			}
			setField(v, f, next)
			wrote = true
			changed = changed || next != cur
			if f.Op == "incrby" {
				out.Item.Value = num(next)
			}
		}
		res.Members = append(res.Members, out)
	}
	// A write op made room for itself even if it then failed (OVERFLOW FAIL): Redis creates or pads the string.
	grown := len(v) > len(it.Value) || !found && len(v) > 0
	res.NewFound = changed || wrote && grown
	if wrote || grown {
		if !found {
			it = engine.Item{}
		}
		it.Value = v
		tx.Put(tx.Table(), tx.Key(), it)
	}
	return res, nil
}

// getField reads the integer of f's type at f.Offset (bits past the value are 0).
func getField(v []byte, f Field) int64 {
	var u uint64
	for i := 0; i < f.Width; i++ {
		u = u<<1 | uint64(GetBit(v, f.Offset+int64(i)))
	}
	if f.Signed && f.Width < 64 && u&(1<<(f.Width-1)) != 0 {
		u |= ^uint64(0) << f.Width
	}
	return int64(u)
}

func setField(v []byte, f Field, n int64) {
	u := uint64(n)
	for i := 0; i < f.Width; i++ {
		bit := u >> (f.Width - 1 - i) & 1
		off := f.Offset + int64(i)
		mask := byte(0x80) >> (off % 8)
		if bit == 1 {
			v[off/8] |= mask
		} else {
			v[off/8] &^= mask
		}
	}
}

// limits are the smallest and largest value of f's type.
func limits(f Field) (lo, hi int64, ulo, uhi uint64) {
	if f.Signed {
		if f.Width == 64 {
			return -1 << 63, 1<<63 - 1, 0, 0
		}
		return -1 << (f.Width - 1), 1<<(f.Width-1) - 1, 0, 0
	}
	if f.Width == 64 {
		return 0, 0, 0, ^uint64(0)
	}
	return 0, 0, 0, 1<<f.Width - 1
}

// fit brings n into f's type by its overflow rule, and reports whether it overflowed.
func fit(n int64, f Field) (int64, bool) {
	lo, hi, _, uhi := limits(f)
	if f.Signed {
		if n >= lo && n <= hi {
			return n, false
		}
		switch f.Overflow {
		case "sat":
			if n > hi {
				return hi, true
			}
			return lo, true
		}
		shift := 64 - f.Width
		return n << shift >> shift, true // wrap: keep the low bits, sign-extended
	}
	if uint64(n) <= uhi { // a negative value reads as the unsigned integer of its bits, as in Redis: too big
		return n, false
	}
	if f.Overflow == "sat" {
		return int64(uhi), true
	}
	return int64(uint64(n) & uhi), true
}

// add adds delta to cur in f's type, by its overflow rule.
func add(cur, delta int64, f Field) (int64, bool) {
	if f.Signed {
		sum := cur + delta
		lo, hi, _, _ := limits(f)
		if (delta > 0 && cur > hi-delta) || (delta < 0 && cur < lo-delta) || sum < lo || sum > hi {
			switch f.Overflow {
			case "sat":
				if delta > 0 {
					return hi, true
				}
				return lo, true
			}
			shift := 64 - f.Width
			return (cur + delta) << shift >> shift, true
		}
		return sum, false
	}
	_, _, _, uhi := limits(f)
	u := uint64(cur) + uint64(delta)
	if delta >= 0 && (u > uhi || u < uint64(cur)) || delta < 0 && uint64(-delta) > uint64(cur) {
		switch f.Overflow {
		case "sat":
			if delta > 0 {
				return int64(uhi), true
			}
			return 0, true
		}
		return int64(u & uhi), true
	}
	return int64(u), false
}
