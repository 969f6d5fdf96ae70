package redis

import "testing"

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
