package redis

import (
	"anykv/internal/protocol/resp"
	"bytes"
	"context"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Loading a function library: its shebang, its code run in Redis 7.0's load environment (redis.register_function
// and little else), and the call of one function it registered.

// funcLoadTimeLimit bounds a library's load (Redis: 500 ms).
const funcLoadTimeLimit = 500 * time.Millisecond

// funcLoadMaxValue bounds a string a library's code builds as it loads (the default value limit).
const funcLoadMaxValue = 64 << 20

// parseLibraryMeta reads a library's shebang `#!lua name=<lib>`, answering Redis's errors.
func parseLibraryMeta(code []byte) (name string, errMsg string) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return "", "ERR Missing library metadata"
	}
	end := bytes.IndexByte(code, '\n')
	if end < 0 {
		return "", "ERR Invalid library metadata"
	}
	// As Redis's functionExtractLibMetaData: the line split as sdssplitargs does (name="x" is name=x), the engine
	// what follows #! in the first part, compared without case, as name=.
	parts, ok := resp.SplitArgs(code[:end])
	if !ok || len(parts) == 0 {
		return "", "ERR Invalid library metadata"
	}
	if e := parts[0][2:]; !strings.EqualFold(e, "lua") {
		return "", "ERR Engine '" + e + "' not found"
	}
	found := false
	for _, p := range parts[1:] {
		switch {
		case len(p) < 5 || !strings.EqualFold(p[:5], "name="):
			return "", "ERR Invalid metadata value given: " + p
		case found:
			return "", "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, found = p[5:], true
	}
	if !found {
		return "", "ERR Library name was not given"
	}
	if !validFuncName(name) {
		return "", "ERR " + errFuncName
	}
	return name, ""
}

const errFuncName = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// validFuncName reports whether name is a valid library or function name, as Redis's functionsVerifyName.
func validFuncName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// loadLibrary compiles a library and runs its code in the load environment, returning it with the functions
// it registered, or Redis's error.
func loadLibrary(code []byte) (*funcLib, string) {
	name, msg := parseLibraryMeta(code)
	if msg != "" {
		return nil, msg
	}
	lib := &funcLib{name: name, code: append([]byte(nil), code...), sha: sha1hex(code), load: libLoads.Add(1)}
	proto, err := compileLibrary(lib.sha, lib.code)
	if err != nil {
		return nil, "ERR Error compiling function: user_function: " + firstLine(err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), funcLoadTimeLimit)
	defer cancel()
	vm := getLuaVM()
	vm.prepare(ctx, funcLoadMaxValue, nil, nil, nil, true)
	ok := false
	defer func() { vm.release(ok) }()
	reg, err := vm.runLibrary(proto)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "ERR Error registering functions: ERR FUNCTION LOAD timeout"
		}
		return nil, "ERR Error registering functions: " + scriptErrorText(err, "user_function")
	}
	ok = true
	if len(reg.defs) == 0 {
		return nil, "ERR No functions registered"
	}
	lib.funcs = reg.defs
	sort.Slice(lib.funcs, func(i, j int) bool { return lib.funcs[i].name < lib.funcs[j].name })
	return lib, ""
}

// compileLibrary is compileScript for a library's code (chunk user_function; its own cache entries).
func compileLibrary(sha string, code []byte) (*lua.FunctionProto, error) {
	return compileChunk("f"+sha, code, "user_function")
}

// funcLoad is what a run of a library's code registered.
type funcLoad struct {
	defs      []funcDef
	callbacks map[string]*lua.LFunction
}

// runLibrary runs a library's compiled code in a new load environment and returns what it registered; env, the
// environment its functions keep, then reads the ordinary globals (Redis 7.0 swaps the globals' __index so).
func (vm *luaVM) runLibrary(proto *lua.FunctionProto) (*funcLoad, error) {
	L := vm.L
	reg := &funcLoad{callbacks: map[string]*lua.LFunction{}}
	env := L.CreateTable(0, 0)
	mt := L.CreateTable(0, 1)
	mt.RawSetString("__index", vm.loadAPI())
	L.SetMetatable(env, mt)
	env.SetReadOnly()
	mt.SetReadOnly()
	fn := vm.closure(proto)
	fn.Env = env
	vm.loading = reg
	defer func() { vm.loading = nil }()
	L.Push(fn)
	if err := L.PCall(0, 0, nil); err != nil {
		return nil, err
	}
	mt.RawSetString("__index", vm.globals) // the functions run with the ordinary globals
	return reg, nil
}

// library returns what the library compiled as proto registered on this interpreter for its load numbered load
// (funcLib.load), running its code at the load's first call here, as Redis runs it once at FUNCTION LOAD: running
// it before every FCALL made FCALL of a function of a 30-function library 2.4 times slower than EVALSHA of the
// same body. So, as in Redis, the library's local variables live from one call to the next (on this interpreter:
// anykv keeps several) until the library is loaded again. Past luaLibsKept loads the interpreter starts over.
func (vm *luaVM) library(proto *lua.FunctionProto, load uint64) (*funcLoad, error) {
	k := libKey{proto, load}
	if reg := vm.libs[k]; reg != nil {
		return reg, nil
	}
	reg, err := vm.runLibrary(proto)
	if err != nil {
		return nil, err
	}
	if vm.libs == nil || len(vm.libs) >= luaLibsKept {
		vm.libs = make(map[libKey]*funcLoad)
	}
	vm.libs[k] = reg
	return reg, nil
}

// libKey names a load of a library on an interpreter.
type libKey struct {
	proto *lua.FunctionProto
	load  uint64
}

// luaLibsKept bounds the libraries an interpreter keeps loaded.
const luaLibsKept = 64

// closure makes a function of a compiled script or library, its `..` operators calling vm.concat.
func (vm *luaVM) closure(proto *lua.FunctionProto) *lua.LFunction {
	fn := vm.L.NewFunctionFromProto(proto)
	if len(fn.Upvalues) > 0 { // luaConcatName, what `..` calls (see luaConcatAST)
		uv := &lua.Upvalue{}
		uv.Close()
		uv.SetValue(vm.concat)
		fn.Upvalues[0] = uv
	}
	return fn
}

// loadAPI returns the globals a library's code sees as it loads, as Redis 7.0's: only redis, with
// register_function, log, the LOG_ levels and the version; reading anything else is an error.
func (vm *luaVM) loadAPI() *lua.LTable {
	if vm.loadGlobals != nil {
		return vm.loadGlobals
	}
	L := vm.L
	missing := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	})
	closed := func(t *lua.LTable) *lua.LTable {
		mt := L.CreateTable(0, 1)
		mt.RawSetString("__index", missing)
		L.SetMetatable(t, mt)
		mt.SetReadOnly()
		t.SetReadOnly()
		return t
	}
	r := L.CreateTable(0, 8)
	r.RawSetString("register_function", L.NewFunction(vm.registerFunction))
	r.RawSetString("log", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() < 2 {
			raiseErr(L, "ERR redis.log() requires two arguments or more.")
		}
		return 0
	}))
	real := vm.globals.RawGetString("redis").(*lua.LTable)
	for _, k := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
		r.RawSetString(k, real.RawGetString(k))
	}
	g := L.CreateTable(0, 1)
	g.RawSetString("redis", closed(r))
	vm.loadGlobals = closed(g)
	return vm.loadGlobals
}

// raiseErr raises an error reply (an {err=msg} table), as Redis's luaPushError and luaError do.
func raiseErr(L *lua.LState, msg string) {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	L.Error(t, 0)
}

// registerFunction is redis.register_function(name, callback) or redis.register_function{function_name=,
// callback=, flags=, description=}, with Redis 7.0's checks and errors.
func (vm *luaVM) registerFunction(L *lua.LState) int {
	reg := vm.loading
	if reg == nil {
		raiseErr(L, "ERR redis.register_function can only be called on FUNCTION LOAD command")
	}
	var def funcDef
	var cb *lua.LFunction
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raiseErr(L, "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		t.ForEach(func(k, v lua.LValue) {
			if bad != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				bad = "ERR named argument key given to redis.register_function is not a string"
				return
			}
			switch string(ks) {
			case "function_name":
				if s, ok := luaStringOf(v); ok {
					def.name = s
				} else {
					bad = "ERR function_name argument given to redis.register_function must be a string"
				}
			case "description":
				if s, ok := luaStringOf(v); ok {
					def.desc, def.hasDesc = s, true
				} else {
					bad = "ERR description argument given to redis.register_function must be a string"
				}
			case "callback":
				if f, ok := v.(*lua.LFunction); ok {
					cb = f
				} else {
					bad = "ERR callback argument given to redis.register_function must be a function"
				}
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "ERR flags argument to redis.register_function must be a table representing function flags"
					return
				}
				if !readFuncFlags(ft, &def) {
					bad = "ERR unknown flag given"
				}
			default:
				bad = "ERR unknown argument given to redis.register_function"
			}
		})
		switch {
		case bad != "":
			raiseErr(L, bad)
		case def.name == "":
			raiseErr(L, "ERR redis.register_function must get a function name argument")
		case cb == nil:
			raiseErr(L, "ERR redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := luaStringOf(L.Get(1))
		if !ok {
			raiseErr(L, "ERR first argument to redis.register_function must be a string")
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raiseErr(L, "ERR second argument to redis.register_function must be a function")
		}
		def.name, cb = s, f
	default:
		raiseErr(L, "ERR wrong number of arguments to redis.register_function")
	}
	if !validFuncName(def.name) {
		raiseErr(L, "ERR "+errFuncName)
	}
	if _, dup := reg.callbacks[def.name]; dup {
		raiseErr(L, "ERR Function already exists in the library")
	}
	reg.callbacks[def.name] = cb
	reg.defs = append(reg.defs, def)
	return 0
}

// luaStringOf is lua_isstring and lua_tostring: a string, or a number as text.
func luaStringOf(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return v.String(), true
	}
	return "", false
}

// readFuncFlags reads a flags table into def (in Redis's order), false for an unknown flag.
func readFuncFlags(t *lua.LTable, def *funcDef) bool {
	set := map[string]bool{}
	ok := true
	t.ForEach(func(_, v lua.LValue) {
		s, isStr := v.(lua.LString)
		if !isStr {
			ok = false
			return
		}
		known := false
		for _, f := range funcFlagNames {
			known = known || f == string(s)
		}
		ok = ok && known
		set[string(s)] = true
	})
	for _, f := range funcFlagNames {
		if set[f] {
			def.flags = append(def.flags, f)
		}
	}
	def.noWrites = set["no-writes"]
	return ok
}

// callFunction runs the function name of the library compiled as proto with keys and args (its two arguments),
// leaving its result on the stack, or returns the error it raised.
func (vm *luaVM) callFunction(proto *lua.FunctionProto, load uint64, name string, keys, args [][]byte) error {
	reg, err := vm.library(proto, load)
	if err != nil {
		return err
	}
	cb := reg.callbacks[name]
	if cb == nil { // the library changed meanwhile
		return &lua.ApiError{Type: lua.ApiErrorRun, Object: lua.LString("Function not found")}
	}
	L := vm.L
	L.Push(cb)
	L.Push(vm.strings(keys))
	L.Push(vm.strings(args))
	return L.PCall(2, 1, nil)
}
