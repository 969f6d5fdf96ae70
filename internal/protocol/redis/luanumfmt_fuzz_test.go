package redis

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// Fuzz targets for the vendored gopher-lua's readers and writers of numbers (third_party/gopher-lua is a module of
// its own without tests; its patches are tested here, on the interpreter scripts get).

// luaDecimal and luaHex are the numbers strconv.ParseFloat reads as C's strtod does (decimal; hexadecimal once
// given a binary exponent): for them tonumber must answer what ParseFloat does.
var (
	luaDecimal = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	luaHex     = regexp.MustCompile(`^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?$`)
	// luaNumberBytes are the bytes a number Lua reads can hold (digits, signs, points, exponents, hexadecimal
	// digits, inf, infinity, nan and nan(chars)), white space around it aside.
	luaNumberBytes = regexp.MustCompile(`^[0-9a-zA-Z.+\-()_]*$`)
)

// FuzzLuaToNumber: tonumber(s) (Lua 5.1's luaO_str2d, gopher-lua's str2d: glibc's strtod, then only white space)
// never fails; it reads the decimal and hexadecimal numbers strconv.ParseFloat reads, to the same double, with
// white space around and anything after a NUL ignored; it refuses an empty string, inner white space and bytes
// no number holds; arithmetic coerces s to the same number (or fails when tonumber answers nil); and the prefix
// StrToD reads of s is a number tonumber reads alike.
func FuzzLuaToNumber(f *testing.F) {
	for _, s := range []string{
		"1e3", "inf", "-Infinity", "1e400", "1e-400", "nan", "-nan", "nan(123abc)", "nan(", "0x10", "  0x1p4  ", "0x1.8p1",
		".5", "5.", "1e", "010", "0b1", "1_000", "0x", "+5", "+-5", "\t5\n", "5\x00", "5\x00x", "", " ", "\v\f1\r",
		"0x.8", "0x.", "0x1p", "0x1p-1074", "0x1p99999999999999999999", "-0", "-0x", "1e+5", "1 2", "infinit",
		"9007199254740993", "2.2250738585072011e-308", "0.1e-99999999999999999999", strings.Repeat("9", 400),
		"0x" + strings.Repeat("f", 300), "1." + strings.Repeat("0", 1000) + "1", "4.9406564584124654e-324",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vm := newFuzzVM(1 << 20)
		defer vm.release(false)
		rets, msg := luaFuzzRun(t, vm, "return tonumber(KEYS[1]), pcall(function() return KEYS[1] + 0 end)", s)
		if msg != "" || len(rets) != 3 {
			t.Fatalf("tonumber(%s): %v %s", short(s), rets, msg)
		}
		got, isNum := rets[0].(lua.LNumber)
		if !isNum && rets[0] != lua.LNil {
			t.Fatalf("tonumber(%s) = %v", short(s), rets[0])
		}
		if sum, ok := rets[2].(lua.LNumber); isNum != (rets[1] == lua.LTrue) || isNum && !ok ||
			isNum && sum != got+0 && !(got != got && sum != sum) {
			t.Fatalf("tonumber(%s) = %v, but %s + 0: %v %v", short(s), rets[0], short(s), rets[1], rets[2])
		}
		c := s
		if i := strings.IndexByte(c, 0); i >= 0 {
			c = c[:i]
		}
		text := strings.Trim(c, " \t\n\v\f\r")
		want, known := 0.0, false
		switch {
		case text == "", strings.ContainsAny(text, " \t\n\v\f\r"), !luaNumberBytes.MatchString(text):
			if isNum {
				t.Fatalf("tonumber(%s) = %v, want nil", short(s), got)
			}
		case luaDecimal.MatchString(text):
			want, known = parseFloat(text), true
		case luaHex.MatchString(text):
			if !strings.ContainsAny(text, "pP") {
				text += "p0"
			}
			want, known = parseFloat(text), true
		}
		if known && (!isNum || math.Float64bits(float64(got)) != math.Float64bits(want)) {
			t.Fatalf("tonumber(%s) = %v, want %v", short(s), rets[0], want)
		}
		if v, n := lua.StrToD(c); n > 0 {
			rets, _ := luaFuzzRun(t, vm, "return tonumber(KEYS[1])", c[:n])
			if p, ok := rets[0].(lua.LNumber); !ok || math.Float64bits(float64(p)) != math.Float64bits(v) && !(v != v && p != p) {
				t.Fatalf("StrToD(%s) read %d bytes as %v, which tonumber reads as %v", short(s), n, v, rets[0])
			}
		}
	})
}

// parseFloat is strconv.ParseFloat, out of range as strtod answers it (±Inf, or 0 and the smallest subnormals).
func parseFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// formatErrors are the errors string.format raises: Lua 5.1's, and the string limit's (lua_limits.go).
var formatErrors = regexp.MustCompile(`(?s)^(bad argument #\d+ to 'format' \((no value|number expected, got \w+|string expected, got \w+)\)` +
	`|invalid option '%.?' to 'format'|invalid format \((repeated flags|width or precision too long)\)` +
	`|string too large: a script may build at most \d+ bytes in one call)$`)

// FuzzLuaStringFormat: string.format (Lua 5.1's str_format, gopher-lua's strFormat) with any format and
// arguments answers a string no longer than the script's string limit or one of Lua's errors, never a Go panic;
// a format without a directive is itself.
func FuzzLuaStringFormat(f *testing.F) {
	for _, format := range []string{
		"%s", "%u", "%q", "%d", "%.2f", "%5.1f|%-5d|", "%g %g %g %g", "%#x %#X %#o %#x %#o", "%e %E", "%5s|%-5s|%.3s",
		"%c%c%5c|", "%i|%+d % d %+d", "%05.1f|%05d|%-05d|%05.3d|%.0d|", "%99.99f", "%-99.99e|%#99g", "%d %s", "%y", "%",
		"abc%", "%5%", "%123d", "%1.123d", "%------d", "%-----d|", "%q %%", "%.20f|%#.0f %#.0e", "% 08.2f|%+.3e|%-10.2e|",
		"%a", "%99c", "%.99s", "%99.99s%99.99s%99.99s", "%%%%%%", "no directive", "a\x00b%s", "%\x00", "%.s", "%#.0o",
		"%99.99f%99.99f%99.99f%99.99f",
	} {
		f.Add(format, "ab\x00c", 1e308, uint16(200))
	}
	f.Add("%s|%q", strings.Repeat("x", 150), -1.5, uint16(0))
	f.Add("%d %x %o %c", "12", math.Inf(-1), uint16(1000))
	f.Add("%f %g %e", "0x10", math.NaN(), uint16(60000))
	f.Add("%c|%5c|%#g|%#.3G", "", 4294967361.0, uint16(100))
	f.Add("%#.3g", "", 999.5, uint16(100))
	f.Fuzz(func(t *testing.T, format, s string, n float64, maxValue uint16) {
		vm := newFuzzVM(64 + int(maxValue))
		defer vm.release(false)
		vm.globals.RawSetString("N", lua.LNumber(n))
		defer vm.globals.RawSetString("N", lua.LNil)
		rets, msg := luaFuzzRun(t, vm, "return string.format(KEYS[1], N, KEYS[2], N, KEYS[2], N, KEYS[2], N, KEYS[2])", format, s)
		if msg != "" {
			if !formatErrors.MatchString(msg) {
				t.Fatalf("string.format(%s, %v, %s): error %q is not Lua's", short(format), n, short(s), msg)
			}
			return
		}
		out := string(rets[0].(lua.LString))
		if len(out) > vm.lim.maxString {
			t.Fatalf("string.format(%s, %v, %s) answered %d bytes, over the limit of %d", short(format), n, short(s), len(out), vm.lim.maxString)
		}
		if !strings.Contains(format, "%") && out != format {
			t.Fatalf("string.format(%s) = %s", short(format), short(out))
		}
	})
}
