package redis

import (
	"context"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// luaVM is an interpreter kept from one script to the next: building one (its registry and call stack, about
// 200 library functions and their tables) cost half of what a short script costs. What a script could leave in
// it for the next is closed off as Redis 7 closes it: the globals, every library table, the globals' and the
// strings' metatables are read-only (an assignment raises "Attempt to modify a readonly table"), reading a global
// that does not exist is an error, and what is the run's own is set again for each run (prepare): KEYS, ARGV,
// the limits, the context, redis.call's batch. An interpreter whose script failed,
// ran out of time or had to collect the heap is not kept.
type luaVM struct {
	L       *lua.LState
	globals *lua.LTable
	lim     luaLimits      // the running script's bounds: the library functions hold &lim
	run     *scriptRun     // what redis.call runs through
	fatal   error          // a failure of the batch itself that redis.call met: the script stops, nothing applies (one wrapping engine.ErrInternal, a panic, even if the script caught it)
	concat  *lua.LFunction // what the rewritten `..` calls (luaConcatAST)
	// loading collects what redis.register_function registers while a library's code runs (functions.go).
	loading *funcLoad
	// loadGlobals are the globals a library's code sees as it loads (loadAPI), made once.
	loadGlobals *lua.LTable
	// libs are the function libraries loaded on this interpreter, by their compiled code (library).
	libs map[libKey]*funcLoad
}

// luaRegistryMax is how many values an interpreter's stack holds at most (registry overflow past it): Lua 5.1's
// limit of 8,000 for a C function's (unpack's, redis.call's) and room for the frames around it.
const luaRegistryMax = 32 * 1024

// luaVMsKept bounds the idle interpreters kept: scripts run one at a time in a commit group's writer, a few
// more in reads beside it.
const luaVMsKept = 4

var luaVMs struct {
	sync.Mutex
	free []*luaVM
}

// getLuaVM returns an idle interpreter, or a new one.
func getLuaVM() *luaVM {
	luaVMs.Lock()
	if n := len(luaVMs.free); n > 0 {
		vm := luaVMs.free[n-1]
		luaVMs.free[n-1] = nil
		luaVMs.free = luaVMs.free[:n-1]
		luaVMs.Unlock()
		return vm
	}
	luaVMs.Unlock()
	return newLuaVM()
}

// prepare readies vm for a script with these keys and arguments, run through run within ctx; a function's
// (fn) have no KEYS and ARGV globals, as in Redis: they are its arguments.
func (vm *luaVM) prepare(ctx context.Context, maxValue int, run *scriptRun, keys, argv [][]byte, fn bool) {
	vm.lim.init(ctx, maxValue)
	vm.run, vm.fatal = run, nil
	if run != nil {
		run.lim = &vm.lim
	}
	if !fn {
		vm.globals.RawSetString("KEYS", vm.strings(keys))
		vm.globals.RawSetString("ARGV", vm.strings(argv))
	}
	vm.L.SetContext(ctx)
}

func (vm *luaVM) strings(bs [][]byte) *lua.LTable {
	t := vm.L.CreateTable(len(bs), 0)
	for i, b := range bs {
		t.RawSetInt(i+1, lua.LString(b))
	}
	return t
}

// release ends vm's run: it is kept for another script if keep (the script ended normally) and there is room,
// with nothing of this run left reachable from it.
func (vm *luaVM) release(keep bool) {
	vm.L.RemoveContext()
	if !keep || vm.lim.heavy {
		vm.L.Close()
		return
	}
	vm.run, vm.lim.ctx = nil, nil
	vm.globals.RawSetString("KEYS", lua.LNil)
	vm.globals.RawSetString("ARGV", lua.LNil)
	vm.L.ClearStack()
	luaVMs.Lock()
	defer luaVMs.Unlock()
	if len(luaVMs.free) < luaVMsKept {
		luaVMs.free = append(luaVMs.free, vm)
		return
	}
	vm.L.Close()
}

// newLuaVM builds an interpreter with only the libraries a script may use (no files, no OS, no module loading;
// lim bounds what they may build and how long they may run, lua_limits.go) and the redis library, and closes it
// to changes.
func newLuaVM() *luaVM {
	vm := &luaVM{}
	// The registry (the value stack) grows as a script needs it up to luaRegistryMax: a script may pass 7,999
	// values to a command (redis.call('lpush', k, unpack(t))), as Lua 5.1's stack limit allows in Redis.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 256 * 20,
		RegistryMaxSize: luaRegistryMax, RegistryGrowStep: 1024})
	vm.L, vm.globals = L, L.G.Global
	openLibs(L, &vm.lim)
	L.SetGlobal("redis", vm.redisLib())
	vm.concat = L.NewFunction(func(L *lua.LState) int { return luaConcat(L, &vm.lim) })
	closeGlobals(L)
	return vm
}

// luaOmitted are globals Redis 7's scripts have and anykv's leave out (the compiler, the collector, coroutines):
// they read as nil, not as the error of a global that does not exist.
var luaOmitted = map[string]struct{}{"loadstring": {}, "load": {}, "collectgarbage": {}, "gcinfo": {}, "coroutine": {},
	"__redis__err__handler": {}}

// dropLuaVMs forgets the idle interpreters (SCRIPT FLUSH, as Redis starts a new Lua state then).
func dropLuaVMs() {
	luaVMs.Lock()
	free := luaVMs.free
	luaVMs.free = nil
	luaVMs.Unlock()
	for _, vm := range free {
		vm.L.Close()
	}
}

// closeGlobals makes the globals, every table among them, and the globals' and strings' metatables read-only
// (lua.LTable.SetReadOnly, a patch of the vendored gopher-lua), and a read of a global that does not exist an
// error, with Redis 7's texts; no type's metatable can be set any more (setmetatable takes tables only).
func closeGlobals(L *lua.LState) {
	g := L.G.Global
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckAny(2).String()
		if _, omitted := luaOmitted[name]; omitted {
			return 0 // nil, as before interpreters were kept: `local f = loadstring or load` works
		}
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
		return 0
	}))
	L.SetMetatable(g, mt)
	mt.SetReadOnly()
	L.CloseBuiltinMetatables() // setmetatable of a string, number, ... would change its whole type's
	g.ForEach(func(_, v lua.LValue) {
		if t, ok := v.(*lua.LTable); ok {
			t.SetReadOnly()
		}
	})
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		smt.SetReadOnly()
	}
}
