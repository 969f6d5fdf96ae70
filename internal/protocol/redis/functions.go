package redis

import (
	"context"
	"errors"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"anykv/internal/engine"
	"anykv/internal/glob"
	"anykv/internal/rdb"
)

// Redis 7 functions (FUNCTION, FCALL, FCALL_RO). A library is Lua code that starts with `#!lua name=<lib>` and
// registers functions with redis.register_function. Its code runs at FUNCTION LOAD in Redis 7.0's load
// environment (only `redis` with register_function, log, the LOG_ levels and the version; everything else is a
// nonexistent global), and the functions it registered, with their flags and descriptions, are kept in the
// handler's registry. The libraries are data, as in Redis: their code is stored in the engine (kv.FunctionsTable,
// one item, in Redis's FUNCTION DUMP format), written durably by each change, read at the first FUNCTION or FCALL
// after a start, and kept by FLUSHALL. FCALL runs a function as EVALSHA runs a script: the same call of
// "redis.eval" in the engine's batch (atomic, durable), the same limits and read-only rules, with mode "f": the
// library's code (compiled once, by its SHA1) runs again in the load environment to register its functions,
// then the one called runs with the ordinary globals, given KEYS and ARGV as its two arguments.

// Limits of the libraries kept: Redis has none (they are bounded by its memory).
const (
	funcMaxLibraries = 1024
	funcMaxCodeBytes = 16 << 20
)

// funcDef is a registered function.
type funcDef struct {
	name, desc string
	hasDesc    bool
	flags      []string // in Redis's order (funcFlagNames)
	noWrites   bool
}

// funcLib is a loaded library.
type funcLib struct {
	name  string
	code  []byte // never changed: FCALL hands it to the engine
	sha   string
	funcs []funcDef // by name
	// load numbers this load of the library (libLoads): the interpreters that ran its code keep what it
	// registered, its local variables with it, for the calls of this load only (luaVM.library), as Redis starts a
	// library afresh at each FUNCTION LOAD, RESTORE or start.
	load uint64
}

// libLoads numbers the libraries loaded (funcLib.load).
var libLoads atomic.Uint64

// funcFlagNames are the flags a function may have, in the order Redis lists them.
var funcFlagNames = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// funcRegistry holds a handler's libraries; mu also serializes their changes and the engine's writes of them.
type funcRegistry struct {
	mu     sync.Mutex
	loaded bool
	libs   map[string]*funcLib
	byName map[string]*funcLib // function name, lower-cased (Redis finds functions without case) → its library
	bytes  int
}

// funcsLoaded returns the handler's libraries, locked, read from the engine first if they were not yet (after a
// start); or the engine's error, unlocked.
func (h *Handler) funcsLoaded(ctx context.Context) (*funcRegistry, error) {
	r := &h.funcs
	r.mu.Lock()
	if r.loaded {
		return r, nil
	}
	payload, err := h.store.Functions(ctx)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.libs, r.byName, r.bytes = map[string]*funcLib{}, map[string]*funcLib{}, 0
	libs, msg := decodeFunctions(payload)
	if msg == "" {
		msg = r.merge(libs, false, true) // two libraries' functions may collide (names are found without case)
	}
	if msg != "" {
		// Serving none would let the next FUNCTION LOAD write the set without them: refuse until FUNCTION FLUSH.
		h.log.Error("function libraries stored in the engine do not load", "error", msg)
		r.mu.Unlock()
		return nil, errUnreadableLibraries{msg}
	}
	r.loaded = true
	return r, nil
}

// errUnreadableLibraries: the libraries stored do not load (a newer or damaged payload); only FUNCTION FLUSH,
// which drops them, is served.
type errUnreadableLibraries struct{ msg string }

func (e errUnreadableLibraries) Error() string {
	return "the function libraries stored do not load (" + strings.TrimPrefix(e.msg, "ERR ") +
		"): FUNCTION FLUSH removes them"
}

// add adds lib (whose functions collide with no other library's).
func (r *funcRegistry) add(lib *funcLib) {
	r.libs[lib.name] = lib
	for _, f := range lib.funcs {
		r.byName[strings.ToLower(f.name)] = lib
	}
	r.bytes += len(lib.code)
}

func (r *funcRegistry) remove(name string) {
	lib := r.libs[name]
	if lib == nil {
		return
	}
	delete(r.libs, name)
	for _, f := range lib.funcs {
		delete(r.byName, strings.ToLower(f.name))
	}
	r.bytes -= len(lib.code)
}

// sorted returns the libraries by name.
func (r *funcRegistry) sorted() []*funcLib {
	out := make([]*funcLib, 0, len(r.libs))
	for _, l := range r.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookup finds a function and its library (with r.mu not held).
func (h *Handler) lookupFunction(ctx context.Context, name string) (*funcLib, *funcDef, error) {
	r, err := h.funcsLoaded(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer r.mu.Unlock()
	lib := r.byName[strings.ToLower(name)]
	if lib == nil {
		return nil, nil, nil
	}
	for i := range lib.funcs {
		if strings.EqualFold(lib.funcs[i].name, name) {
			return lib, &lib.funcs[i], nil
		}
	}
	return nil, nil, nil
}

// merge adds libs to r (replacing those of the same name if replace), answering Redis's error for a collision
// or a limit passed, with r unchanged then.
func (r *funcRegistry) merge(libs []*funcLib, replace, restore bool) string {
	saved, savedBy, savedBytes := maps.Clone(r.libs), maps.Clone(r.byName), r.bytes
	undo := func(msg string) string { r.libs, r.byName, r.bytes = saved, savedBy, savedBytes; return msg }
	for _, lib := range libs {
		if r.libs[lib.name] != nil {
			if !replace {
				if restore { // Redis's texts differ
					return undo("ERR Library " + lib.name + " already exists")
				}
				return undo("ERR Library '" + lib.name + "' already exists")
			}
			r.remove(lib.name)
		}
		for _, f := range lib.funcs {
			if r.byName[strings.ToLower(f.name)] != nil {
				return undo("ERR Function " + f.name + " already exists")
			}
		}
		r.add(lib)
	}
	if len(r.libs) > funcMaxLibraries || r.bytes > funcMaxCodeBytes {
		return undo(errTooManyLibraries.Error())
	}
	return ""
}

// save writes r's libraries to the engine (r.mu held); on failure r is set back to before (with old, the
// libraries then).
func (h *Handler) saveFunctions(ctx context.Context, r *funcRegistry, old map[string]*funcLib) error {
	var payload []byte
	if len(r.libs) > 0 {
		payload = encodeFunctions(r.sorted())
	}
	if err := h.store.SetFunctions(ctx, payload); err != nil {
		r.libs, r.byName, r.bytes = map[string]*funcLib{}, map[string]*funcLib{}, 0
		for _, lib := range old {
			r.add(lib)
		}
		return err
	}
	dropLuaVMs() // as Redis, a new Lua state: nothing of the old libraries stays in one
	return nil
}

// The FUNCTION DUMP payload, Redis 7's: for each library the RDB opcode FUNCTION2 (245) and its code as an RDB
// string, then the RDB version (2 bytes, little-endian; 10 is Redis 7.0's) and a CRC64 (Jones) of all before it
// (8 bytes, little-endian). anykv writes the code uncompressed, where Redis compresses strings longer than 20
// bytes with LZF; it reads both.
const (
	rdbOpcodeFunction2   = 245
	rdbOpcodeFunctionOld = 246
)

func encodeFunctions(libs []*funcLib) []byte {
	var b []byte
	for _, lib := range libs {
		b = append(b, rdbOpcodeFunction2)
		b = rdb.AppendLen(b, uint64(len(lib.code)))
		b = append(b, lib.code...)
	}
	return rdb.Finish(b)
}

var (
	errPayload          = errors.New("ERR DUMP payload version or checksum are wrong")
	errTooManyLibraries = errors.New("ERR too many function libraries: anykv keeps at most 1024 libraries and 16 MiB of their code")
)

// decodeFunctions reads a FUNCTION DUMP payload and loads its libraries, answering Redis's error.
func decodeFunctions(p []byte) ([]*funcLib, string) {
	if len(p) == 0 {
		return nil, ""
	}
	codes, err := readFunctionsPayload(p)
	if err != nil {
		return nil, err.Error()
	}
	libs := make([]*funcLib, 0, len(codes))
	for _, code := range codes {
		lib, msg := loadLibrary(code)
		if msg != "" {
			return nil, msg
		}
		libs = append(libs, lib)
	}
	return libs, ""
}

func readFunctionsPayload(p []byte) ([][]byte, error) {
	if rdb.Check(p) != nil {
		return nil, errPayload
	}
	// The codes together are bounded as the libraries kept are, as they are read: LZF-compressed ones expand up
	// to 88 times, and a 64 MiB payload asked for gigabytes before the limits were checked at the merge.
	body := rdb.NewStream(p[:len(p)-10], rdb.Limits{MaxValue: funcMaxCodeBytes, MaxTotal: funcMaxCodeBytes})
	var codes [][]byte
	for body.More() {
		if len(codes) == funcMaxLibraries {
			return nil, errTooManyLibraries
		}
		switch op, _ := body.Byte(); op {
		case rdbOpcodeFunction2:
		case rdbOpcodeFunctionOld:
			return nil, errors.New("ERR Pre-GA function format not supported")
		default:
			return nil, errors.New("ERR given type is not a function")
		}
		code, err := body.String()
		switch {
		case errors.Is(err, rdb.ErrTooLarge):
			return nil, errTooManyLibraries
		case err != nil:
			return nil, errors.New("ERR Failed loading library payload")
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// funcHelp is FUNCTION HELP's text, Redis 7.0's.
var funcHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}

// cmdFunction is FUNCTION and its subcommands.
func cmdFunction(s *session, args [][]byte) {
	sub := lower(args[1])
	arityOK := map[string]func(n int) bool{
		"load": func(n int) bool { return n >= 3 }, "delete": func(n int) bool { return n == 3 },
		"list": func(n int) bool { return n >= 2 }, "stats": func(n int) bool { return n == 2 },
		"kill": func(n int) bool { return n == 2 }, "help": func(n int) bool { return n == 2 },
		"dump": func(n int) bool { return n == 2 }, "restore": func(n int) bool { return n >= 3 },
		"flush": func(n int) bool { return n <= 3 },
	}[sub]
	switch {
	case arityOK == nil:
		s.w.Error("ERR unknown subcommand '" + clip(args[1]) + "'. Try FUNCTION HELP.")
		return
	case sub == "flush" && !arityOK(len(args)):
		s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try FUNCTION HELP.")
		return
	case !arityOK(len(args)):
		s.w.Error("ERR wrong number of arguments for 'function|" + sub + "' command")
		return
	case sub == "help":
		helpTo(s.w, funcHelp)
		return
	case sub == "kill":
		s.w.Error("NOTBUSY No scripts in execution right now.")
		return
	case sub == "flush" && len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async"):
		s.w.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	case sub == "list":
		if msg := checkFuncListArgs(args); msg != "" {
			s.w.Error(msg)
			return
		}
	case sub == "restore" && len(args) > 4:
		s.w.Error("ERR unknown subcommand or wrong number of arguments for '" + clip(args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	r, err := s.h.funcsLoaded(s.ctx)
	if errors.As(err, new(errUnreadableLibraries)) && sub == "flush" {
		r, err = &s.h.funcs, nil // flushed below: what did not load is dropped
		r.mu.Lock()
		r.loaded = true
	}
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	defer r.mu.Unlock()
	switch sub {
	case "stats":
		s.w.MapHeader(2)
		s.w.BulkString("running_script")
		s.w.Null()
		s.w.BulkString("engines")
		s.w.MapHeader(1)
		s.w.BulkString("LUA")
		s.w.MapHeader(2)
		s.w.BulkString("libraries_count")
		s.w.Int(int64(len(r.libs)))
		s.w.BulkString("functions_count")
		s.w.Int(int64(len(r.byName)))
	case "list":
		s.funcList(r, args)
	case "dump":
		s.w.Bulk(encodeFunctions(r.sorted()))
	case "delete":
		if r.libs[string(args[2])] == nil {
			s.w.Error("ERR Library not found")
			return
		}
		if s.changeFunctions(r, func() string { r.remove(string(args[2])); return "" }) {
			s.w.SimpleString("OK")
		}
	case "flush":
		if s.changeFunctions(r, func() string {
			r.libs, r.byName, r.bytes = map[string]*funcLib{}, map[string]*funcLib{}, 0
			return ""
		}) {
			s.w.SimpleString("OK")
		}
	case "load":
		replace := false
		for _, a := range args[2 : len(args)-1] {
			if !eq(a, "replace") {
				s.w.Error("ERR Unknown option given: " + clip(a))
				return
			}
			replace = true
		}
		lib, msg := loadLibrary(args[len(args)-1])
		if msg != "" {
			s.w.Error(msg)
			return
		}
		if s.changeFunctions(r, func() string { return r.merge([]*funcLib{lib}, replace, false) }) {
			s.w.BulkString(lib.name)
		}
	case "restore":
		policy := "append"
		if len(args) == 4 {
			policy = lower(args[3])
		}
		if policy != "append" && policy != "replace" && policy != "flush" {
			s.w.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
		libs, msg := decodeFunctions(args[2])
		if msg != "" {
			s.w.Error(msg)
			return
		}
		ok := s.changeFunctions(r, func() string {
			if policy == "flush" {
				r.libs, r.byName, r.bytes = map[string]*funcLib{}, map[string]*funcLib{}, 0
			}
			return r.merge(libs, policy == "replace", true)
		})
		if ok {
			s.w.SimpleString("OK")
		}
	}
}

// changeFunctions applies change to r (r.mu held) and writes the libraries to the engine, reporting true, or
// answers change's error or the engine's (r then as before).
func (s *session) changeFunctions(r *funcRegistry, change func() string) bool {
	old := maps.Clone(r.libs)
	if msg := change(); msg != "" {
		s.w.Error(msg)
		return false
	}
	if err := s.h.saveFunctions(s.writeCtx(), r, old); err != nil {
		s.w.Error(errText(err))
		return false
	}
	return true
}

// checkFuncListArgs checks FUNCTION LIST's options, answering Redis's error.
func checkFuncListArgs(args [][]byte) string {
	withCode, pattern := false, false
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "withcode") && !withCode:
			withCode = true
		case eq(args[i], "libraryname") && !pattern:
			if i+1 >= len(args) {
				return "ERR library name argument was not given"
			}
			pattern = true
			i++
		default:
			return "ERR Unknown argument " + clip(args[i])
		}
	}
	return ""
}

// funcList answers FUNCTION LIST (its options checked).
func (s *session) funcList(r *funcRegistry, args [][]byte) {
	withCode := false
	var pat *glob.Pattern
	for i := 2; i < len(args); i++ {
		if eq(args[i], "withcode") {
			withCode = true
		} else {
			pat = glob.Compile([]byte(strings.ToLower(string(args[i+1])))) // matched without case, as Redis
			i++
		}
	}
	var libs []*funcLib
	for _, lib := range r.sorted() {
		if pat == nil || pat.Matches([]byte(strings.ToLower(lib.name))) {
			libs = append(libs, lib)
		}
	}
	w := s.w
	w.ArrayHeader(len(libs))
	for _, lib := range libs {
		n := 3
		if withCode {
			n++
		}
		w.MapHeader(n)
		w.BulkString("library_name")
		w.BulkString(lib.name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		w.ArrayHeader(len(lib.funcs))
		for _, f := range lib.funcs {
			w.MapHeader(3)
			w.BulkString("name")
			w.BulkString(f.name)
			w.BulkString("description")
			if f.hasDesc {
				w.BulkString(f.desc)
			} else {
				w.Null()
			}
			w.BulkString("flags")
			w.SetHeader(len(f.flags))
			for _, fl := range f.flags {
				w.SimpleString(fl)
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.Bulk(lib.code)
		}
	}
}

// fcallMutation checks an FCALL or FCALL_RO and builds the call of its function, as evalMutation does for a
// script, or returns the error to answer.
func (s *session) fcallMutation(args [][]byte, ownLimit bool) (_ engine.Mutation, readOnly bool, errMsg string) {
	lib, def, err := s.h.lookupFunction(s.ctx, string(args[1]))
	switch {
	case err != nil:
		return engine.Mutation{}, false, errText(err)
	case def == nil:
		return engine.Mutation{}, false, "ERR Function not found"
	}
	n, ok := argInt(args[2])
	switch {
	case !ok:
		return engine.Mutation{}, false, "ERR Bad number of keys provided"
	case n < 0:
		return engine.Mutation{}, false, "ERR Number of keys can't be negative"
	case n > int64(len(args)-3):
		return engine.Mutation{}, false, "ERR Number of keys can't be greater than number of args"
	}
	readOnly = strings.HasSuffix(lower(args[0]), "_ro")
	if readOnly && !def.noWrites {
		return engine.Mutation{}, false, "ERR Can not execute a script with write flag using *_ro command."
	}
	return s.scriptMutation(lib.code, funcID(def.name, lib.sha, lib.load), args[2:], int(n), readOnly || def.noWrites,
		ownLimit, "f")
}
