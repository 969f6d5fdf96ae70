package redis

import (
	"bytes"
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openStruct installs Redis's `struct` library (Roberto Ierusalimschy's lua-struct, as Redis ships it):
// struct.pack, struct.unpack and struct.size convert between Lua values and binary strings. Redisson's scripts
// for RMapCache, RDelayedQueue, RRateLimiter and RTimeSeries pack their entries with it.
//
// A format is a sequence of options: '<' '>' '=' set little, big or native (little) endianness, "!n" the
// alignment (a power of 2, default the largest option, 8), ' ' is ignored; b/B h/H l/L T are signed/unsigned
// integers of 1, 2, 8 and 8 bytes, i/I followed by an optional size n (1 to 32, default 4), f and d a float and a
// double, x a padding byte, cn a string of n bytes (c0: the whole string when packing, the length read just
// before when unpacking), s a zero-terminated string. Options are aligned to min(size, alignment), which is 1
// until a '!' says otherwise.
func openStruct(L *lua.LState, lim *luaLimits) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int { return structPack(L, lim) }))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	L.SetGlobal("struct", t)
}

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

// structFormat walks a format string: its position, endianness and alignment.
type structFormat struct {
	L      *lua.LState
	fmt    string
	i      int
	big    bool
	align  int
	argPos int // the format's argument number, for errors
}

func newStructFormat(L *lua.LState) *structFormat {
	return &structFormat{L: L, fmt: L.CheckString(1), align: 1, argPos: 1}
}

// num reads the digits at the current position, def when there are none.
func (f *structFormat) num(def int) int {
	if f.i >= len(f.fmt) || f.fmt[f.i] < '0' || f.fmt[f.i] > '9' {
		return def
	}
	a := 0
	for f.i < len(f.fmt) && f.fmt[f.i] >= '0' && f.fmt[f.i] <= '9' {
		d := int(f.fmt[f.i] - '0')
		if a > (math.MaxInt32-d)/10 {
			f.L.RaiseError("integral size overflow")
		}
		a = a*10 + d
		f.i++
	}
	return a
}

// size is the size of option opt (reading its number, for c, i and I); 0 for the control options and s.
func (f *structFormat) size(opt byte) int {
	switch opt {
	case 'B', 'b', 'x':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'c':
		return f.num(1)
	case 'i', 'I':
		sz := f.num(4)
		if sz > structMaxIntSize {
			f.L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// next reads the next option and its size, and returns them with the padding it takes at offset n.
func (f *structFormat) next(n int) (opt byte, size, pad int) {
	opt = f.fmt[f.i]
	f.i++
	size = f.size(opt)
	return opt, size, f.toAlign(n, opt, size)
}

// toAlign is the padding before an option of size at offset n.
func (f *structFormat) toAlign(n int, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	size = min(size, f.align)
	return (size - (n & (size - 1))) & (size - 1)
}

// control applies a control option, raising Lua's error for an unknown one.
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		f.big = true
	case '<', '=':
		f.big = false
	case '!':
		a := f.num(structMaxAlign)
		if a == 0 || a&(a-1) != 0 {
			f.L.RaiseError("alignment %d is not a power of 2", a) // luaL_error's, not a bad argument's
		}
		f.align = a
	default:
		f.L.ArgError(f.argPos, "invalid format option '"+string(opt)+"'")
	}
}

// structPack is struct.pack, its result bounded by lim as any string a call builds (luaLimits.alloc): its
// strings ('c', 's') are checked before they are copied in, since a call of 8,000 of them, each 64 MiB, would
// build 512 GB (600 MB took the process to 2.9 GB before).
func structPack(L *lua.LState, lim *luaLimits) int {
	f := newStructFormat(L)
	var b []byte
	arg := 2
	for f.i < len(f.fmt) {
		opt, size, pad := f.next(len(b))
		b = append(b, make([]byte, pad)...)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			b = appendStructInt(b, v, size, f.big)
		case 'x':
			b = append(b, 0)
		case 'f':
			b = appendStructBytes(b, binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(L.CheckNumber(arg)))), f.big)
			arg++
		case 'd':
			b = appendStructBytes(b, binary.LittleEndian.AppendUint64(nil, math.Float64bits(float64(L.CheckNumber(arg)))), f.big)
			arg++
		case 'c', 's':
			s := L.CheckString(arg)
			arg++ // lua-struct names the argument after the string in its error
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.ArgError(arg, "string too short")
			}
			if len(b)+size+1 > lim.maxString {
				lim.alloc(L, -1) // raises "string too large"
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
			}
		default:
			f.control(opt)
		}
	}
	lim.alloc(L, len(b)) // counted (and, past the limit with many small options, refused)
	L.Push(lua.LString(b))
	return 1
}

// appendStructInt appends the size low bytes of v (zeros past its eight) in the order big says.
func appendStructInt(b []byte, v uint64, size int, big bool) []byte {
	start := len(b)
	for i := 0; i < size; i++ {
		b = append(b, byte(v))
		v >>= 8
	}
	if big {
		reverseBytes(b[start:])
	}
	return b
}

// appendStructBytes appends the little-endian bytes le in the order big says.
func appendStructBytes(b, le []byte, big bool) []byte {
	start := len(b)
	b = append(b, le...)
	if big {
		reverseBytes(b[start:])
	}
	return b
}

func reverseBytes(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

func structUnpack(L *lua.LState) int {
	f := newStructFormat(L)
	data := L.CheckString(2)
	ld := len(data)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 {
		L.ArgError(3, "offset must be 1 or greater")
	}
	n := 0
	for f.i < len(f.fmt) {
		opt, size, pad := f.next(pos)
		pos += pad
		if size > ld || pos > ld-size {
			L.ArgError(2, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			L.Push(lua.LNumber(structInt([]byte(data[pos:pos+size]), f.big, opt >= 'a')))
			n++
		case 'x':
		case 'f', 'd':
			le := []byte(data[pos : pos+size])
			if f.big {
				reverseBytes(le)
			}
			if opt == 'f' {
				L.Push(lua.LNumber(math.Float32frombits(binary.LittleEndian.Uint32(le))))
			} else {
				L.Push(lua.LNumber(math.Float64frombits(binary.LittleEndian.Uint64(le))))
			}
			n++
		case 'c':
			if size == 0 {
				prev, ok := L.Get(-1).(lua.LNumber)
				if n == 0 || !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				L.Pop(1)
				n--
				size = int(prev)
				if size < 0 || size > ld || pos > ld-size {
					L.ArgError(2, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := bytes.IndexByte([]byte(data[pos:]), 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e + 1
			L.Push(lua.LString(data[pos : pos+e]))
			n++
		default:
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1)) // where the next value starts
	return n + 1
}

// structInt reads an integer of len(b) bytes, sign-extended when signed, as lua-struct's getinteger.
func structInt(b []byte, big, signed bool) float64 {
	var l uint64
	if big {
		for _, c := range b {
			l = l<<8 | uint64(c)
		}
	} else {
		for i := len(b) - 1; i >= 0; i-- {
			l = l<<8 | uint64(b[i])
		}
	}
	if !signed {
		return float64(l)
	}
	if bits := uint(len(b)*8 - 1); bits < 64 {
		if mask := ^uint64(0) << bits; l&mask != 0 {
			l |= mask
		}
	}
	return float64(int64(l))
}

func structSize(L *lua.LState) int {
	f := newStructFormat(L)
	pos := 0
	for f.i < len(f.fmt) {
		opt, size, pad := f.next(pos)
		pos += pad
		switch {
		case opt == 's':
			L.ArgError(1, "option 's' has no fixed size")
		case opt == 'c' && size == 0:
			L.ArgError(1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
