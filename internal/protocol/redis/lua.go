package redis

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// Compiling takes about a hundred times a script's source in memory while it runs (gopher-lua's syntax tree and
// code generation: a 4 MiB script of calls allocated 620 MiB, an EVAL of a 60 MB table constructor took the
// process from 100 MB to 5.3 GB and 21 s), and a script not in protoCache is compiled inside the engine's batch,
// holding up every write meanwhile. So a script or library of more than maxScriptSource bytes does not compile
// (Redis has no bound but proto-max-bulk-len), and compiles of more than bigCompile bytes run one at a time, so
// that many clients sending big scripts at once hold one such peak, not one each.
const (
	maxScriptSource = 4 << 20
	bigCompile      = 256 << 10
)

var bigCompiles sync.Mutex

// errScriptTooBig is the compile error of a script over maxScriptSource.
var errScriptTooBig = errors.New("script too large: anykv compiles scripts and libraries of at most 4 MiB")

// compileScript returns the compiled script src, whose SHA1 is sha, from the cache or compiled now (as
// LoadString compiles it: a compile error's text is the same). Its `..` operators are calls of luaConcat, the
// function's one upvalue if it has any (see luaConcatAST).
func compileScript(sha string, src []byte) (*lua.FunctionProto, error) {
	return compileChunk(sha, src, "user_script")
}

// compileChunk is compileScript of a chunk named name (user_script, or a library's user_function), kept by key.
func compileChunk(sha string, src []byte, name string) (*lua.FunctionProto, error) {
	protoCache.mu.Lock()
	p := protoCache.m[sha]
	protoCache.mu.Unlock()
	if p != nil {
		return p, nil
	}
	switch {
	case len(src) > maxScriptSource:
		return nil, errScriptTooBig
	case len(src) > bigCompile:
		bigCompiles.Lock()
		defer bigCompiles.Unlock()
		protoCache.mu.Lock()
		p = protoCache.m[sha] // compiled meanwhile by the client it waited for
		protoCache.mu.Unlock()
		if p != nil {
			return p, nil
		}
	}
	chunk, err := parse.Parse(bytes.NewReader(scriptBody(src)), "<string>")
	if err != nil {
		return nil, err
	}
	if chunk, err = luaConcatAST(chunk); err != nil {
		return nil, err
	}
	if p, err = lua.Compile(chunk, name); err != nil {
		return nil, err
	}
	p = p.FunctionPrototypes[0] // the script, inside the chunk that declares its upvalue
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

// openLibs installs in L the libraries a script may use: no files, no OS, no module loading, and Redis's
// math.random. lim bounds what its library functions may build and how long they may run (lua_limits.go).
func openLibs(L *lua.LState, lim *luaLimits) {
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	// gopher-lua cannot dump a function's bytecode (its string.dump raised "GopherLua does not support"); Redis's
	// can, but refuses to load the result. Calling it fails here as loading its result fails there.
	L.GetGlobal("string").(*lua.LTable).RawSetString("dump", lua.LNil)
	mathLib := L.GetGlobal("math").(*lua.LTable)
	mathLib.RawSetString("random", L.NewFunction(luaRandom))
	mathLib.RawSetString("huge", lua.LNumber(math.Inf(1))) // Lua's HUGE_VAL (gopher-lua's is the largest finite number)
	mathLib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		luaRandState.Store(srand48(int32(L.CheckInt64(1))))
		return 0
	}))
	L.SetGlobal("pcall", L.NewFunction(luaPcall))
	L.SetGlobal("unpack", L.NewFunction(luaUnpack))
	openCJSON(L, lim)
	openCMsgpack(L)
	openBit(L)
	openStruct(L, lim)
	installLimits(L, lim)
}

// luaPcall is Redis 7's pcall: Lua's, but an error reply it catches (an {err=} table, as redis.call raises)
// comes back as its text.
func luaPcall(L *lua.LState) int {
	L.CheckAny(1)
	v := L.Get(1)
	if v.Type() != lua.LTFunction && L.GetMetaField(v, "__call").Type() != lua.LTFunction {
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
		return 2
	}
	if err := L.PCall(L.GetTop()-1, lua.MultRet, nil); err != nil {
		L.Push(lua.LFalse)
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			if e, isStr := t.RawGetString("err").(lua.LString); isStr {
				obj = e
			}
		}
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaUnpack is Lua 5.1's unpack, with its limit: a C function's stack holds 8,000 values (LUAI_MAXCSTACK),
// its arguments among them, so unpacking more fails with "too many results to unpack".
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	start, end := L.OptInt(2, 1), L.OptInt(3, t.Len())
	if start > end {
		return 0
	}
	n := end - start + 1
	if n <= 0 || n+L.GetTop() > 8000 { // n <= 0: the count overflowed
		L.RaiseError("too many results to unpack")
	}
	for i := start; i <= end; i++ {
		L.Push(t.RawGetInt(i))
	}
	return n
}

// luaRandState is math.random's state. As in Redis 7, there is one for all scripts, kept from one to the next
// (Redis 7 no longer seeds it before each script, its scripts being replicated by their effects): a script's
// math.randomseed(n) sets where the scripts after it continue. It starts from a random seed.
var luaRandState atomic.Uint64

func init() {
	var b [4]byte
	crand.Read(b[:])
	luaRandState.Store(srand48(int32(binary.LittleEndian.Uint32(b[:]))))
}

// srand48 is the state Redis's redisSrand48(v) sets.
func srand48(v int32) uint64 { return uint64(uint32(v))<<16 | 0x330e }

// luaRandom is Redis's math.random: its lrand48 (48-bit linear congruential) scaled as its patched lmathlib.c
// does, with Lua 5.1's argument checks.
func luaRandom(L *lua.LState) int {
	var next uint64
	for old := luaRandState.Load(); ; old = luaRandState.Load() {
		if next = (old*0x5deece66d + 0xb) & (1<<48 - 1); luaRandState.CompareAndSwap(old, next) {
			break
		}
	}
	const max = math.MaxInt32
	r := float64((next>>17)%max) / max
	checkInt := func(n int) int64 { return int64(int32(L.CheckInt64(n))) } // luaL_checkint: a C int
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := checkInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := checkInt(1), checkInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(int32(u-l+1))) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
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

// formatLuaNumber turns a number redis.call is given into its argument as Redis 7.2 does: an integer when it is
// one within ±2^62 (so 1e15 is "1000000000000000", not Lua's "1e+15"), else the shortest text that reads back
// as it ("0.1", "inf", "nan").
func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<62 {
		return strconv.FormatInt(int64(f), 10)
	}
	return string(resp.AppendDouble(nil, f))
}

// respToLua converts one reply (from the start of b) to a Lua value, returning the rest of b: integers to
// numbers, bulk strings to strings, a null to false, arrays to tables, a status to {ok=...}, an error to
// {err=...} (marked counted: luaErrorTable). With resp3 (redis.setresp(3)) the RESP3 types convert as Redis 7
// converts them: a map to {map={k=v...}}, a set to {set={m=true...}}, a null to nil, a double to {double=n}, a
// boolean to true or false, a big number to {big_number=s}, a verbatim string to {verbatim_string={format=f,
// string=s}}, and an attribute is passed over.
func respToLua(L *lua.LState, b []byte, resp3 bool) (lua.LValue, []byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, nil, errors.New("truncated reply")
	}
	line, rest := string(b[1:i]), b[i+2:]
	switch b[0] {
	case '+':
		t := L.CreateTable(0, 1) // NewTable's room for 32 and 32 was most of what scripts allocated
		t.RawSetString("ok", lua.LString(line))
		return t, rest, nil
	case '-':
		return luaErrorTable(L, line, true), rest, nil
	case ':':
		n, err := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(n), rest, err
	case '$', '=':
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 {
			return lua.LFalse, rest, err
		}
		if n > len(rest)-2 { // not len(rest) < n+2, which a length near 2^63 would wrap
			return nil, nil, errors.New("truncated bulk")
		}
		s := rest[:n]
		if b[0] == '=' && len(s) >= 4 { // RESP3 only: "fmt:text"
			t, vs := L.CreateTable(0, 1), L.CreateTable(0, 2)
			vs.RawSetString("format", lua.LString(s[:3]))
			vs.RawSetString("string", lua.LString(s[4:]))
			t.RawSetString("verbatim_string", vs)
			return t, rest[n+2:], nil
		}
		return lua.LString(s), rest[n+2:], nil
	case '*', '~', '%':
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 {
			return lua.LFalse, rest, err
		}
		if resp3 && b[0] != '*' {
			return respToLuaTyped(L, b[0], n, rest)
		}
		if b[0] == '%' {
			n *= 2
		}
		t := L.CreateTable(min(n, len(rest)/4+1), 0) // an element takes 4 bytes at least (":1\r\n")
		for k := 1; k <= n; k++ {
			var v lua.LValue
			if v, rest, err = respToLua(L, rest, resp3); err != nil {
				return nil, nil, err
			}
			t.RawSetInt(k, v)
		}
		return t, rest, nil
	case '_':
		if resp3 {
			return lua.LNil, rest, nil
		}
		return lua.LFalse, rest, nil
	case ',':
		f, err := strconv.ParseFloat(line, 64)
		if resp3 {
			t := L.CreateTable(0, 1)
			t.RawSetString("double", lua.LNumber(f))
			return t, rest, err
		}
		return lua.LNumber(f), rest, err
	case '#':
		return lua.LBool(line == "t"), rest, nil
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, rest, nil
	case '|': // an attribute: its map is read and passed over
		n, err := strconv.Atoi(line)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("bad attribute %q", line)
		}
		for k := 0; k < 2*n; k++ {
			if _, rest, err = respToLua(L, rest, resp3); err != nil {
				return nil, nil, err
			}
		}
		return respToLua(L, rest, resp3)
	}
	return nil, nil, fmt.Errorf("unexpected reply type %q", b[0])
}

// respToLuaTyped converts a RESP3 map ('%') or set ('~') of n elements, its elements in rest: {map={k=v...}} or
// {set={m=true...}}.
func respToLuaTyped(L *lua.LState, kind byte, n int, rest []byte) (lua.LValue, []byte, error) {
	inner := L.CreateTable(0, min(n, len(rest)/4+1))
	for k := 0; k < n; k++ {
		key, r, err := respToLua(L, rest, true)
		if err != nil {
			return nil, nil, err
		}
		rest = r
		var v lua.LValue = lua.LTrue
		if kind == '%' {
			if v, rest, err = respToLua(L, rest, true); err != nil {
				return nil, nil, err
			}
		}
		if key != lua.LNil { // a nil key cannot be set (Redis's lua_settable would fail)
			inner.RawSet(key, v)
		}
	}
	t := L.CreateTable(0, 1)
	if kind == '%' {
		t.RawSetString("map", inner)
	} else {
		t.RawSetString("set", inner)
	}
	return t, rest, nil
}

// luaReplyMaxDepth is how deeply nested a script's result may be: a table that holds itself would be nested
// without end (Redis answers the error when its Lua stack runs out).
const luaReplyMaxDepth = 1000

var (
	errLuaStackLimit = errors.New("ERR reached lua stack limit")
	errReplyTooLarge = errors.New("ERR the script's reply is too large")
)

// luaToRESP writes a script's result as Redis converts it: a number as an integer (truncated), a string as a
// bulk string, true as 1, false and nil as a null, an {ok=} table as a status, an {err=} table as an error, and
// any other table as an array of its elements up to the first nil. Nested deeper than luaReplyMaxDepth it fails
// with errLuaStackLimit, past luaMaxStringCap bytes with errReplyTooLarge (a few levels of t = {t, t} stand for
// billions of elements), and it checks ctx (the script's time limit) as it goes, failing with its error.
//
// resp3 is the script's protocol (redis.setresp(3)): true and false are then booleans (RESP2 callers get 1 and
// 0), not 1 and a null. onError is told each error reply written that was not counted already (not a command's
// error reply: luaErrorCounted), for INFO errorstats.
func luaToRESP(ctx context.Context, w *resp.Writer, v lua.LValue, resp3 bool, onError func(string)) error {
	c := respConv{ctx: ctx, w: w, resp3: resp3, onError: onError}
	return c.write(v, 0)
}

type respConv struct {
	ctx     context.Context
	w       *resp.Writer
	count   int
	resp3   bool
	onError func(string)
}

func (c *respConv) write(v lua.LValue, depth int) error {
	if c.count++; c.count%luaCheckEvery == 0 {
		if err := scriptDone(c.ctx); err != nil {
			return err
		}
		if c.w.Len() > luaMaxStringCap {
			return errReplyTooLarge
		}
	}
	w := c.w
	switch v := v.(type) {
	case lua.LNumber:
		w.Int(int64(v))
	case lua.LString:
		if w.Len()+len(v) > luaMaxStringCap {
			return errReplyTooLarge
		}
		w.Bulk([]byte(v))
	case lua.LBool:
		switch {
		case c.resp3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		// err before ok, as Redis reads them (luaReplyToRedisReply): {ok='a', err='b'} is the error b
		if e, isStr := v.RawGetString("err").(lua.LString); isStr {
			w.Error(string(e))
			if c.onError != nil && !luaErrorCounted(v) {
				c.onError(strings.TrimPrefix(string(e), "-"))
			}
			return nil
		}
		if ok, isStr := v.RawGetString("ok").(lua.LString); isStr {
			w.SimpleString(string(ok))
			return nil
		}
		if depth >= luaReplyMaxDepth {
			return errLuaStackLimit
		}
		if done, err := c.writeTyped(v, depth); done || err != nil {
			return err
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.ArrayHeader(n)
		for k := 1; k <= n; k++ {
			if err := c.write(v.RawGetInt(k), depth+1); err != nil {
				return err
			}
		}
	default:
		w.Null()
	}
	return nil
}

// writeTyped writes the tables a script returns to ask for a RESP3 type, as Redis 7 reads them: {double=n},
// {big_number=s}, {verbatim_string={format=f, string=s}}, {map={k=v, ...}} and {set={k=true, ...}} (in RESP2
// a bulk string, a bulk string, a bulk string, a flat array and an array). done is false for any other table.
func (c *respConv) writeTyped(v *lua.LTable, depth int) (done bool, err error) {
	w := c.w
	if d, ok := v.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(d))
		return true, nil
	}
	if b, ok := v.RawGetString("big_number").(lua.LString); ok {
		if w.Proto() < 3 {
			w.Bulk([]byte(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b))))
		} else {
			w.Raw([]byte("(" + strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b)) + "\r\n"))
		}
		return true, nil
	}
	if vs, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, fok := vs.RawGetString("format").(lua.LString)
		str, sok := vs.RawGetString("string").(lua.LString)
		if fok && sok {
			// Redis's addReplyVerbatim takes the format's first three bytes as a C string: up to a zero byte,
			// padded with spaces.
			if i := strings.IndexByte(string(f), 0); i >= 0 {
				f = f[:i]
			}
			if len(f) > 3 {
				f = f[:3]
			}
			w.Verbatim(string(f)+"   "[len(f):], string(str))
			return true, nil
		}
	}
	if m, ok := v.RawGetString("map").(*lua.LTable); ok {
		var keys, vals []lua.LValue
		m.ForEach(func(k, v lua.LValue) { keys, vals = append(keys, k), append(vals, v) })
		w.MapHeader(len(keys))
		for i := range keys {
			if err := c.write(keys[i], depth+1); err != nil {
				return true, err
			}
			if err := c.write(vals[i], depth+1); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if set, ok := v.RawGetString("set").(*lua.LTable); ok {
		var keys []lua.LValue
		set.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		w.SetHeader(len(keys))
		for _, k := range keys {
			if err := c.write(k, depth+1); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	return false, nil
}

// openCJSON installs cjson (luacjson.go): encode, decode, null and the settings. Both functions are bounded by
// lim: encode in the size of what it builds and in time; decode in memory, by the number of values its text can
// hold and each table as it makes it (luaTableCost), and in time.
func openCJSON(L *lua.LState, lim *luaLimits) {
	t := L.NewTable()
	null := L.NewUserData() // Lua CJSON's NULL lightuserdata: JSON null, one value for all
	oneArg := func(L *lua.LState) {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
	}
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		oneArg(L)
		L.Push(lua.LString(cjsonEncode(L, lim, null, L.Get(1))))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		oneArg(L)
		s := L.CheckString(1)
		values := 1
		for _, c := range []byte("[{,:") {
			values += strings.Count(s, string(c))
		}
		lim.mem(L, 2*len(s)+values*luaValueCost)
		L.Push(cjsonDecode(L, lim, null, s))
		return 1
	}))
	t.RawSetString("null", null)
	openCJSONSettings(L, t, &lim.json)
	L.SetGlobal("cjson", t)
}
