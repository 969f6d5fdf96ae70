package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"anykv/internal/engine"
	"anykv/internal/protocol/resp"
)

// A script's redis library (redis.call and its kin) and how its commands run: see script.go.

// redisLib builds the redis table: redis.call and redis.pcall run through vm.run. Its functions check their
// arguments as Redis 7.0's do, with its errors (raised as error replies: "ERR wrong number of arguments").
func (vm *luaVM) redisLib() *lua.LTable {
	L := vm.L
	call := func(protect bool) lua.LGFunction {
		return func(L *lua.LState) int {
			v, err := vm.run.call(L)
			if err != nil {
				if !errors.Is(vm.fatal, engine.ErrInternal) { // a panic's stays: the batch is refused whatever follows
					vm.fatal = err
				}
				L.RaiseError("%v", err)
			}
			if t, ok := v.(*lua.LTable); ok && !protect {
				if _, isErr := t.RawGetString("err").(lua.LString); isErr {
					L.Error(t, 0) // raise the error reply itself: the script fails with it
				}
			}
			L.Push(v)
			return 1
		}
	}
	// reply is redis.error_reply or redis.status_reply: one string argument, else an error reply (not raised).
	reply := func(field string, text func(string) string) lua.LGFunction {
		return func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Push(luaErrorTable(L, "ERR wrong number or type of arguments", false))
				return 1
			}
			t := L.CreateTable(0, 1)
			t.RawSetString(field, lua.LString(text(string(s))))
			L.Push(t)
			return 1
		}
	}
	r := L.NewTable()
	r.RawSetString("call", L.NewFunction(call(false)))
	r.RawSetString("pcall", L.NewFunction(call(true)))
	r.RawSetString("error_reply", L.NewFunction(reply("err", errorReplyText)))
	r.RawSetString("status_reply", L.NewFunction(reply("ok", func(s string) string { return s })))
	r.RawSetString("sha1hex", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseErr(L, "ERR wrong number of arguments")
		}
		var b []byte // lua_tolstring: a string or a number's text, else nothing
		switch v := L.Get(1).(type) {
		case lua.LString, lua.LNumber:
			b = []byte(v.String())
		}
		L.Push(lua.LString(sha1hex(b)))
		return 1
	}))
	r.RawSetString("log", L.NewFunction(luaLog))
	r.RawSetString("setresp", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseErr(L, "ERR redis.setresp() requires one argument.")
		}
		v := int(lua.LVAsNumber(L.Get(1))) // lua_tointeger: 0 when not a number
		if v != 2 && v != 3 {
			raiseErr(L, "ERR RESP version must be 2 or 3.")
		}
		vm.run.resp = v
		return 0
	}))
	r.RawSetString("acl_check_cmd", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LBool(vm.run.aclCheck(L)))
		return 1
	}))
	r.RawSetString("replicate_commands", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LTrue); return 1 }))
	// What a script replicates (set_repl) means nothing here, with no replicas and every write durable: its
	// argument is checked as Redis 7 checks it, and the script's writes are kept and stored whatever it chose. The
	// debugger's calls do nothing outside a debugging session (anykv has none): breakpoint answers false.
	r.RawSetString("set_repl", L.NewFunction(luaSetRepl))
	r.RawSetString("breakpoint", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LFalse); return 1 }))
	r.RawSetString("debug", L.NewFunction(func(L *lua.LState) int { return 0 }))
	for name, flags := range map[string]int{"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(flags))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(Version))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	for name, lvl := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		r.RawSetString(name, lua.LNumber(lvl))
	}
	return r
}

// luaSetRepl is redis.set_repl(flags) with Redis 7's checks: one argument, read as lua_tonumber reads it (0 for
// what is not a number) and cast to a C int, a combination of REPL_AOF and REPL_REPLICA.
func luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "ERR redis.set_repl() requires two arguments.")
	}
	f := float64(lua.LVAsNumber(L.Get(1)))
	flags := int64(math.MinInt32) // what x86-64 makes of a double an int cannot hold (NaN too)
	if f > math.MinInt32-1 && f < math.MaxInt32+1 {
		flags = int64(f) // truncated, as C casts it
	}
	if flags&^3 != 0 {
		raiseErr(L, "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// luaLog is redis.log(level, message, ...), with Redis's checks; what it logs goes nowhere.
func luaLog(L *lua.LState) int {
	if L.GetTop() < 2 {
		raiseErr(L, "ERR redis.log() requires two arguments or more.")
	}
	level := L.Get(1)
	if _, isNum := level.(lua.LNumber); !isNum {
		if s, isStr := level.(lua.LString); !isStr || lua.LVAsNumber(s) == 0 && strings.TrimSpace(string(s)) != "0" {
			raiseErr(L, "ERR First argument must be a number (log level).")
		}
	}
	if n := int(lua.LVAsNumber(level)); n < 0 || n > 3 {
		raiseErr(L, "ERR Invalid debug level.")
	}
	return 0
}

// luaErrorTable is an error reply as a script sees it: {err=msg}, marked as counted in INFO errorstats already
// (a command's error reply, or a call the script's redis.call refused), as Redis marks it, so that returning it
// does not count it again.
func luaErrorTable(L *lua.LState, msg string, counted bool) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(msg))
	if counted {
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
	}
	return t
}

// luaErrorCounted reports whether v is an error table marked as counted already (luaErrorTable).
func luaErrorCounted(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	return ok && t.RawGetString("ignore_error_stats_update") == lua.LTrue
}

// scriptRun is what a script's redis.call needs: the batch, the script's own handler (it compiles commands), its
// database and mode, the handler that runs it (nil when gone), and the events and messages it sent so far.
type scriptRun struct {
	s        *session // what its commands compile in (session)
	tx       *engine.Tx
	h        *Handler
	db       int
	readOnly bool
	host     *Handler
	out      []keyEvent
	// monitor: a monitor was on when the script was sent; the commands it runs are recorded in out for it.
	monitor bool
	// tracker is the id of the tracking client that runs the script, whose reads register their keys (0: none).
	tracker int64
	// user is the ACL user the script's commands are checked as (nil: one who may do everything), caller the
	// connection that ran it (ACL LOG names it; its batch holds what the script restores: dump.go), nil if none.
	user   *aclUser
	caller *session
	// resp is the protocol its commands answer in (redis.setresp): 3, or else 2.
	resp int
	// lim is the interpreter's bounds (nil: none), which the replies the script is handed count against.
	lim *luaLimits
	// args is the call in progress, whose subcommand stat counts it under.
	args [][]byte
}

// call runs one redis.call from a script: the command compiles as on a connection and its mutations apply
// through tx. It returns the reply as a Lua value (an {err=} table for an error reply), or the batch's own failure.
// As in Redis, each command the script calls counts in INFO commandstats, and each error reply it gets (or each
// call refused here) in errorstats (stat).
//
// A Go panic on the way (a defect of anykv's, in the command or the engine's batch) comes back as an error
// wrapping engine.ErrInternal, logged with its stack: gopher-lua's PCall would turn it into a Lua error that the
// script could catch, and the batch, half-changed by the mutation that panicked, would commit; runScript refuses
// the batch instead, as engine.Resolve refuses any batch that panics. The script's own Lua errors raised in here
// (the time and memory limits) pass through.
func (r *scriptRun) call(L *lua.LState) (v lua.LValue, err error) {
	defer func() {
		if p := recover(); p != nil {
			if _, isLua := p.(*lua.ApiError); isLua {
				panic(p)
			}
			slog.Error("panic in a command a script called; the script's batch is refused, nothing of it applied",
				"panic", p, "stack", string(debug.Stack()))
			v, err = nil, fmt.Errorf("%w: %v", engine.ErrInternal, p)
		}
	}()
	return r.callCommand(L)
}

// callCommand is call without its recover.
func (r *scriptRun) callCommand(L *lua.LState) (lua.LValue, error) {
	tx, readOnly := r.tx, r.readOnly
	args, msg := luaCallArgs(L)
	if msg != "" {
		return luaErrorTable(L, msg, false), nil
	}
	r.args = args // for stat
	n := len(args)
	s := r.session()
	cmd := s.lookup(args[0])
	refuse := func(msg string) lua.LValue { // a call refused before it ran
		r.stat(cmd, true, msg)
		return luaErrorTable(L, msg, true)
	}
	failed := func(msg string) lua.LValue { // a call that ran and failed
		r.stat(cmd, false, msg)
		return luaErrorTable(L, msg, true)
	}
	name := lower(args[0])
	// Checked in Redis 7's order (scriptCall): the command, its arity, whether scripts may run it, the user's
	// rules, whether a read-only script may (a write, or a command Redis may replicate); then the command's own.
	arityOK := cmd != nil && !(cmd.arity > 0 && n != cmd.arity || cmd.arity < 0 && n < -cmd.arity) &&
		subArityError(cmd, args) == "" // a container's subcommand by its own arity, as Redis looks it up
	switch {
	case cmd == nil:
		return refuse("ERR Unknown Redis command called from script"), nil
	case !arityOK:
		return refuse("ERR Wrong number of args calling Redis command from script"), nil
	case name == "time" || name == "ping" || name == "select" || name == "publish" || name == "spublish":
	case cmd.data == nil && (!cmd.inScript || r.host == nil), cmd.tx != nil, cmd.name == "debug": // cmd.tx: EVAL and its kin
		return refuse("ERR This Redis command is not allowed from script"), nil
	}
	if s.user != nil { // ACL, as Redis checks a script's call: after the command's name and arity
		if res, _ := s.aclDeny(cmd, args); res != aclOK {
			return refuse(scriptNoperm[res]), nil
		}
	}
	if readOnly && (cmd.flags&flagWrite != 0 || name == "pfcount" || name == "publish" || name == "spublish") {
		return refuse("ERR Write commands are not allowed from read-only scripts."), nil // and may-replicate ones
	}
	shown := func() { // a command that passed the checks is shown to monitors, as Redis's call() feeds them
		if r.monitor {
			r.out = append(r.out, keyEvent{monitor: true, db: r.db, args: copyArgs(args)})
		}
	}
	switch name {
	case "time": // the batch's time, so the script stays deterministic
		shown()
		r.stat(cmd, false, "")
		now := tx.Now()
		t := L.CreateTable(2, 0)
		t.RawSetInt(1, lua.LString(strconv.FormatInt(now/1000, 10)))
		t.RawSetInt(2, lua.LString(strconv.FormatInt(now%1000*1000, 10)))
		return t, nil
	case "ping": // PING or PING msg, as on a connection
		shown()
		cmdPing(s, args)
		return r.reply(L, cmd, s.w.Bytes()), nil
	case "select": // as in Redis 7: the database of the script's later commands, not the caller's
		shown()
		if msg := s.selectDB(args[1]); msg != "" {
			return failed(msg), nil
		}
		r.db = s.db
		r.stat(cmd, false, "")
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString("OK"))
		return t, nil
	case "publish", "spublish":
		shown()
		r.stat(cmd, false, "")
		return scriptPublish(L, r.host, name == "spublish", args, &r.out), nil
	}
	if (cmd.immIf != nil || cmd.name == "xread") && hasBlock(args) { // XREAD's and XREADGROUP's BLOCK: no script waits
		return failed("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts"), nil
	}
	shown()
	if r.tracker != 0 && r.host != nil && cmd.flags&flagReadonly != 0 {
		if keys := cmd.keys(args); len(keys) > 0 { // before the read, as a connection's (tracking.go)
			r.host.trackKeysOf(r.tracker, keys)
		}
	}
	if cmd.data == nil { // KEYS, SCAN, RANDOMKEY, DBSIZE, ECHO, XREAD: over the keys the batch sees
		s.tx, s.cursors = tx, &r.host.cursors
		cmd.imm(s, args)
		if r.lim != nil { // KEYS or DBSIZE may have stopped at the time limit (scriptTimeUp): the script stops too
			r.lim.checkCtx(L)
		}
		return r.reply(L, cmd, s.w.Bytes()), nil
	}
	s.compile(cmd, args) // with the probes of keyspace events, when the caller wants them (h.sink)
	res, err := tx.Apply(s.batch.Muts())
	if errors.Is(err, engine.ErrOutsideTable) { // MOVE or COPY ... DB to another database, or a flush: refused, nothing applied
		return failed("ERR a script may write keys of its own database only, and may not flush"), nil
	}
	if err != nil && !errors.Is(err, engine.ErrAborted) {
		return nil, err
	}
	s.writeReplies(res, err)
	return r.reply(L, cmd, s.w.Bytes()), nil
}

// luaCallArgs reads the arguments of redis.call (or redis.acl_check_cmd): at least one, each a string or a
// number, else Redis's error.
func luaCallArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "ERR Please specify at least one argument for this redis lib call"
	}
	args := make([][]byte, n)
	for i := range args {
		b, ok := luaArg(L.Get(i + 1))
		if !ok {
			return nil, "ERR Lua redis lib command arguments must be strings or integers"
		}
		args[i] = b
	}
	return args, ""
}

// aclCheck is redis.acl_check_cmd(command, arg...): whether the script's user may run that command with those
// arguments (nothing is logged).
func (r *scriptRun) aclCheck(L *lua.LState) bool {
	args, msg := luaCallArgs(L)
	if msg != "" {
		raiseErr(L, msg)
	}
	s := r.session()
	cmd := s.lookup(args[0])
	if cmd == nil {
		raiseErr(L, "ERR Invalid command passed to redis.acl_check_cmd()")
	}
	if s.user == nil || s.user.get().full {
		return true
	}
	if cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity {
		return false // its keys cannot be found (Redis answers false to a user that is not allowed everything)
	}
	res, _ := s.user.get().check(cmd, args)
	return res == aclOK
}

// stat records, for INFO commandstats and errorstats, a command the script called (cmd; nil when unknown):
// refused before it ran (rejected) or run, and the error it answered or was refused with (msg, "" if none).
// They are counted once the script is done (scriptNotes), so that a script run again counts once.
func (r *scriptRun) stat(cmd *command, rejected bool, msg string) {
	e := keyEvent{stat: true, cmd: cmd, rejected: rejected, errReply: msg}
	if cmd != nil {
		e.slot, e.slotOK = statSlot(cmd, r.args)
	}
	r.out = append(r.out, e)
}

// reply converts a command's reply for the script (lua) and records the call (stat).
func (r *scriptRun) reply(L *lua.LState, cmd *command, reply []byte) lua.LValue {
	msg := ""
	if len(reply) > 0 && reply[0] == '-' {
		msg, _, _ = strings.Cut(string(reply[1:]), "\r\n")
	}
	r.stat(cmd, false, msg)
	return r.lua(L, reply)
}

// session returns the session the script's commands compile in, emptied: one for all of a script's calls (one
// each was a sixth of what a BullMQ script allocated). Its replies are in the protocol the script chose.
func (r *scriptRun) session() *session {
	if r.s == nil {
		ctx := context.Background()
		if r.lim != nil && r.lim.ctx != nil {
			ctx = r.lim.ctx // the script's time limit, which KEYS and DBSIZE check as they go (scriptTimeUp)
		}
		r.s = &session{h: r.h, w: resp.NewWriter(r.resp), db: r.db, authed: true, ctx: ctx, inScript: true,
			user: r.user, scriptCaller: r.caller, noBlock: true} // BLMPOP and BZMPOP answer at once, as in Redis
		return r.s
	}
	s := r.s
	s.w.Reset()
	s.w.SetProto(r.resp)
	s.batch.Reset()
	s.tx, s.cursors = nil, nil
	return s
}

// lua converts a command's reply for the script, as RESP2 or RESP3 (redis.setresp): an {err=} table when it
// cannot be read.
//
// What the reply becomes counts against the script's memory limit (lua_limits.go), a value at luaValueCost: a
// script keeps what its calls answer as easily as what it builds. The values a batch reads are bounded apart
// (engine.MaxBatchRead), but not the key names KEYS and SCAN list: a loop keeping KEYS * over 100,000 keys took
// the server 5 GB past the limit in one request.
func (r *scriptRun) lua(L *lua.LState, reply []byte) lua.LValue {
	if r.lim != nil {
		r.lim.mem(L, len(reply)+bytes.Count(reply, []byte("\r\n"))/2*luaValueCost)
	}
	v, _, err := respToLua(L, reply, r.resp == 3)
	if err != nil {
		return luaErrorTable(L, "ERR "+err.Error(), false)
	}
	return v
}
