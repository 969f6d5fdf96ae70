package redis

import (
	"container/list"
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/protocol/resp"
)

// Scripting (EVAL, EVALSHA, SCRIPT). A script runs inside the engine's batch as the function "redis.eval": its
// redis.call compiles the Redis command exactly as a connection would (the same command table), applies the
// mutations through the function's Tx, and converts the reply for Lua. So a script is atomic and durable as one
// batch, sees its own writes, and runs on every engine. As in Redis (outside cluster mode), a script may write
// keys of its database that it does not declare in KEYS: BullMQ, for one, writes each job's hash under a name
// built from an ID it reads. Such keys are known only once the script ran, which costs the read cache (it answers
// nothing from memory while the script runs), so a script first runs declaring only its KEYS; if it writes
// another key, that run fails with nothing applied, the script is remembered as one that does (by SHA1), and it
// runs again, now and from then on, allowed to write any key (engine.CallArgs.AnyKey). As in Redis, a script
// that fails after writing keeps its writes. A script still running after luaTimeLimit is stopped.

func init() {
	sc := func(c *command) *command { c.groupName = "scripting"; c.firstKey = -1; return c }
	keyed := func(c *command) *command { c.movable, c.flags = numKeys(2), c.flags|flagNoMandatoryKeys; return c }
	register(
		keyed(sc(&command{name: "eval", arity: -3, data: dataEval, tx: txEval, flags: flagWrite, since: "2.6.0", summary: "Executes a server-side Lua script."})),
		keyed(sc(&command{name: "evalsha", arity: -3, data: dataEval, tx: txEval, flags: flagWrite, since: "2.6.0", summary: "Executes a server-side Lua script by SHA1 digest."})),
		keyed(sc(&command{name: "eval_ro", arity: -3, data: dataEval, tx: txEval, flags: flagReadonly, since: "7.0.0", summary: "Executes a read-only server-side Lua script."})),
		keyed(sc(&command{name: "evalsha_ro", arity: -3, data: dataEval, tx: txEval, flags: flagReadonly, since: "7.0.0", summary: "Executes a read-only server-side Lua script by SHA1 digest."})),
		sc(&command{name: "script", arity: -2, imm: cmdScript, since: "2.6.0", summary: "A container for Lua scripts management commands."}),
		keyed(sc(&command{name: "fcall", arity: -3, data: dataEval, tx: txEval, flags: flagWrite, since: "7.0.0", summary: "Invokes a function."})),
		keyed(sc(&command{name: "fcall_ro", arity: -3, data: dataEval, tx: txEval, flags: flagReadonly, since: "7.0.0", summary: "Invokes a read-only function."})),
		sc(&command{name: "function", arity: -2, imm: cmdFunction, since: "7.0.0", summary: "A container for function commands."}),
	)
	engine.RegisterFunc(evalFunc, runScript)
}

const evalFunc = "redis.eval"

// luaTimeLimit is how long a script may run before it is stopped (Redis's lua-time-limit, 5 s); tests lower it.
var luaTimeLimit atomic.Int64

func init() { luaTimeLimit.Store(int64(5 * time.Second)) }

// scriptCache holds the scripts EVAL ran or SCRIPT LOAD loaded, by SHA1, and which of them write keys they do
// not declare (wide). As in Redis 7.4, the scripts EVAL brought are evicted, least recently used first, past
// scriptCacheEvalMax of them (and here also past scriptCacheEvalBytes of source), so that a client sending
// ever new scripts (values built into the script text) cannot fill the memory; SCRIPT LOAD's are kept until
// SCRIPT FLUSH, since a client that loads a script expects EVALSHA to find it.
type scriptCache struct {
	mu        sync.Mutex
	m         map[string][]byte        // every script (memory.go sums them for INFO)
	evals     list.List                // the EVAL-brought scripts' SHA1s, most recently used first
	evalElem  map[string]*list.Element // their elements in evals
	evalBytes int
	wide      map[string]bool
}

const (
	scriptCacheEvalMax   = 500
	scriptCacheEvalBytes = 64 << 20
)

// isWide reports whether the script with this SHA1 was seen writing a key it did not declare.
func (c *scriptCache) isWide(sha string) bool {
	sha = wideKey(sha)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wide[sha]
}

// wideKey is what wide knows a script by: its SHA1, or a function's name and its library's SHA1 (without the
// library's load number, so that reloads of the same code add nothing).
func wideKey(sha string) string {
	if fname, libSHA, _, ok := splitFuncID(sha); ok {
		return fname + "\x00" + libSHA
	}
	return sha
}

// funcID is what a function's call carries where a script's carries its SHA1: the function's name, its
// library's SHA1 and the library's load number (funcLib.load), joined by zero bytes, which no SHA1 holds.
func funcID(name, libSHA string, load uint64) string {
	return name + "\x00" + libSHA + "\x00" + strconv.FormatUint(load, 10)
}

// splitFuncID reads a funcID back; ok is false for a script's SHA1.
func splitFuncID(id string) (name, libSHA string, load uint64, ok bool) {
	name, rest, ok := strings.Cut(id, "\x00")
	if !ok {
		return "", "", 0, false
	}
	libSHA, n, _ := strings.Cut(rest, "\x00")
	load, _ = strconv.ParseUint(n, 10, 64)
	return name, libSHA, load, true
}

func (c *scriptCache) setWide(sha string) {
	sha = wideKey(sha)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[sha]; !ok && !strings.Contains(sha, "\x00") { // "\x00": a function's (funcID)
		return // evicted meanwhile: it will be found wide again if it runs again
	}
	if c.wide == nil {
		c.wide = map[string]bool{}
	}
	c.wide[sha] = true
}

// put adds src (EVAL's if eval, else SCRIPT LOAD's), whose SHA1 is sha, and returns the cache's copy of it.
func (c *scriptCache) put(src []byte, sha string, eval bool) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m, c.evalElem = map[string][]byte{}, map[string]*list.Element{}
	}
	_, known := c.m[sha]
	e := c.evalElem[sha]
	switch {
	case !known:
		c.m[sha] = append([]byte(nil), src...)
		if eval {
			c.evalElem[sha] = c.evals.PushFront(sha)
			c.evalBytes += len(src)
		}
	case e != nil && !eval: // loaded now: kept from now on
		c.evals.Remove(e)
		delete(c.evalElem, sha)
		c.evalBytes -= len(src)
	case e != nil:
		c.evals.MoveToFront(e)
	}
	kept := c.m[sha]
	for c.evals.Len() > 1 && (c.evals.Len() > scriptCacheEvalMax || c.evalBytes > scriptCacheEvalBytes) {
		old := c.evals.Remove(c.evals.Back()).(string)
		c.evalBytes -= len(c.m[old])
		delete(c.m, old)
		delete(c.evalElem, old)
		delete(c.wide, old)
	}
	return kept
}

// get returns the script with this SHA1 (any case); touch marks it used (EVALSHA), for the eviction order.
func (c *scriptCache) get(sha string, touch bool) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sha = strings.ToLower(sha)
	src, ok := c.m[sha]
	if e := c.evalElem[sha]; touch && e != nil {
		c.evals.MoveToFront(e)
	}
	return src, ok
}

func (c *scriptCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.evalElem, c.wide, c.evalBytes = nil, nil, nil, 0
	c.evals.Init()
}

// dataEval compiles a script called outside MULTI into the connection's batch, so that a pipeline of scripts
// (BullMQ's addBulk sends a hundred) commits as one group, with one fsync, rather than one each. A script not
// known to write keys it does not declare runs declaring only its KEYS; if it does write another, the batch fails
// with nothing applied and flush answers its commands one at a time (applyEval): that script runs again, allowed
// to, and is remembered as such. Each script's time limit counts from its own start.
func dataEval(s *session, args [][]byte) {
	m, readOnly, msg := s.evalMutation(args, true)
	if msg != "" {
		s.fail(msg)
		return
	}
	m.Call.AnyKey = !readOnly && s.h.scripts.isWide(string(m.Call.Args[1]))
	s.add(m)
	h := s.h
	s.plan(func(w *resp.Writer, res []engine.Result) {
		writeEvalReply(w, res, nil)
		s.scriptShown = h.scriptNotes(res)
	})
}

// isEval reports whether m is a script's call (dataEval, txEval).
func isEval(m *engine.Mutation) bool { return m.Op == engine.OpCall && m.Call.Name == evalFunc }

// applyEval applies the mutations of one command holding a script's call, for flush's one-at-a-time answers: a
// script that wrote a key it did not declare runs again allowed to (and is remembered as one that does), and a
// failure of the script's batch (a write to another database) becomes the script's error reply, as Redis
// answers it, nothing of it applied.
func (s *session) applyEval(muts []engine.Mutation, i int) ([]engine.Result, error) {
	res, err := s.apply(muts)
	m := &muts[i]
	if errors.Is(err, engine.ErrUndeclaredWrite) && !m.Call.AnyKey {
		s.h.scripts.setWide(string(m.Call.Args[1]))
		m.Call.AnyKey = true
		res, err = s.apply(muts)
	}
	if errors.Is(err, engine.ErrInvalid) {
		res = make([]engine.Result, len(muts))
		res[i].Err = scriptError{msg: scriptBatchErrorText(err)}
		return res, nil
	}
	return res, err
}

// txEval compiles EVAL and its kin queued in a transaction into the transaction's batch, so that the script runs
// in its place among the queued commands, atomically with them, in the database selected there. It may write any
// key of its database (AnyKey): a transaction cannot be run again once a script turns out to write keys it did
// not declare.
func txEval(s *session, args [][]byte) {
	m, readOnly, msg := s.evalMutation(args, false)
	if msg != "" {
		s.fail(msg)
		return
	}
	m.Call.AnyKey = !readOnly
	s.add(m)
	h := s.h
	s.plan(func(w *resp.Writer, res []engine.Result) {
		writeEvalReply(w, res, nil)
		s.scriptShown = h.scriptNotes(res)
	})
}

// evalMutation checks an EVAL, EVALSHA, EVAL_RO or EVALSHA_RO and builds the call of the script (of copies of
// the arguments, the script the cache's own) and whether it is read-only, or returns the error to answer. The
// script's SHA1 is computed once here, and handed on (BullMQ's scripts are up to 40 kB: a hash of one costs
// tens of microseconds). ownLimit makes its time limit count from its own start, not the batch's.
func (s *session) evalMutation(args [][]byte, ownLimit bool) (_ engine.Mutation, readOnly bool, errMsg string) {
	name := lower(args[0])
	if strings.HasPrefix(name, "fcall") {
		return s.fcallMutation(args, ownLimit)
	}
	const noScript = "NOSCRIPT No matching script. Please use EVAL."
	evalsha := strings.HasPrefix(name, "evalsha")
	if evalsha && len(args[1]) != 40 { // as Redis's evalShaCommand, before anything else
		return engine.Mutation{}, false, noScript
	}
	n, ok := argInt(args[2]) // before the script is looked up, as Redis's evalGenericCommand
	switch {
	case !ok:
		return engine.Mutation{}, false, errNotInt
	case n < 0:
		return engine.Mutation{}, false, "ERR Number of keys can't be negative"
	case n > int64(len(args)-3):
		return engine.Mutation{}, false, "ERR Number of keys can't be greater than number of args"
	}
	src, sha := args[1], ""
	if evalsha {
		if src, ok = s.txScripts.get(s.h, string(args[1]), true); !ok {
			return engine.Mutation{}, false, noScript
		}
		sha = strings.ToLower(string(args[1]))
	} else {
		sha = sha1hex(src)
	}
	sb, msg := checkScript(src, sha)
	if msg != "" {
		return engine.Mutation{}, false, msg
	}
	if !evalsha {
		src = s.txScripts.put(s.h, src, sha, true) // once it compiles, as Redis keeps only those
	}
	readOnly = strings.HasSuffix(name, "_ro")
	if readOnly && sb.present && !sb.noWrites {
		return engine.Mutation{}, false, "ERR Can not execute a script with write flag using *_ro command."
	}
	return s.scriptMutation(src, sha, args[2:], int(n), readOnly || sb.noWrites, ownLimit, "")
}

// scriptMutation builds the call of a script (or, with mode "f", of a function: src its library's code, sha the
// function's name, a zero byte and the library's SHA1) given numkeys and the keys and arguments after it in
// rest (n keys), or returns the error to answer.
func (s *session) scriptMutation(src []byte, sha string, rest [][]byte, n int, readOnly, ownLimit bool, mode string) (_ engine.Mutation, _ bool, errMsg string) {
	keys := rest[1 : 1+n]
	for _, k := range keys {
		if len(k) > s.h.store.Limits().MaxKey {
			return engine.Mutation{}, false, "ERR key exceeds maximum allowed size (" + itoa(int64(s.h.store.Limits().MaxKey)) + " bytes)"
		}
	}
	if readOnly {
		mode = "1" + mode
	} else {
		mode = "0" + mode
	}
	if !readOnly && s.h.notifying() {
		mode += "n" // keyspace events wanted: the script's commands collect theirs (keyEvent)
	}
	if ownLimit {
		mode += "p" // its time limit from its own start (a pipeline's scripts), not the transaction's first
	}
	if s.h.monitors.n.Load() > 0 {
		mode += "m" // a monitor is on: the script records the commands it runs for it (scriptRun.monitor)
	}
	if s.w.Proto() >= 3 {
		mode += "3" // the caller's protocol: the result is encoded for it
	}
	fargs := [][]byte{[]byte(sha), []byte(itoa(int64(s.db))), []byte(itoa(int64(s.h.store.Limits().MaxValue))),
		[]byte(itoa(int64(s.h.opts.Databases))), []byte(mode), []byte(itoa(s.h.scriptHost) + "/" + itoa(s.id) + s.scriptTracker() + s.scriptACL())}
	fargs = append(fargs, rest...)
	fargs = append([][]byte{src}, copyArgs(fargs)...) // src is the cache's, never changed
	m := engine.Mutation{Op: engine.OpCall, Table: s.table(), Call: engine.CallArgs{Name: evalFunc, Args: fargs, Keys: copyArgs(keys)}}
	if len(keys) > 0 {
		m.Key = m.Call.Keys[0]
	}
	return m, readOnly, ""
}

// writeEvalReply answers a script's call: its reply, encoded by the script for the caller's protocol, or the
// error.
func writeEvalReply(w *resp.Writer, res []engine.Result, err error) {
	switch {
	case errors.Is(err, engine.ErrInvalid):
		w.Error(scriptBatchErrorText(err))
	case err != nil:
		w.Error(errText(err))
	case res[0].Err != nil:
		if se, ok := res[0].Err.(scriptError); ok && se.counted {
			w.ErrorCounted(se.msg)
		} else {
			w.Error(res[0].Err.Error())
		}
	default:
		w.Raw(res[0].New.Value)
	}
}

// scriptBatchErrorText is the error a script answers whose batch the engine refused (ErrInvalid: it wrote
// another database or flushed).
func scriptBatchErrorText(err error) string {
	return "ERR " + strings.TrimPrefix(err.Error(), engine.ErrInvalid.Error()+": ") + " (a script may write keys of its own database only, and may not flush)"
}

// scriptCacheOp names the well-formed SCRIPT LOAD, EXISTS or FLUSH of args, the subcommands that touch the script
// cache ("" for any other, or a malformed one), for cmdScript and a transaction's view of them (txScript).
func scriptCacheOp(args [][]byte) string {
	switch sub := lower(args[1]); {
	case sub == "load" && len(args) == 3, sub == "exists" && len(args) >= 3:
		return sub
	case sub == "flush" && (len(args) == 2 || len(args) == 3 && (lower(args[2]) == "sync" || lower(args[2]) == "async")):
		return sub
	}
	return ""
}

func cmdScript(s *session, args [][]byte) {
	switch sub, op := lower(args[1]), scriptCacheOp(args); {
	case op == "load":
		sha := sha1hex(args[2])
		if _, msg := checkScript(args[2], sha); msg != "" {
			s.w.Error(msg)
			return
		}
		s.h.scripts.put(args[2], sha, false)
		s.w.BulkString(sha)
	case op == "exists":
		s.w.ArrayHeader(len(args) - 2)
		for _, sha := range args[2:] {
			if _, ok := s.h.scripts.get(string(sha), false); ok {
				s.w.Int(1)
			} else {
				s.w.Int(0)
			}
		}
	case op == "flush":
		s.h.scripts.flush()
		dropLuaVMs()
		s.w.SimpleString("OK")
	case sub == "flush":
		s.w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
	case sub == "kill" && len(args) == 2:
		s.w.Error("NOTBUSY No scripts in execution right now.")
	case sub == "help" && len(args) == 2:
		helpTo(s.w, scriptHelp)
	default:
		s.subcommandError("script", args[1], "load", "exists", "flush", "kill", "help")
	}
}

// checkScript reads src's shebang and compiles it (the compiled form is kept for its runs, by its SHA1 sha),
// answering Redis's error for a malformed shebang or a script that does not compile.
func checkScript(src []byte, sha string) (scriptShebang, string) {
	sb, msg := parseShebang(src)
	if msg != "" {
		return sb, "ERR " + msg
	}
	if _, err := compileScript(sha, src); err != nil {
		return sb, compileErrorText(err)
	}
	return sb, ""
}

// compileErrorText is the error a script that does not compile answers.
func compileErrorText(err error) string {
	return "ERR Error compiling script (new function): user_script: " + firstLine(err.Error())
}

// errorReplyText is the error redis.error_reply(msg) makes, as Redis 7 makes it: the first word of msg (after a
// leading '-') is its code when there is a space, else the code is ERR: "bad" is "ERR bad", "BAD x" stays.
func errorReplyText(msg string) string {
	msg = strings.TrimPrefix(msg, "-")
	code, rest, ok := strings.Cut(msg, " ")
	if !ok {
		code, rest = "ERR", msg
	}
	return code + " " + strings.TrimRight(rest, "\r\n")
}

// versionNum is a version "major.minor.patch" as the number Redis gives scripts: 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	for _, part := range strings.SplitN(v, ".", 3) {
		p, _ := strconv.Atoi(part)
		n = n<<8 | p&0xff
	}
	return n
}

// scriptError is a script's failure, answered as the error reply of EVAL.
type scriptError struct {
	msg string
	// counted: the error reply of a command the script called, counted in INFO errorstats already.
	counted bool
}

func (e scriptError) Error() string { return e.msg }

// runScript is the function "redis.eval": args are the script, its SHA1, the database, the value limit, the
// number of databases, the mode ("0" or "1" for read-only, then "n" if the caller wants keyspace events, "3" if it speaks
// RESP3), the number of the handler that runs it (scriptHost) with "/id" of the connection that ran it and ":id" of
// the tracking client whose reads it registers (session.scriptTracker), numkeys, the keys and the other arguments.
func runScript(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	var collect bool
	res, err := runScriptLua(tx, args, &collect)
	if collect { // once the script's data is garbage: see collectAfter
		runtime.GC()
	}
	return res, err
}

// scriptLimits are the request limits the commands a script calls see: the defaults (the script runs in the
// engine, which does not know the connection's handler).
var scriptLimits = func() *resp.Limits { l := resp.DefaultLimits(); return &l }()

// runScriptLua is runScript but for the collection after it; it sets *collect if one should follow.
func runScriptLua(tx *engine.Tx, args [][]byte, collect *bool) (res engine.Result, err error) {
	if len(args) < 8 {
		return engine.Result{}, engine.ErrInvalid
	}
	src, sha := args[0], string(args[1])
	args = args[1:] // from here on args[1] is the database, args[6] the number of keys
	db, _ := strconv.Atoi(string(args[1]))
	maxValue, _ := strconv.Atoi(string(args[2]))
	databases, _ := strconv.Atoi(string(args[3]))
	readOnly := strings.HasPrefix(string(args[4]), "1")
	proto := 2
	if strings.HasSuffix(string(args[4]), "3") {
		proto = 3
	}
	numKeys, err := strconv.Atoi(string(args[6]))
	if err != nil || numKeys < 0 || numKeys > len(args)-7 {
		return engine.Result{}, engine.ErrInvalid
	}
	keys, argv := args[7:7+numKeys], args[7+numKeys:]
	fname, chunk := "", "user_script"
	var compiled *lua.FunctionProto
	var libLoad uint64
	if strings.Contains(string(args[4]), "f") { // a function: sha is its funcID
		var libSHA string
		fname, libSHA, libLoad, _ = splitFuncID(sha)
		chunk = "user_function"
		compiled, err = compileLibrary(libSHA, src)
	} else {
		compiled, err = compileScript(sha, src)
	}
	if err != nil {
		return engine.Result{Err: scriptError{msg: compileErrorText(err)}}, nil
	}
	// The limits commands bound their work by (SRANDMEMBER's picks, LCS's table) are the defaults.
	h := batchHandler(tx, kv.Limits{MaxValue: maxValue}, databases, scriptLimits)
	host, callerID, tracker := scriptHost(args[5])
	run := &scriptRun{tx: tx, h: h, db: db, readOnly: readOnly, host: host, tracker: tracker}
	run.monitor = strings.Contains(string(args[4]), "m")
	run.user, run.caller, h.acl = scriptACLUser(host, args[5])
	if run.caller == nil { // (scriptACLUser finds it only for a user with rules)
		run.caller = scriptCaller(host, callerID)
	}
	if strings.Contains(string(args[4]), "n") { // the caller wants keyspace events: the commands collect them
		h.collectEvents(&run.out)
	}
	defer func() {
		if err == nil && len(run.out) > 0 { // a script that failed keeps its writes, and sends their events
			res.Extra = run.out
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	limit := time.Duration(luaTimeLimit.Load())
	if limit > 0 { // 0: busy-reply-threshold 0, never stopped
		// A pipeline's script ("p") from its own start; a transaction's from its batch's first script: the
		// scripts of one transaction share the limit (tx.Started).
		start := tx.Started()
		if strings.Contains(string(args[4]), "p") {
			start = time.Now()
		}
		ctx, cancel = context.WithDeadline(ctx, start.Add(limit))
	}
	defer cancel()
	vm := getLuaVM()
	vm.prepare(ctx, maxValue, run, keys, argv, fname != "")
	ok := false
	defer func() {
		*collect = vm.lim.collectAfter()
		vm.release(ok)
	}()
	L := vm.L
	killed := func() engine.Result {
		return engine.Result{Err: scriptError{msg: "ERR Script killed: it ran longer than the script time limit (" +
			limit.String() + "); its writes before that are kept"}}
	}
	// PCall's traceback has one line per frame (third_party/gopher-lua: it had one per tail call, 10 GB of them
	// after `local function f() return f() end` ran to the time limit).
	if fname != "" {
		err = vm.callFunction(compiled, libLoad, fname, keys, argv)
	} else {
		L.Push(vm.closure(compiled))
		err = L.PCall(0, 1, nil)
	}
	if errors.Is(vm.fatal, engine.ErrInternal) { // a command panicked (scriptRun.call): caught by pcall or not
		return engine.Result{}, vm.fatal
	}
	if err != nil {
		if vm.fatal != nil {
			return engine.Result{}, vm.fatal
		}
		if scriptDone(ctx) != nil {
			return killed(), nil
		}
		name := sha
		if fname != "" {
			name = fname
		}
		msg := scriptErrorText(err, chunk) + " script: " + name
		if line := errorLine(err, chunk); line > 0 {
			msg += ", on @" + chunk + ":" + strconv.Itoa(line) + "."
		}
		var ae *lua.ApiError
		counted := errors.As(err, &ae) && luaErrorCounted(ae.Object) // a command's error reply that redis.call raised
		return engine.Result{Err: scriptError{msg, counted}}, nil
	}
	w := resp.NewWriter(proto)
	onError := func(msg string) { run.out = append(run.out, keyEvent{stat: true, errReply: msg}) }
	if err := luaToRESP(ctx, w, L.Get(-1), run.resp == 3, onError); err != nil {
		if scriptDone(ctx) != nil {
			return killed(), nil
		}
		return engine.Result{Err: scriptError{msg: err.Error()}}, nil
	}
	ok = true
	return engine.Result{New: engine.Item{Value: append([]byte(nil), w.Bytes()...)}, NewFound: true}, nil
}

// errorLine is the line a script failed on, found as Redis's error handler finds it: that of the function that
// raised the error, or of its caller when it is not written in Lua (error, redis.call); 0 when neither has one.
// It is read from the traceback PCall recorded (a handler function would need room on the Lua stack, which a
// script that failed by filling it does not leave).
func errorLine(err error, chunk string) int {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return 0
	}
	_, trace, _ := strings.Cut(ae.StackTrace, "stack traceback:\n")
	for i, frame := range strings.SplitN(trace, "\n", 3) {
		frame = strings.TrimSpace(frame)
		if i == 0 && strings.HasPrefix(frame, "[G]") {
			continue
		}
		at, ok := strings.CutPrefix(frame, chunk+":")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(at[:max(strings.IndexByte(at, ':'), 0)])
		return n
	}
	return 0
}

// scriptErrorText is the error a failed script answers: the error reply a redis.call raised, or Lua's message.
func scriptErrorText(err error, chunk string) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		if t, ok := ae.Object.(*lua.LTable); ok {
			if e, isErr := t.RawGetString("err").(lua.LString); isErr {
				return string(e)
			}
		}
		switch v := ae.Object.(type) {
		case lua.LString:
			return "ERR " + firstLine(string(v)) // the chunk is named user_script, as Redis names it
		case lua.LBool, *lua.LNilType: // error(true), error(): Redis's handler makes "ERR " .. tostring(err)
			return "ERR " + v.String()
		}
	}
	return "ERR " + chunk + ": " + firstLine(err.Error())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
