package redis

import (
	"strings"
	"testing"
)

// TestCJSONNestingBounded: however far a script raises encode_max_depth and decode_max_depth, cjson stops at
// Lua's C stack, as Lua CJSON does, with its errors: a table that holds itself, encoded, overflowed the
// goroutine's stack (a fatal error, the whole server gone).
func TestCJSONNestingBounded(t *testing.T) {
	vm := newFuzzVM(1 << 20)
	defer vm.release(false)
	const raise = "cjson.encode_max_depth(2^31 - 1) cjson.decode_max_depth(2^31 - 1) "
	for _, tc := range []struct{ code, want string }{
		{"return cjson.decode(string.rep('[', 1e6))", "Found too many nested data structures (1001) at character 1001"},
		{raise + "local t = {} t[1] = t return cjson.encode(t)", "Cannot serialise, excessive nesting (7998)"},
		{raise + "local t = {} t.a = t return cjson.encode(t)", "Cannot serialise, excessive nesting (4000)"},
		{raise + "return cjson.decode(string.rep('[', 1e6))", "Found too many nested data structures (7999) at character 7999"},
		{raise + "return cjson.decode(string.rep('{\"a\":', 1e5))", "Found too many nested data structures (4000) at character 19996"},
	} {
		if _, msg := luaFuzzRun(t, vm, tc.code); msg != tc.want {
			t.Errorf("%s: %q, want %q", tc.code, msg, tc.want)
		}
	}
	deep := strings.Repeat("[", 7997) + strings.Repeat("]", 7997)
	if rets, msg := luaFuzzRun(t, vm, raise+"return cjson.encode(cjson.decode(KEYS[1]))", deep); msg != "" || len(rets) != 1 ||
		rets[0].String() != strings.Repeat("[", 7996)+"{}"+strings.Repeat("]", 7996) {
		t.Errorf("7,997 nested arrays: %s", msg)
	}
}
