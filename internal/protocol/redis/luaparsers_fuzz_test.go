package redis

import (
	"context"
	"errors"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// Fuzz targets for the parsers of client-controlled text that scripts call: cjson.decode (luacjson.go),
// cmsgpack.unpack (cmsgpack.go), tonumber (gopher-lua's str2d) and string.format (gopher-lua's strFormat).
// Each runs its calls on an interpreter as a script gets one (newLuaVM, prepare) and fails on a Go panic inside
// a library function, on an error that is not the library's own, and on a broken round trip.

// luaFuzzRun runs code on vm with KEYS = keys and returns what it returns, or its error message (without the
// chunk's position); a Go runtime error inside it (an ApiErrorPanic) fails t.
func luaFuzzRun(t *testing.T, vm *luaVM, code string, keys ...string) ([]lua.LValue, string) {
	t.Helper()
	L := vm.L
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	vm.globals.RawSetString("KEYS", vm.strings(bs))
	top := L.GetTop()
	err := L.DoString(code)
	if err != nil {
		var ae *lua.ApiError
		if !errors.As(err, &ae) || ae.Type != lua.ApiErrorRun {
			t.Fatalf("%s with %s: not a Lua error: %v", code, short(keys...), err)
		}
		L.SetTop(top)
		return nil, luaPosition.ReplaceAllString(ae.Object.String(), "")
	}
	rets := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		rets = append(rets, L.Get(i))
	}
	L.SetTop(top)
	return rets, ""
}

// short quotes the strings ss, each cut to 100 bytes, for a failure's message.
func short(ss ...string) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(s) > 100 {
			b.WriteString(strconv.Quote(s[:100]) + "... (" + strconv.Itoa(len(s)) + " bytes)")
		} else {
			b.WriteString(strconv.Quote(s))
		}
	}
	return b.String()
}

// checkCounted runs call, which calls a decoder on vm, and fails t if it allocated more than twice what it counted
// against the script's memory limit (luaLimits.mem), and 1 MiB: the limit is checked as that count grows.
func checkCounted(t *testing.T, vm *luaVM, what string, call func()) {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc, counted := ms.TotalAlloc, vm.lim.built
	call()
	runtime.ReadMemStats(&ms)
	if alloc, counted = ms.TotalAlloc-alloc, vm.lim.built-counted; alloc > 1<<20+2*uint64(counted) {
		t.Fatalf("%s allocated %d bytes, counted %d against the memory limit", what, alloc, counted)
	}
}

// luaPosition is the position Lua puts before an error raised in a chunk (DoString's are named <string>).
var luaPosition = regexp.MustCompile(`^<string>:\d+: `)

// newFuzzVM is an interpreter prepared for a script whose strings may be maxValue bytes long.
func newFuzzVM(maxValue int) *luaVM {
	vm := newLuaVM()
	vm.prepare(context.Background(), maxValue, nil, nil, nil, false)
	return vm
}

// luaEqual compares two Lua values deeply: tables by their keys and values (only the count of keys that are
// tables), numbers as numbers (NaN equal to NaN), through at most depth tables.
func luaEqual(a, b lua.LValue, depth int) bool {
	switch a := a.(type) {
	case lua.LNumber:
		bn, ok := b.(lua.LNumber)
		return ok && (a == bn || a != a && bn != bn)
	case *lua.LTable:
		bt, ok := b.(*lua.LTable)
		if !ok || depth == 0 {
			return false
		}
		n, equal := 0, true
		a.ForEach(func(k, v lua.LValue) {
			n++
			_, tableKey := k.(*lua.LTable) // another table in b: not compared
			equal = equal && (tableKey || luaEqual(v, bt.RawGet(k), depth-1))
		})
		m := 0
		bt.ForEach(func(lua.LValue, lua.LValue) { m++ })
		return equal && n == m
	}
	return a == b
}

// cjsonErrors are the errors cjson.decode raises: Lua CJSON's, and the limits' (lua_limits.go).
var cjsonErrors = regexp.MustCompile(`^(Expected (value|object key string|colon|comma or object end|comma or array end|the end) ` +
	`but found (T_[A-Z_]+|invalid token|invalid number|unexpected end of string|invalid escape code|invalid unicode escape code) at character \d+` +
	`|Found too many nested data structures \(\d+\) at character \d+|JSON parser does not support UTF-16 or UTF-32)$`)

// FuzzCJSON: cjson.decode of any text answers a value or one of Lua CJSON's errors, allocating about what it
// counts against the memory limit; what it decodes encodes
// (unless it holds NaN or an infinity, which encode refuses by default) to a text that decodes to the same value,
// numbers to the 14 digits encode writes, and encodes to the same text again (encode sorts objects' keys).
func FuzzCJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5,-3e2,true,false,null],"b":{"c":"d\u00e9\n\/"}}`, `[1,null,3]`, `[]`, `{}`, `""`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00\ud83d"`, `"\u12"`, `"\x"`, `"abc`, `01`, `0x10`, `+5`, `-`, `.5`, `nan`, `-Infinity`, `1e400`,
		`[1]x`, "[1]\x00garbage", "\x00a", `{"a":1,}`, `[1,]`, `{1:2}`, `{"a" 1}`, `[1 2]`, ` `, `{`, `"\u0000"`, `tru`,
		`[1.0e2, -2.5E-1]`, `123456789012345678`, `{"1":"a","2":"b"}`, `[[1,[2]],{"b":[false]}]`, "\"\x01\x7f\"",
		`{"a":{"a":{"a":{}}}}`, `0.1234567890123456789`, `-0`, `[1e-320, 5e-324, 1.7976931348623157e308]`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001), strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001),
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vm := newFuzzVM(1 << 20)
		defer vm.release(false)
		var rets []lua.LValue
		var msg string
		checkCounted(t, vm, "decode", func() { rets, msg = luaFuzzRun(t, vm, "return cjson.decode(KEYS[1])", s) })
		if msg != "" {
			if !cjsonErrors.MatchString(msg) {
				t.Fatalf("decode(%s): error %q is not Lua CJSON's", short(s), msg)
			}
			return
		}
		v := rets[0]
		rets, msg = luaFuzzRun(t, vm, "local s = cjson.encode(cjson.decode(KEYS[1])) return s, cjson.decode(s), cjson.encode(cjson.decode(s))", s)
		if msg != "" {
			if msg != "Cannot serialise number: must not be NaN or Inf" || !hasNonFinite(v, 1001) {
				t.Fatalf("encode(decode(%s)): %s", short(s), msg)
			}
			return
		}
		if !luaEqual(rounded(vm.L, v, 1001), rets[1], 1001) {
			t.Fatalf("decode(%s) does not decode again from its encoding %s", short(s), short(rets[0].String()))
		}
		if rets[0] != rets[2] {
			t.Fatalf("decode(%s) encodes as %s, and once more as %s", short(s), short(rets[0].String()), short(rets[2].String()))
		}
	})
}

// hasNonFinite reports whether v holds a NaN or an infinity.
func hasNonFinite(v lua.LValue, depth int) bool {
	switch v := v.(type) {
	case lua.LNumber:
		return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)
	case *lua.LTable:
		found := false
		v.ForEach(func(_, e lua.LValue) { found = found || depth > 0 && hasNonFinite(e, depth-1) })
		return found
	}
	return false
}

// rounded is a copy of v with its numbers as cjson.encode writes them (%.14g) and read again.
func rounded(L *lua.LState, v lua.LValue, depth int) lua.LValue {
	switch v := v.(type) {
	case lua.LNumber:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', 14, 64), 64)
		return lua.LNumber(f)
	case *lua.LTable:
		c := L.NewTable()
		if depth > 0 {
			v.ForEach(func(k, e lua.LValue) { c.RawSet(k, rounded(L, e, depth-1)) })
		}
		return c
	}
	return v
}

// cmsgpackErrors are the errors cmsgpack.unpack raises: lua-cmsgpack's, Lua's for a key Lua refuses, and Lua's
// C stack limit.
var cmsgpackErrors = regexp.MustCompile(`^(Missing bytes in input\.|Bad data format in input\.|table index is nil|` +
	`table index is NaN|stack overflow \((too many return values at once; use unpack_one or unpack_limit instead\.|` +
	`in function mp_decode_to_lua_array)\))$`)

// FuzzCMsgpack: cmsgpack.unpack of any bytes answers values or one of lua-cmsgpack's errors, allocating about
// what it counts against the memory limit (in proportion to its input, however many elements a header claims); unpack_one from offset to offset answers the
// same values; and the values, packed again, unpack to equal values (tables nested deeper than pack keeps, and
// tables as keys, aside).
func FuzzCMsgpack(f *testing.F) {
	for _, s := range []string{
		"\x93\x01\x02\x03", "\xd9\x03abc", "\xcf\x00\x00\x00\x01\x00\x00\x00\x00", "\xd3\xff\xff\xff\xff\xff\xff\xff\xfe",
		"\xca\x3f\xc0\x00\x00", "\xde\x00\x02\xa1a\x01\xa1b\xc0", "\xc4\x01a", "\xd4\x00\x00", "\x92\x01", "\x81\xc0\x01",
		"\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01", "\xdd\xff\xff\xff\xff\x01", "\xdf\xff\xff\xff\xff\x01\x02",
		"\xdb\xff\xff\xff\xff", "\xdc\x00\x10\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10",
		"\x01\xc3\xc2\xc0\xa0\x90\x80\xe0\xff\x7f", "\x82\x01\x01\x03\x03", "\x81\x91\x01\x02", "\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00",
		strings.Repeat("\x91", 17) + "\x01", strings.Repeat("\x91", 4000) + "\x01", strings.Repeat("\x81", 8000) + "\x01",
		strings.Repeat("\x01", 8000), "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vm := newFuzzVM(1 << 20)
		defer vm.release(false)
		var vals []lua.LValue
		var msg string
		checkCounted(t, vm, "unpack", func() { vals, msg = luaFuzzRun(t, vm, "return cmsgpack.unpack(KEYS[1])", string(b)) })
		if msg != "" {
			if !cmsgpackErrors.MatchString(msg) {
				t.Fatalf("unpack(%s): error %q is not lua-cmsgpack's", short(string(b)), msg)
			}
			return
		}
		// unpack_one, offset by offset: the values, and their count.
		rets, msg := luaFuzzRun(t, vm, `local function one(off, ...) return off, select('#', ...), ... end
			local vals, n, off, k, v = {}, 0, 0 while off ~= -1 and n <= tonumber(KEYS[2]) do
			off, k, v = one(cmsgpack.unpack_one(KEYS[1], off)) if k > 0 then n = n + 1 vals[n] = v end end
			return vals, n`, string(b), strconv.Itoa(len(vals)))
		if msg != "" || rets[1] != lua.LNumber(len(vals)) {
			t.Fatalf("unpack(%s) answered %d values, unpack_one %v: %s", short(string(b)), len(vals), rets, msg)
		}
		for i := range vals {
			if !luaEqual(vals[i], rets[0].(*lua.LTable).RawGetInt(i+1), 1<<20) {
				t.Fatalf("unpack(%s): value %d differs from unpack_one's", short(string(b)), i+1)
			}
		}
		if len(vals) == 0 {
			return
		}
		args := vm.L.NewTable()
		for i, v := range vals {
			if !packable(v, cmsgpackMaxNesting) {
				return
			}
			args.RawSetInt(i+1, v)
		}
		vm.globals.RawSetString("V", args)
		again, msg := luaFuzzRun(t, vm, "local s = {} for i = 1, tonumber(KEYS[1]) do s[i] = cmsgpack.pack(V[i]) end "+
			"return cmsgpack.unpack(table.concat(s))", strconv.Itoa(len(vals)))
		vm.globals.RawSetString("V", lua.LNil)
		if msg != "" || len(again) != len(vals) {
			t.Fatalf("unpack(pack(unpack(%s))): %d values, %s", short(string(b)), len(again), msg)
		}
		for i := range vals {
			if !luaEqual(vals[i], again[i], 1<<20) {
				t.Fatalf("unpack(pack(unpack(%s))): value %d differs", short(string(b)), i+1)
			}
		}
	})
}

// packable reports whether cmsgpack.pack writes v whole, so that it unpacks equal: no tables nested deeper than
// levels, none as a key.
func packable(v lua.LValue, levels int) bool {
	t, ok := v.(*lua.LTable)
	if !ok {
		return true
	}
	if levels == 0 {
		return false
	}
	good := true
	t.ForEach(func(k, e lua.LValue) {
		_, keyTable := k.(*lua.LTable)
		good = good && !keyTable && packable(e, levels-1)
	})
	return good
}
