package redis

import (
	"math"
	"math/bits"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openBit installs Redis's `bit` library (LuaBitOp 1.0): bitwise operations on 32-bit integers. Bull's scripts
// use bit.band to build delayed jobs' scores. Every argument is normalized as LuaBitOp does (rounded to an
// integer, reduced modulo 2^32) and every result is a signed 32-bit number.
func openBit(L *lua.LState) {
	t := L.NewTable()
	unary := map[string]func(int32) int32{
		"tobit": func(x int32) int32 { return x },
		"bnot":  func(x int32) int32 { return ^x },
		"bswap": func(x int32) int32 { return int32(bits.ReverseBytes32(uint32(x))) },
	}
	for name, f := range unary {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			L.Push(lua.LNumber(f(checkBit(L, 1))))
			return 1
		}))
	}
	fold := map[string]func(a, b int32) int32{
		"band": func(a, b int32) int32 { return a & b },
		"bor":  func(a, b int32) int32 { return a | b },
		"bxor": func(a, b int32) int32 { return a ^ b },
	}
	for name, f := range fold {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			x := checkBit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				x = f(x, checkBit(L, i))
			}
			L.Push(lua.LNumber(x))
			return 1
		}))
	}
	shift := map[string]func(x int32, n uint) int32{
		"lshift":  func(x int32, n uint) int32 { return int32(uint32(x) << n) },
		"rshift":  func(x int32, n uint) int32 { return int32(uint32(x) >> n) },
		"arshift": func(x int32, n uint) int32 { return x >> n },
		"rol":     func(x int32, n uint) int32 { return int32(bits.RotateLeft32(uint32(x), int(n))) },
		"ror":     func(x int32, n uint) int32 { return int32(bits.RotateLeft32(uint32(x), -int(n))) },
	}
	for name, f := range shift {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			x := checkBit(L, 1)
			L.Push(lua.LNumber(f(x, uint(checkBit(L, 2))&31)))
			return 1
		}))
	}
	t.RawSetString("tohex", L.NewFunction(func(L *lua.LState) int {
		x, n := checkBit(L, 1), int32(8)
		if L.GetTop() >= 2 { // a nil is an error, as in LuaBitOp: only a missing argument means 8
			n = checkBit(L, 2)
		}
		upper := n < 0
		if upper {
			n = -max(n, math.MinInt32+1) // -MinInt32 overflows (Redis's fix of CVE-2024-31449 clamps it so)
		}
		n = min(n, 8)
		s := strconv.FormatUint(uint64(uint32(x)), 16)
		if len(s) < 8 {
			s = strings.Repeat("0", 8-len(s)) + s
		}
		s = s[8-n:]
		if upper {
			s = strings.ToUpper(s)
		}
		L.Push(lua.LString(s))
		return 1
	}))
	L.SetGlobal("bit", t)
}

// checkBit reads argument i as LuaBitOp's barg does: a number (or a string that reads as one) plus 2^52+2^51
// in double arithmetic, whose low 32 bits are the integer (rounded to even, modulo 2^32, for |x| < 2^51; what
// LuaBitOp gives for larger ones too).
func checkBit(L *lua.LState, i int) int32 {
	return int32(uint32(math.Float64bits(float64(L.CheckNumber(i)) + 6755399441055744.0)))
}
