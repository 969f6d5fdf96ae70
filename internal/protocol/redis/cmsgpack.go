package redis

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack: the MessagePack library Redis gives scripts (lua-cmsgpack, as bundled with Redis 7), because job
// queues such as BullMQ pass their arguments msgpacked (cmsgpack.unpack(ARGV[1])). It encodes and decodes as
// Redis's copy does on Lua 5.1, where every number is a double:
//
//   - pack(v, ...) encodes each argument and concatenates them. A number that is an integer (it fits an int64)
//     takes the smallest integer form, any other number a float32 when that is exact, else a float64; a string
//     is a str (fixstr, str8, str16, str32); a table whose keys are exactly 1..n is an array (an empty table is
//     an empty array), any other a map in the table's iteration order; tables nested deeper than 16 and
//     values of other types (functions, nil) are nil.
//   - unpack(s) returns every object of s, one value each; unpack_one(s[, offset]) and unpack_limit(s, limit[,
//     offset]) return the offset to continue from (-1 at the end) then the objects. Integers (a uint 64 read as
//     a signed one, as Redis reads it: 2^64-1 is -1), floats, nil,
//     booleans, str and the array and map forms decode; bin and ext (which lua-cmsgpack does not know) are
//     "Bad data format in input.", a truncated object "Missing bytes in input.". Lua's C stack bounds what one
//     call answers and how deep it nests, as luaL_checkstack bounds lua-cmsgpack's: 7,999 values, 3,999 nested
//     arrays, then "stack overflow (...)" (msgpackDecoder.slots).

// cmsgpackMaxNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper tables are encoded as nil.
const cmsgpackMaxNesting = 16

// openCMsgpack installs the cmsgpack global.
func openCMsgpack(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.ArgError(0, "MessagePack pack needs input.")
		}
		var buf []byte
		for i := 1; i <= n; i++ {
			buf = msgpackEncode(buf, L.Get(i), 0)
		}
		L.Push(lua.LString(buf))
		return 1
	}))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckString(1), 0, 0, L.GetTop())
	}))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckString(1), 1, L.OptInt64(2, 0), 1)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckString(1), L.CheckInt64(2), L.OptInt64(3, 0), 1)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	L.SetGlobal("cmsgpack", t)
}

// msgpackEncode appends v's encoding; level is the table nesting so far.
func msgpackEncode(buf []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return msgpackStr(buf, string(v))
	case lua.LBool:
		if v {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if !math.IsInf(f, 0) && f >= -(1<<63) && f < 1<<63 && f == math.Trunc(f) {
			return msgpackInt(buf, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(buf, 0xca), math.Float32bits(f32))
		}
		return binary.BigEndian.AppendUint64(append(buf, 0xcb), math.Float64bits(f))
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			break
		}
		if n, ok := msgpackArrayLen(v); ok {
			buf = msgpackHeader(buf, 0x90, 0xdc, 0xdd, n)
			for i := 1; i <= n; i++ {
				buf = msgpackEncode(buf, v.RawGetInt(i), level+1)
			}
			return buf
		}
		n := 0
		for k, _ := v.Next(lua.LNil); k != lua.LNil; k, _ = v.Next(k) {
			n++
		}
		buf = msgpackHeader(buf, 0x80, 0xde, 0xdf, n)
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			buf = msgpackEncode(buf, k, level+1)
			buf = msgpackEncode(buf, val, level+1)
		}
		return buf
	}
	return append(buf, 0xc0)
}

// msgpackArrayLen reports whether t's keys are exactly the integers 1..n (lua-cmsgpack's table_is_an_array),
// and n.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, maxKey := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(n) != math.Trunc(float64(n)) || n > math.MaxInt32 {
			return 0, false
		}
		maxKey = max(maxKey, int(n))
		count++
	}
	return count, maxKey == count
}

func msgpackStr(buf []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		buf = append(buf, 0xa0|byte(n))
	case n <= 0xff:
		buf = append(buf, 0xd9, byte(n))
	case n <= 0xffff:
		buf = binary.BigEndian.AppendUint16(append(buf, 0xda), uint16(n))
	default:
		buf = binary.BigEndian.AppendUint32(append(buf, 0xdb), uint32(n))
	}
	return append(buf, s...)
}

// msgpackHeader appends an array or map header: the fix form (fix|n) up to 15, then the 16- and 32-bit forms.
func msgpackHeader(buf []byte, fix, b16, b32 byte, n int) []byte {
	switch {
	case n <= 15:
		return append(buf, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(buf, b32), uint32(n))
}

func msgpackInt(buf []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(buf, byte(n))
	case n >= 0 && n <= 0xff:
		return append(buf, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(buf, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(buf, 0xcf), uint64(n))
	case n >= -32:
		return append(buf, byte(n))
	case n >= -128:
		return append(buf, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(buf, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(buf, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xd3), uint64(n))
}

// msgpackUnpack pushes the objects of s from offset, at most limit of them (0 with offset 0: all, as unpack),
// preceded for unpack_one/unpack_limit by the offset after them (-1 when s is used up). It returns the count
// pushed. args is the arguments lua-cmsgpack leaves on the Lua stack (unpack: all; the others pop all but s).
func msgpackUnpack(L *lua.LState, s string, limit, offset int64, args int) int {
	all := limit == 0 && offset == 0
	switch {
	case offset < 0 || limit < 0:
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	case offset > int64(len(s)):
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	d := msgpackDecoder{L: L, s: s, pos: int(offset), slots: args}
	var vals []lua.LValue
	for d.pos < len(s) && (all || int64(len(vals)) < limit) {
		v := d.decode()
		switch d.err {
		case errMsgpackEOF:
			L.RaiseError("Missing bytes in input.")
		case errMsgpackFormat:
			L.RaiseError("Bad data format in input.")
		}
		vals = append(vals, v)
		d.slots++
	}
	if !all {
		d.checkStack("in function mp_unpack_full")
		next := lua.LNumber(d.pos)
		if d.pos == len(s) {
			next = -1
		}
		L.Push(next)
	}
	for _, v := range vals {
		L.Push(v)
	}
	if all {
		return len(vals)
	}
	return len(vals) + 1
}

const (
	errMsgpackEOF    = 1
	errMsgpackFormat = 2
)

// msgpackDecoder reads objects from s at pos; err is set (and the value meaningless) on a failure. slots counts
// the Lua stack slots lua-cmsgpack's C would hold at this point (the arguments, the values decoded, a table and
// an index or key for each level), which bound its output and its nesting as luaL_checkstack bounds them.
type msgpackDecoder struct {
	L     *lua.LState
	s     string
	pos   int
	err   int
	slots int
}

// checkStack is luaL_checkstack(L, 1, why): one more slot must fit Lua's C stack (luaCStack), else an error.
// Redis's Lua answers 7,999 values at most from one unpack, and 3,999 nested arrays.
func (d *msgpackDecoder) checkStack(why string) {
	if d.slots+1 > luaCStack {
		d.L.RaiseError("stack overflow (%s)", why)
	}
}

// need reports whether n more bytes are there, setting err otherwise.
func (d *msgpackDecoder) need(n int) bool {
	if len(d.s)-d.pos < n {
		d.err = errMsgpackEOF
		return false
	}
	return true
}

// uint reads a big-endian unsigned integer of n bytes after the type byte, consuming both.
func (d *msgpackDecoder) uint(n int) (uint64, bool) {
	if !d.need(1 + n) {
		return 0, false
	}
	var u uint64
	for _, b := range []byte(d.s[d.pos+1 : d.pos+1+n]) {
		u = u<<8 | uint64(b)
	}
	d.pos += 1 + n
	return u, true
}

// str reads a string of length n at pos.
func (d *msgpackDecoder) str(n uint64) lua.LValue {
	if uint64(len(d.s)-d.pos) < n {
		d.err = errMsgpackEOF
		return lua.LNil
	}
	v := lua.LString(d.s[d.pos : d.pos+int(n)])
	d.pos += int(n)
	return v
}

// decode reads one object (mp_decode_to_lua_type); the caller counts the slot of the value it returns. The
// slots it counts bound its recursion too: each level holds one at least.
func (d *msgpackDecoder) decode() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	b := d.s[d.pos]
	sized := func(n int) uint64 { u, _ := d.uint(n); return u }
	switch {
	case b <= 0x7f: // positive fixint
		d.pos++
		return lua.LNumber(b)
	case b >= 0xe0: // negative fixint
		d.pos++
		return lua.LNumber(int8(b))
	case b&0xe0 == 0xa0: // fixstr
		d.pos++
		return d.str(uint64(b & 0x1f))
	case b&0xf0 == 0x90:
		d.pos++
		return d.array(uint64(b & 0x0f))
	case b&0xf0 == 0x80:
		d.pos++
		return d.table(uint64(b & 0x0f))
	}
	switch b {
	case 0xc0:
		d.pos++
		return lua.LNil
	case 0xc2, 0xc3:
		d.pos++
		return lua.LBool(b == 0xc3)
	case 0xcc, 0xcd, 0xce:
		return lua.LNumber(float64(sized(1 << (b - 0xcc))))
	case 0xcf: // lua_pushunsigned is lua_pushinteger on Lua 5.1: a signed long, so 2^64-1 is -1
		return lua.LNumber(float64(int64(sized(8))))
	case 0xd0:
		return lua.LNumber(int8(sized(1)))
	case 0xd1:
		return lua.LNumber(int16(sized(2)))
	case 0xd2:
		return lua.LNumber(int32(sized(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(sized(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(sized(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(sized(8)))
	case 0xd9, 0xda, 0xdb:
		n, ok := d.uint(1 << (b - 0xd9))
		if !ok {
			return lua.LNil
		}
		return d.str(n)
	case 0xdc, 0xdd:
		n, ok := d.uint(2 << (b - 0xdc))
		if !ok {
			return lua.LNil
		}
		return d.array(n)
	case 0xde, 0xdf:
		n, ok := d.uint(2 << (b - 0xde))
		if !ok {
			return lua.LNil
		}
		return d.table(n)
	}
	d.err = errMsgpackFormat
	return lua.LNil
}

// array is mp_decode_to_lua_array: the table, and an index while each element is read, hold a slot each.
func (d *msgpackDecoder) array(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.slots++
	d.checkStack("in function mp_decode_to_lua_array")
	for i := uint64(1); i <= n; i++ {
		d.slots++
		v := d.decode()
		if d.err != 0 {
			return lua.LNil
		}
		d.slots--
		t.RawSetInt(int(i), v)
	}
	d.slots--
	return t
}

// table is mp_decode_to_lua_hash: the table holds a slot, and a key while its value is read.
func (d *msgpackDecoder) table(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.slots++
	for ; n > 0; n-- {
		k := d.decode()
		if d.err != 0 {
			return lua.LNil
		}
		d.slots++
		v := d.decode()
		if d.err != 0 {
			return lua.LNil
		}
		d.slots--
		if k == lua.LNil {
			d.L.RaiseError("table index is nil")
		}
		if f, isNum := k.(lua.LNumber); isNum && f != f {
			d.L.RaiseError("table index is NaN")
		}
		d.L.RawSet(t, k, v)
	}
	d.slots--
	return t
}
