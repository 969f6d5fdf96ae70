package redis

import (
	"strings"
	"testing"
)

// The script group of tests/difffuzz (gen.py's gen_script) found these: each test compares a few scripts' replies
// with redis-server's, byte for byte.

// sameScriptsAsRedis runs each script (no keys) with EVAL on one connection, on anykv and on redis-server, and
// compares the replies byte for byte.
func sameScriptsAsRedis(t *testing.T, scripts ...string) {
	t.Helper()
	cmds := make([][]string, len(scripts))
	for i, s := range scripts {
		cmds[i] = eval(s)
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, scriptSteps(cmds...)) })
}

// TestScriptToNumberMatchesRedis: tonumber and Lua's coercion of strings to numbers read them as Lua 5.1's
// luaO_str2d (C's strtod: exponents, inf, nan, hexadecimal, white space around, a NUL ending the string) and
// tonumber with a base as C's strtoul. tonumber('1e3') and tonumber('inf') were nil, 010 was 8, '0b1' and
// '1_000' were numbers (difffuzz, script group, seeds 0:100).
func TestScriptToNumberMatchesRedis(t *testing.T) {
	sameScriptsAsRedis(t,
		"return tonumber('1e3')", "return tostring(tonumber('inf'))", "return tostring(tonumber('-Infinity'))",
		"return tostring(tonumber('1e400'))", "return tostring(tonumber('1e-400'))", "return tostring(tonumber('nan'))",
		"return tonumber('0x10')", "return tonumber('  0x1p4  ')", "return tostring(tonumber('0x1.8p1'))",
		"return tonumber('.5') * 2", "return tonumber('5.')", "return tonumber('1e')", "return tonumber('010')",
		"return 010", "return tonumber('0b1')", "return tonumber('1_000')", "return tonumber('0x')",
		"return tonumber('+5')", "return tonumber('+-5')", "return tostring(tonumber('\\t5\\n'))",
		"return tostring(tonumber('5\\0'))", "return tostring(tonumber('5\\0x', 16))",
		"return tonumber('10', 2)", "return tonumber('z', 36)", "return tonumber('ff', 16)", "return tonumber('0x10', 16)",
		"return tostring(tonumber('-1', 16))", "return tonumber('0x', 16)", "return tonumber('8', 8)",
		"return tostring(tonumber('99999999999999999999999', 16))", "return tonumber(' 7 ', 8)",
		"return tonumber('1', 1)", "return tonumber('1', 37)", "return tonumber(nil)", "return tonumber()",
		"return '10' + 1", "return '0x10' + 1", "return ' 1e1 ' * 2", "return '1e' + 1", "return string.rep('a', '0x2')",
	)
}

// TestScriptStringFormatMatchesRedis: string.format is Lua 5.1's (C's printf of each directive's argument cast as
// Lua casts it, %q as Lua quotes, Lua's errors). It was Go's fmt.Sprintf: %s of nil answered "nil", %u
// "%!u(int64=42)", %q quoted as Go, and a missing argument was no error (difffuzz, script group, seeds 0:100).
func TestScriptStringFormatMatchesRedis(t *testing.T) {
	sameScriptsAsRedis(t,
		"return string.format('%s', ARGV[1])", "return string.format('%u', 42)",
		`return string.format('%q', 'a\0b\n"\r\\')`, "return string.format('%d', 3.7)", "return string.format('%.2f', 1/3)",
		"return string.format('%5.1f|%-5d|', 2.25, 7)", "return string.format('%g %g %g %g', 1e20, 0.1, 100000, 1e6)",
		"return string.format('%g %g %#g %.0g', 0.0001, 0.00001, 1, 123)", "return string.format('%10.3G|%.3g', 1e-10, 0.0001234)",
		"return string.format('%x %X %o', 255, 255, 8)", "return string.format('%#x %#X %#o %#x %#o', 255, 255, 8, 0, 0)",
		"return string.format('%e %E', 12345.678, 0)", "return string.format('%5s|%-5s|%.3s', 'ab', 'cd', 'abcdef')",
		"return string.format('%c%c%5c|', 72, 105, 65)", "return string.format('%c', 0) .. string.format('%c', 256) .. 'x'",
		"return string.format('%i|%+d % d %+d', -42, 5, 5, -5)", "return string.format('%05.1f|%05d|%-05d|%05.3d|%.0d|', -2.5, -42, 42, 7, 0)",
		"return string.format('%.14g|%d|%10.4f', 2^53, -0, math.pi)", "return string.format('%f %e %g|%5.1f|%-8e|%+g', 1/0, -1/0, 0/0, 1/0, -1/0, 1/0)",
		"return string.format('%d %d %d', 2^63, -2^63, 0/0)", "return string.format('%u %x %x %x %x', -1, -1, 2^63, 2^64, 0/0)",
		"return string.format('%d %s', '12', 1.5)", "return string.format('%d', 'x')", "return string.format('%d')",
		"return string.format('%s', nil)", "return string.format('%s', {})", "return string.format('%y', 1)",
		"return string.format('%', 1)", "return string.format('abc%')", "return string.format('%5%')",
		"return string.format('%123d', 1)", "return string.format('%1.123d', 1)", "return string.format('%------d', 1)",
		"return string.format('%-----d|', 1)", `return string.format('%s|%s', 'a\0b', string.rep('a', 100) .. '\0b')`,
		"return string.format('%q %%', 1.5)", "return string.format('%.20f|%#.0f %#.0e|%.1f %.0f %.0f', 0.1, 1, 1, 0.25, 0.5, 1.5)",
		"return string.format('% 08.2f|%+.3e|%-10.2e|', 3.14159, 0, -1234.5)", "return string.format('%d %s', 1)",
		"return string.format(12, 1)", "return string.format()", "return string.format('%a', 1)",
		// a differential run against glibc's printf (300,000 directives) found these: %c of a number out of an
		// int's range is a NUL (it was the long's low byte), %#g of a number rounding up to 10^precision
		"return string.format('%c|%5c|%-3c|%c', 2^32 + 65, 2^40, -2^31 - 1, 0/0)",
		"return string.format('%#g %#.3g %#G %#.1g %#.2g %#g %#.3g', 999999.5, 999.5, 99.5, 9.5, 99.5, 9999995, 9995)",
	)
}

// TestScriptErrTableBeforeOkMatchesRedis: a returned table with both err and ok is the error, as Redis reads err
// first; it answered the status (difffuzz, script group, seeds 0:100).
func TestScriptErrTableBeforeOkMatchesRedis(t *testing.T) {
	sameScriptsAsRedis(t, "return {ok='a', err='b'}", "return {err='ERR x', ok='y'}", "return {1, {ok='a', err='b'}}",
		"return {err=1, ok='s'}", "return {ok=1, err={}}")
}

// TestScriptPcallOfLibraryErrorsMatchRedis: a library function called by pcall itself (pcall(string.rep)) fails
// with no position and names itself '?', as Lua 5.1's luaL_where and luaL_argerror say for a C caller; the
// errors named the script's line and '(anonymous)' (found with the difffuzz script group's cjson checks).
func TestScriptPcallOfLibraryErrorsMatchRedis(t *testing.T) {
	sameScriptsAsRedis(t, "return {pcall(string.rep)}", "return {pcall(string.format, '%d', 'x')}", "return {pcall(tonumber)}",
		"return {pcall(setmetatable, 1, 2)}", "return {pcall(struct.pack, 'x9999999999')}", "return {pcall(math.floor, 'x')}",
		"return {pcall(select, -5)}", "return {pcall(bit.band, 'x')}", "return {pcall(string.find, 'a', '[')}",
		"return {pcall(error, 'x')}", "return {pcall(function() return string.rep() end)}", "local f = string.rep; return f()",
		"return {pcall(redis.call, 'GET')}", "return {pcall(redis.sha1hex)}")
}

// TestScriptCJSONMatchesRedis: cjson.decode and cjson.encode are Lua CJSON 2.1.0's, as Redis bundles it: decode's
// tokenizer and its errors ("Expected colon but found T_OBJ_END at character 5"), numbers read by strtod (01,
// 0x10, +5, nan, Infinity), raw control characters in strings, null as cjson.null (a value: [1,null,3] keeps
// three elements), a NUL ending the text; encode's arrays with holes, excessively sparse arrays, cjson.null and
// "Cannot serialise" errors. decode was Go's encoding/json (its errors, 01 read as 0, null as nil) and
// cjson.null did not exist (difffuzz, script group, seeds 0:100).
func TestScriptCJSONMatchesRedis(t *testing.T) {
	sameScriptsAsRedis(t,
		"return cjson.encode({'a/b', cjson.null})", "return {cjson.decode('[1,2,')}", "return cjson.decode('')",
		`return cjson.decode('{"a"}')`, "return cjson.encode(cjson.decode('01'))", `return cjson.decode('"\1"')`,
		"return cjson.decode('[1,null,3]')", "return cjson.encode(cjson.decode('[1,null,3]'))",
		"return {type(cjson.null), tostring(cjson.null), cjson.null == cjson.decode('null')}",
		"return cjson.encode(cjson.decode('nan'))", "return {tostring(cjson.decode('nan')), tostring(cjson.decode('-Infinity')), tostring(cjson.decode('1e400'))}",
		"return cjson.decode('[1]x')", `return cjson.decode('"\\u00e9\\n\\/"')`, `return cjson.decode('"\\ud83d\\ude00"')`,
		`return cjson.decode('"\\ud83d"')`, `return cjson.decode('"\\ude00\\ud83d"')`, `return cjson.decode('"\\u12"')`,
		`return cjson.decode('"\\x"')`, `return cjson.decode('"abc')`, "return cjson.encode(cjson.decode('[1.0e2, -2.5E-1]'))",
		"return cjson.decode('123456789012345678')", `return cjson.encode(cjson.decode('{"1":"a","2":"b"}'))`,
		"return {cjson.decode('+5'), cjson.decode('0x10')}", "return cjson.decode('-')", "return cjson.decode('.5')",
		"return cjson.decode('tru')", "return cjson.decode('[1]\\0garbage')", "return cjson.decode('\\0a')",
		`return cjson.decode('{"a":1,}')`, "return cjson.decode('[1,]')", "return cjson.decode('{1:2}')",
		`return cjson.decode('{"a" 1}')`, "return cjson.decode('[1 2]')", "return cjson.decode(123)", "return cjson.decode()",
		"return cjson.encode()", "return cjson.encode({[1]='x', [3]='z'})", "return cjson.encode({[5]='y'})",
		"return cjson.encode({[11]='y'})", "return cjson.encode({x=1, 'arr'})", "return cjson.encode({[1.5]='x'})", "return cjson.encode({[-1]='y'})",
		"return cjson.encode({[0]='x'})", "return cjson.encode(function() end)", "return cjson.encode({[true]=1})",
		"return cjson.encode({1/0})", "return {cjson.encode(-0), cjson.encode(1e-7), cjson.encode(2^53)}",
		"return cjson.encode('\\1\\127<>&')", "return cjson.encode({nil, nil, 3})", "return cjson.encode({{{}}})",
		`return {cjson.decode('[[1,[2]],{"b":[false]}]')}`, "return cjson.encode(cjson.decode('[1e3, -0, 01.5, -01]'))",
		"return cjson.decode(' ')", "return cjson.decode('{')", `return cjson.decode('"\\u0000"')`,
		// a setting lasts for its script here, in Redis for the scripts after it (docs/resp.md): each is undone
		"cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, '[[[1]]]') cjson.decode_max_depth(1000) return e",
		"cjson.encode_max_depth(2) local ok, e = pcall(cjson.encode, {{{1}}}) cjson.encode_max_depth(1000) return e",
		"cjson.decode_invalid_numbers(false) local r = {pcall(cjson.decode, '01')} "+
			"r[3], r[4] = pcall(cjson.decode, '[1, -Infinity]') cjson.decode_invalid_numbers(true) return r",
		"cjson.encode_invalid_numbers('null') local r = cjson.encode({1/0, -1/0, 0/0}) cjson.encode_invalid_numbers(false) return r",
		"return {1, cjson.null, 3}", "return redis.pcall('SET', 'x', cjson.null)",
	)
}

// TestScriptCJSONNestingMatchesRedis: with encode_max_depth or decode_max_depth raised, nesting is bounded by
// Lua's C stack (8,000 slots) as Lua CJSON's lua_checkstack bounds it: 7,998 tables to encode, 7,999 arrays or
// 4,000 objects to decode. Encoding a table that holds itself overflowed the goroutine's stack and ended the
// server (FuzzCJSON's review of the depth bounds).
func TestScriptCJSONNestingMatchesRedis(t *testing.T) {
	const raise = "cjson.encode_max_depth(2^31 - 1) cjson.decode_max_depth(2^31 - 1) "
	sameScriptsAsRedis(t,
		raise+"local t = {} t[1] = t return {pcall(cjson.encode, t)}",
		raise+"local t = {} t.a = t return {pcall(cjson.encode, t)}",
		raise+"local t = {} t[1] = {a = t} return {pcall(cjson.encode, t)}",
		raise+"return {pcall(cjson.decode, string.rep('[', 100000))}",
		raise+"return {pcall(function() return #cjson.encode(cjson.decode(string.rep('[', 7998) .. string.rep(']', 7998))) end)}",
		raise+"return #cjson.encode(cjson.decode(string.rep('[', 7997) .. string.rep(']', 7997)))",
		raise+"return {pcall(cjson.decode, string.rep('{\"a\":', 100000))}",
		raise+"return {pcall(cjson.decode, string.rep('[{\"a\":', 3000))}",
		raise+"return #cjson.encode(cjson.decode(string.rep('{\"a\":', 3999) .. '1' .. string.rep('}', 3999)))",
	)
}

// TestScriptCMsgpackStackMatchesRedis: cmsgpack.unpack answers at most 7,999 values and nests at most 3,999
// arrays deep, as Lua's C stack bounds lua-cmsgpack's (luaL_checkstack: "stack overflow (...)"); it refused more
// than 1,000 levels as bad data, and answered values until the registry overflowed (FuzzCMsgpack's review).
func TestScriptCMsgpackStackMatchesRedis(t *testing.T) {
	const n = "return {pcall(function() return select('#', "
	sameScriptsAsRedis(t,
		n+"cmsgpack.unpack(string.rep('\\1', 7999))) end)}", n+"cmsgpack.unpack(string.rep('\\1', 8000))) end)}",
		n+"cmsgpack.unpack(string.rep('\\1', 7998), 2)) end)}", n+"cmsgpack.unpack(string.rep('\\1', 7998), 2, 3)) end)}",
		n+"cmsgpack.unpack_limit(string.rep('\\1', 9000), 7998)) end)}", n+"cmsgpack.unpack_limit(string.rep('\\1', 9000), 7999)) end)}",
		n+"cmsgpack.unpack_one(string.rep('\\1', 9000), 8)) end)}",
		n+"cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1')) end)}", n+"cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1')) end)}",
		n+"cmsgpack.unpack(string.rep('\\145', 2000) .. '\\192')) end)}", n+"cmsgpack.unpack(string.rep('\\145', 9000))) end)}",
		n+"cmsgpack.unpack(string.rep('\\129', 7997) .. string.rep('\\1', 7998))) end)}",
		n+"cmsgpack.unpack(string.rep('\\129', 7998) .. string.rep('\\1', 7999))) end)}",
		n+"cmsgpack.unpack(string.rep('\\129\\1', 5000) .. '\\1')) end)}",
	)
}

// TestScriptCommandsInMultiMatchRedis: the SCRIPT LOAD, FLUSH and EXISTS queued in a transaction are seen by the
// commands after them, as Redis runs them in order: an EVALSHA after a SCRIPT LOAD of its script in the same
// MULTI answered NOSCRIPT (SCRIPT ran after the transaction's batch; difffuzz, script group, seeds 108 and 203);
// a transaction a WATCH aborted loads and flushes nothing.
func TestScriptCommandsInMultiMatchRedis(t *testing.T) {
	const sha11, sha22, sha33 = "a3d7ac8b61b5b5f31433c8dcd2dd07312612f9a1", "8d5adea2ca583454048586d8bdf28e687182ae8e", "a222541f9b057b646fdbdc869a74af2bdad4f302"
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"SCRIPT", "FLUSH"}, []string{"MULTI"}, []string{"SCRIPT", "EXISTS", sha11}, []string{"SCRIPT", "LOAD", "return 11"},
			[]string{"EVALSHA", sha11, "0"}, []string{"SCRIPT", "EXISTS", sha11, sha22}, []string{"SCRIPT", "FLUSH"},
			[]string{"EVALSHA", sha11, "0"}, []string{"SCRIPT", "EXISTS", sha11}, []string{"EVAL", "return 22", "0"},
			[]string{"EVALSHA_RO", strings.ToUpper(sha22), "0"}, []string{"SCRIPT", "FLUSH", "bogus"}, []string{"EXEC"},
			[]string{"SCRIPT", "EXISTS", sha11, sha22}, []string{"EVALSHA", sha22, "0"},
			[]string{"WATCH", "k"}, []string{"SET", "k", "1"}, []string{"MULTI"}, []string{"SCRIPT", "LOAD", "return 33"},
			[]string{"SCRIPT", "FLUSH"}, []string{"EXEC"}, []string{"SCRIPT", "EXISTS", sha33, sha22},
			[]string{"MULTI"}, []string{"SCRIPT", "LOAD", "return 33"}, []string{"EXEC"}, []string{"EVALSHA", sha33, "0"},
		))
	})
}

// TestScriptStringByteCharCaseErrorMatchRedis: string.byte clamps its range as Lua 5.1 (string.byte('abc', 0, 10)
// answered nothing), string.char refuses a code out of 0..255 (it cut it to a byte), string.upper and lower
// change ASCII letters only (they were Unicode's), and error() raises nil and error(42) the string "42" (error()
// was a bad argument). Found by probing Lua's libraries against redis-server beside the difffuzz script group.
func TestScriptStringByteCharCaseErrorMatchRedis(t *testing.T) {
	sameScriptsAsRedis(t, "return {string.byte('abc', 0, 10)}", "return {string.byte('abc')}", "return {string.byte('abc', -1)}",
		"return {string.byte('abc', -10, -2)}", "return {string.byte('abc', 3, 1)}", "return {string.byte('abc', 4)}",
		"return string.char(256)", "return string.char(-1)", "return string.char(65.9, 66, '67')",
		"return string.upper('a\\233') .. string.lower('\\192B')", "return {pcall(error)}", "return {pcall(error, 42)}",
		"return {pcall(function() error(42) end)}", "return {pcall(function() error() end)}", "return {pcall(error, true)}")
}

// TestScriptNaNsAndModuloMatchRedis: % is Lua 5.1's a - floor(a/b)*b (5 % math.huge was 5, Redis's -nan), and
// the NaNs of %, ^ and the math library carry glibc's signs ("-nan" for an invalid operation, "nan" for log10,
// acos, asin and abs): they printed "nan"; math.modf of an infinity has a zero fraction (it was nan). Found by
// probing Lua's libraries against redis-server beside the difffuzz script group.
func TestScriptNaNsAndModuloMatchRedis(t *testing.T) {
	sameScriptsAsRedis(t, "return tostring(math.fmod(7, 0)) .. tostring(math.fmod(1/0, 3)) .. tostring(math.fmod(5, 1/0))",
		"return tostring(5 % 0) .. tostring(5 % math.huge) .. tostring(-5 % math.huge)",
		"return tostring(-7 % 3) .. tostring(7 % -3) .. tostring(-7.5 % 2) .. ' ' .. tostring(1e17 % 3) .. tostring(0.3 % 0.1)",
		"return tostring((-8)^(1/3)) .. tostring((-8)^0.5) .. tostring(0^0)", "local x = -8 return tostring(x^(1/3))",
		"return tostring(math.pow(-8, 1/3)) .. tostring(math.sqrt(-1))", "return tostring(math.log(-1)) .. tostring(math.log10(-1))",
		"return tostring(math.acos(2)) .. tostring(math.asin(2))", "return tostring(math.sin(1/0)) .. tostring(math.tan(1/0))",
		"return tostring(math.abs(0/0)) .. tostring(math.abs(-(0/0))) .. tostring(math.sin(-(0/0)))",
		"return {tostring(math.modf(1/0)), tostring(select(2, math.modf(1/0))), tostring(select(2, math.modf(-1/0)))}",
		"return tostring(math.mod(7, 0)) .. tostring(math.acos(0/0)) .. tostring(math.log10(-(0/0)))")
}
