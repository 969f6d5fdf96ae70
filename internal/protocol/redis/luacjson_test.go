package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
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

// TestDecodersStopAtTheTimeLimit: cjson.decode, cjson.encode and cmsgpack.unpack of a big input stop with the
// time limit's error once the script's context is done: they count their steps and check it every 4,096 (called
// here from Go, so that no VM instruction checks it first).
func TestDecodersStopAtTheTimeLimit(t *testing.T) {
	vm := newFuzzVM(1 << 20)
	defer vm.release(false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vm.lim.ctx = ctx
	big := vm.L.NewTable()
	for i := 1; i <= 100000; i++ {
		big.RawSetInt(i, lua.LNumber(i))
	}
	cjson, msgpack := vm.L.GetGlobal("cjson"), vm.L.GetGlobal("cmsgpack")
	for _, c := range []struct {
		fn  lua.LValue
		arg lua.LValue
	}{
		{vm.L.GetField(cjson, "decode"), lua.LString("[" + strings.Repeat("1,", 100000) + "1]")},
		{vm.L.GetField(cjson, "encode"), big},
		{vm.L.GetField(msgpack, "unpack"), lua.LString("\xdd\x00\x01\x86\xa0" + strings.Repeat("\x01", 100000))},
	} {
		err := vm.L.CallByParam(lua.P{Fn: c.fn, NRet: 1, Protect: true}, c.arg)
		var ae *lua.ApiError
		if !errors.As(err, &ae) || !strings.HasSuffix(ae.Object.String(), context.Canceled.Error()) {
			t.Errorf("%v after the time limit: %v, want the time limit's error", c.fn, err)
		}
	}
}
