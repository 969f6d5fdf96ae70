package redis

import (
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// cjson's settings (Lua CJSON 2.1's functions, as Redis 7.0 has them): encode_max_depth, decode_max_depth,
// encode_number_precision, encode_invalid_numbers, decode_invalid_numbers, encode_keep_buffer and
// encode_sparse_array. Redis keeps them in its one Lua state, from one script to the next; here a setting lasts
// for the script that makes it (luaLimits.init resets them): an interpreter serves every client's scripts in
// turn, and one client's settings must not reach another's scripts.

// cjsonConfig holds the settings; an enum setting is the index of its option: 0 off, 1 on (2: null).
type cjsonConfig struct {
	encodeMaxDepth, decodeMaxDepth, precision int
	encodeInvalid, decodeInvalid, keepBuffer  int
}

var cjsonDefaults = cjsonConfig{encodeMaxDepth: 1000, decodeMaxDepth: 1000, precision: 14, decodeInvalid: 1, keepBuffer: 1}

// openCJSONSettings installs the settings functions in t, the cjson table; they read and set *cfg.
func openCJSONSettings(L *lua.LState, t *lua.LTable, cfg *cjsonConfig) {
	integer := func(setting *int, max int) lua.LGFunction { // json_integer_option
		return func(L *lua.LState) int {
			if L.Get(1) != lua.LNil {
				v := L.CheckInt(1)
				if v < 1 || v > max {
					L.ArgError(1, "expected integer between 1 and "+strconv.Itoa(max))
				}
				*setting = v
			}
			L.Push(lua.LNumber(*setting))
			return 1
		}
	}
	enum := func(setting *int, options ...string) lua.LGFunction { // json_enum_option
		return func(L *lua.LState) int {
			switch v := L.Get(1).(type) {
			case *lua.LNilType:
			case lua.LBool:
				*setting = 0
				if v {
					*setting = 1
				}
			default:
				s, ok := v.(lua.LString)
				found := false
				for i, o := range options {
					if ok && string(s) == o {
						*setting, found = i, true
					}
				}
				if !found {
					L.ArgError(1, "invalid option '"+lua.LVAsString(v)+"'")
				}
			}
			if *setting <= 1 {
				L.Push(lua.LBool(*setting == 1))
			} else {
				L.Push(lua.LString(options[*setting]))
			}
			return 1
		}
	}
	t.RawSetString("encode_max_depth", L.NewFunction(integer(&cfg.encodeMaxDepth, math.MaxInt32)))
	t.RawSetString("decode_max_depth", L.NewFunction(integer(&cfg.decodeMaxDepth, math.MaxInt32)))
	t.RawSetString("encode_number_precision", L.NewFunction(integer(&cfg.precision, 14)))
	t.RawSetString("encode_invalid_numbers", L.NewFunction(enum(&cfg.encodeInvalid, "off", "on", "null")))
	t.RawSetString("decode_invalid_numbers", L.NewFunction(enum(&cfg.decodeInvalid, "off", "on")))
	t.RawSetString("encode_keep_buffer", L.NewFunction(enum(&cfg.keepBuffer, "off", "on")))
	t.RawSetString("encode_sparse_array", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LFalse) // arrays are written as anykv writes them: the settings are not kept
		L.Push(lua.LNumber(2))
		L.Push(lua.LNumber(10))
		return 3
	}))
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
}

// appendJSONString appends s quoted as Lua CJSON quotes it: '"', '\\' and '/' after a backslash, the control
// characters and DEL as \b \f \n \r \t or \u00XX, every other byte as it is (UTF-8 or not).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '/':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 || c == 0x7f {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
