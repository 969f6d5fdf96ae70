package redis

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"anykv/internal/protocol/resp"
)

// The Lua side of scripting: a sandboxed interpreter with Redis's redis.* and cjson libraries, and the
// conversions between Lua values and RESP replies that Redis documents. How a script's commands reach the engine
// is in script.go.

// sha1hex is the script's SHA1 in lower-case hex, as EVALSHA names it.
func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Compiled scripts. Compiling is most of a big script's cost: BullMQ's moveToFinished is 40 kB of Lua, about
// 1.7 ms to compile, more than it takes to run, and a script runs inside the engine's batch, where that time
// holds up every other write. So each script is compiled once and its FunctionProto (immutable, so every
// interpreter that runs the script shares it) kept by SHA1, up to protoCacheMax scripts and protoCacheBytes of
// source; past either, the cache starts over.
var protoCache struct {
	mu    sync.Mutex
	m     map[string]*lua.FunctionProto
	bytes int
}

const (
	protoCacheMax   = 1024
	protoCacheBytes = 16 << 20
)

// compileScript returns the compiled script src, whose SHA1 is sha, from the cache or compiled now (as
// LoadString compiles it: a compile error's text is the same).
func compileScript(sha string, src []byte) (*lua.FunctionProto, error) {
	protoCache.mu.Lock()
	p := protoCache.m[sha]
	protoCache.mu.Unlock()
	if p != nil {
		return p, nil
	}
	chunk, err := parse.Parse(bytes.NewReader(src), "<string>")
	if err != nil {
		return nil, err
	}
	if p, err = lua.Compile(chunk, "<string>"); err != nil {
		return nil, err
	}
	protoCache.mu.Lock()
	defer protoCache.mu.Unlock()
	if len(protoCache.m) >= protoCacheMax || protoCache.bytes+len(src) > protoCacheBytes {
		protoCache.m, protoCache.bytes = nil, 0
	}
	if protoCache.m == nil {
		protoCache.m = map[string]*lua.FunctionProto{}
	}
	if _, dup := protoCache.m[sha]; !dup {
		protoCache.m[sha] = p
		protoCache.bytes += len(src)
	}
	return p, nil
}

// newLua returns an interpreter with only the libraries a script may use: no files, no OS, no module loading,
// and a math.random that is deterministic (as Redis seeds it), so a script's effect depends only on its input.
func newLua() *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 256 * 20})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module", "collectgarbage",
		"print", "getfenv", "setfenv", "newproxy"} {
		L.SetGlobal(name, lua.LNil)
	}
	seed := uint64(0x5eed)
	math := L.GetGlobal("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(func(L *lua.LState) int { // a fixed-seed generator, as in Redis
		seed = seed*6364136223846793005 + 1442695040888963407
		f := float64(seed>>11) / (1 << 53)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			L.Push(lua.LNumber(1 + int64(f*float64(L.CheckInt64(1)))))
		default:
			lo, hi := L.CheckInt64(1), L.CheckInt64(2)
			L.Push(lua.LNumber(lo + int64(f*float64(hi-lo+1))))
		}
		return 1
	}))
	math.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int { seed = uint64(L.CheckInt64(1)); return 0 }))
	openCJSON(L)
	openCMsgpack(L)
	return L
}

// luaArg turns a redis.call argument into a command argument: strings and numbers only, as in Redis.
func luaArg(v lua.LValue) ([]byte, bool) {
	switch v := v.(type) {
	case lua.LString:
		return []byte(v), true
	case lua.LNumber:
		return []byte(formatLuaNumber(float64(v))), true
	}
	return nil, false
}

// formatLuaNumber prints a number as Lua's tostring does: integers without a decimal point.
func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// respToLua converts one RESP2 reply (from the start of b) to a Lua value, returning the rest of b: integers to
// numbers, bulk strings to strings, a null to false, arrays to tables, a status to {ok=...}, an error to
// {err=...}.
func respToLua(L *lua.LState, b []byte) (lua.LValue, []byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, nil, errors.New("truncated reply")
	}
	line, rest := string(b[1:i]), b[i+2:]
	switch b[0] {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, rest, nil
	case '-':
		t := L.NewTable()
		t.RawSetString("err", lua.LString(line))
		return t, rest, nil
	case ':':
		n, err := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(n), rest, err
	case '$':
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 {
			return lua.LFalse, rest, err
		}
		if len(rest) < n+2 {
			return nil, nil, errors.New("truncated bulk")
		}
		return lua.LString(rest[:n]), rest[n+2:], nil
	case '*', '~', '%':
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 {
			return lua.LFalse, rest, err
		}
		if b[0] == '%' {
			n *= 2
		}
		t := L.NewTable()
		for k := 1; k <= n; k++ {
			var v lua.LValue
			if v, rest, err = respToLua(L, rest); err != nil {
				return nil, nil, err
			}
			t.RawSetInt(k, v)
		}
		return t, rest, nil
	case '_':
		return lua.LFalse, rest, nil
	case ',':
		f, err := strconv.ParseFloat(line, 64)
		return lua.LNumber(f), rest, err
	case '#':
		return lua.LBool(line == "t"), rest, nil
	}
	return nil, nil, fmt.Errorf("unexpected reply type %q", b[0])
}

// luaToRESP writes a script's result as Redis converts it: a number as an integer (truncated), a string as a
// bulk string, true as 1, false and nil as a null, an {ok=} table as a status, an {err=} table as an error, and
// any other table as an array of its elements up to the first nil.
func luaToRESP(w *resp.Writer, v lua.LValue) {
	switch v := v.(type) {
	case lua.LNumber:
		w.Int(int64(v))
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LBool:
		if v {
			w.Int(1)
		} else {
			w.Null()
		}
	case *lua.LTable:
		if ok, isStr := v.RawGetString("ok").(lua.LString); isStr {
			w.SimpleString(string(ok))
			return
		}
		if e, isStr := v.RawGetString("err").(lua.LString); isStr {
			w.Error(string(e))
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.ArrayHeader(n)
		for k := 1; k <= n; k++ {
			luaToRESP(w, v.RawGetInt(k))
		}
	default:
		w.Null()
	}
}

// openCJSON installs cjson.encode and cjson.decode.
func openCJSON(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		b, err := json.Marshal(luaToGo(L.CheckAny(1), 0))
		if err != nil {
			L.RaiseError("Cannot serialise: %v", err)
		}
		L.Push(lua.LString(b))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		var v any
		d := json.NewDecoder(strings.NewReader(L.CheckString(1)))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			L.RaiseError("Expected value but found invalid token: %v", err)
		}
		L.Push(goToLua(L, v))
		return 1
	}))
	L.SetGlobal("cjson", t)
}

// luaToGo converts for cjson.encode: a table with keys 1..n only is an array, any other a map.
func luaToGo(v lua.LValue, depth int) any {
	if depth > 1000 {
		return nil
	}
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return float64(v)
	case lua.LBool:
		return bool(v)
	case *lua.LTable:
		n := v.Len()
		isArray, count := true, 0
		v.ForEach(func(k, _ lua.LValue) {
			count++
			if kn, ok := k.(lua.LNumber); !ok || float64(kn) != math.Trunc(float64(kn)) || kn < 1 || int(kn) > n {
				isArray = false
			}
		})
		if isArray && count > 0 {
			out := make([]any, n)
			for i := 1; i <= n; i++ {
				out[i-1] = luaToGo(v.RawGetInt(i), depth+1)
			}
			return out
		}
		out := map[string]any{}
		v.ForEach(func(k, val lua.LValue) { out[k.String()] = luaToGo(val, depth+1) })
		if count == 0 {
			return map[string]any{}
		}
		return out
	}
	return nil
}

func goToLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case string:
		return lua.LString(v)
	case json.Number:
		f, _ := v.Float64()
		return lua.LNumber(f)
	case bool:
		return lua.LBool(v)
	case []any:
		t := L.NewTable()
		for i, e := range v {
			t.RawSetInt(i+1, goToLua(L, e))
		}
		return t
	case map[string]any:
		t := L.NewTable()
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.RawSetString(k, goToLua(L, v[k]))
		}
		return t
	}
	return lua.LNil // JSON null: cjson.null is nil here
}
