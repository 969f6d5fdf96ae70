package redis

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Bounds on what one script may do inside a single Go-implemented call. The VM checks the script's context
// (its time limit) between instructions, so a Lua loop is bounded in time; but a library function written in Go
// runs to its end in one instruction. So every such function that can build something large or run long is
// replaced or wrapped here:
//
//   - A string a call builds (string.rep, string.format, table.concat, string.gsub, upper/lower/reverse, the `..`
//     operator, cjson.encode, cmsgpack.pack, struct.pack) may not be longer than luaLimits.maxString: the server's value
//     limit (kv MaxValue, 64 MiB by default), at most luaMaxStringCap. Past it the call raises "string too
//     large". cjson.decode and cmsgpack.unpack are bounded by the size of their input string.
//   - The bytes those calls build are added up over the script, and each time the total passes another MiB
//     (so also at every call that builds a MiB or more) the Go heap is checked: if it would be more than
//     luaMemoryLimit (1 GiB) over the live heap when the script started (measured after the last garbage
//     collection, so without garbage), a collection runs, and if what is live still is, the call raises
//     "script memory limit exceeded". The heap is the whole process's, so this is approximate; it is a guard
//     against a script killing the server, not an accounting.
//   - Pattern matching (lua_pattern.go), cjson and cmsgpack count their steps (weighted by the bytes a step
//     scans) and check the context every luaCheckEvery of them: past the deadline they raise the error the VM
//     raises, so the script ends as any script over its time limit does.
//
// The `..` operator is one VM instruction, but doubling a string 40 times in a loop is 40 instructions and a
// terabyte, so the compiler is handed a script whose `..` are calls to a bounded concatenation (luaConcatAST).

// luaMaxStringCap caps luaLimits.maxString whatever the value limit: Redis's proto-max-bulk-len default.
const luaMaxStringCap = 512 << 20

// luaMemoryLimit is how far (bytes) the heap may grow during a script before a large allocation fails; tests
// lower it.
var luaMemoryLimit atomic.Int64

func init() { luaMemoryLimit.Store(1 << 30) }

const (
	luaCheckEvery = 1 << 12 // steps between two checks of the context
	luaHeapEvery  = 1 << 20 // bytes built between two checks of the heap
)

// luaLimits are one script run's bounds.
type luaLimits struct {
	ctx       context.Context
	maxString int
	heapBase  uint64      // the live heap that is not the script's (see checkHeap)
	steps     int         // work done, in steps
	nextCtx   int         // steps at which the context is next checked
	built     int         // bytes the bounded calls built
	nextHeap  int         // built at which the heap is next checked
	noGCUntil int         // built up to which the last collection proved the script within the limit
	heavy     bool        // the heap had to be collected: see collectAfter
	json      cjsonConfig // cjson's settings, this run's (luajson.go)
}

// init sets lim for a script run within ctx whose strings may be as long as the value limit maxValue.
func (lim *luaLimits) init(ctx context.Context, maxValue int) {
	if maxValue <= 0 || maxValue > luaMaxStringCap {
		maxValue = luaMaxStringCap
	}
	*lim = luaLimits{ctx: ctx, maxString: maxValue, heapBase: heapLive(), nextCtx: luaCheckEvery,
		nextHeap: luaHeapEvery, json: cjsonDefaults}
}

// heapLive is the bytes of heap objects the last garbage collection found live.
func heapLive() uint64 { return readHeapMetric("/gc/heap/live:bytes") }

// heapObjects is the bytes of heap objects now, live or not yet swept.
func heapObjects() uint64 { return readHeapMetric("/memory/classes/heap/objects:bytes") }

func readHeapMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// collectAfter reports whether a garbage collection should run once the script is over (and its data is
// garbage): when its checks had to collect, or it built more than half the memory limit. The next script's
// base is the live heap of the last collection: had that one run while this script's data was live, the next
// script could grow that much further, and so on. A collection costs in proportion to the whole live heap, so
// a script that builds little never causes one; one that builds much but keeps it is then caught by the next
// script's own checks (which collect), a step further at most.
func (lim *luaLimits) collectAfter() bool {
	return lim.heavy || lim.built > int(luaMemoryLimit.Load()/2)
}

// step counts one unit of work, raising the time-limit error once the context is done.
func (lim *luaLimits) step(L *lua.LState) { lim.stepN(L, 1) }

// stepN counts n units of work (a step that scans n bytes), checking the context each luaCheckEvery of them.
func (lim *luaLimits) stepN(L *lua.LState, n int) {
	if lim.steps += n; lim.steps >= lim.nextCtx {
		lim.nextCtx = lim.steps + luaCheckEvery
		lim.checkCtx(L)
	}
}

func (lim *luaLimits) checkCtx(L *lua.LState) {
	if err := scriptDone(lim.ctx); err != nil {
		L.RaiseError("%s", err.Error()) // the VM's own text: runScript sees ctx.Err and answers the time limit
	}
}

// scriptDone is ctx.Err, or context.DeadlineExceeded once ctx's deadline passed even if its timer has not fired
// yet: on a loaded machine the timer's goroutine may run after a whole library call that began before the limit.
func scriptDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// alloc is called before building a string (or structure) of about n bytes: too large, or past the memory
// limit, it raises an error.
func (lim *luaLimits) alloc(L *lua.LState, n int) {
	if n < 0 || n > lim.maxString {
		L.RaiseError("string too large: a script may build at most %d bytes in one call", lim.maxString)
	}
	lim.mem(L, n)
}

// mem is called before allocating about n bytes (of anything): it adds them to what the script built, and each
// time that passes another luaHeapEvery bytes it checks the context and the heap.
func (lim *luaLimits) mem(L *lua.LState, n int) {
	n = max(n, 0)
	if lim.built += n; lim.built < lim.nextHeap {
		return
	}
	lim.nextHeap = lim.built + luaHeapEvery
	lim.checkCtx(L)
	lim.checkHeap(L, n)
}

// checkHeap raises an error if the heap, plus n, is more than luaMemoryLimit over the base, even after a
// collection. A collection is only run when what the script built since the last one could have taken it over
// the limit, so a script near the limit does not collect at every MiB.
func (lim *luaLimits) checkHeap(L *lua.LState, n int) {
	limit := uint64(luaMemoryLimit.Load())
	if heapObjects()+uint64(n) <= lim.heapBase+limit || lim.built <= lim.noGCUntil {
		return
	}
	lim.heavy = true
	runtime.GC() // what looked like too much may be garbage
	live := heapObjects()
	// What is live but the script's is at most all of it (the base may hold garbage of a script before, live
	// at the last collection), and at least what the script did not build (other clients' data may have grown
	// since that collection; the script's other allocations, tables and small strings, are not counted).
	lim.heapBase = min(lim.heapBase, live)
	if own := uint64(lim.built - n); live > own {
		lim.heapBase = max(lim.heapBase, live-own)
	}
	if live+uint64(n) > lim.heapBase+limit {
		L.RaiseError("script memory limit exceeded: it may use at most %d MiB", limit>>20)
	}
	// Until the script has built the room left, what is live cannot be over the limit (but for other clients').
	lim.noGCUntil = lim.built + int(lim.heapBase+limit-live-uint64(n))
}

// installLimits replaces or wraps the stock library functions that could build unbounded results or run
// unbounded time, and removes the base functions a script must not reach.
func installLimits(L *lua.LState, lim *luaLimits) {
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module", "collectgarbage",
		"print", "_printregs", "getfenv", "setfenv", "newproxy"} {
		L.SetGlobal(name, lua.LNil)
	}
	str := L.GetGlobal("string").(*lua.LTable)
	set := func(t *lua.LTable, name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set(str, "rep", func(L *lua.LState) int {
		s, n := L.CheckString(1), L.CheckInt(2)
		if n <= 0 || len(s) == 0 {
			L.Push(lua.LString(""))
			return 1
		}
		if n > lim.maxString/len(s) {
			lim.alloc(L, -1)
		}
		lim.alloc(L, len(s)*n)
		L.Push(lua.LString(strings.Repeat(s, n)))
		return 1
	})
	// The same length as their argument: only the memory check applies.
	for _, name := range []string{"upper", "lower", "reverse"} {
		orig := str.RawGetString(name).(*lua.LFunction).GFunction
		set(str, name, func(L *lua.LState) int { lim.alloc(L, len(L.CheckString(1))); return orig(L) })
	}
	origFormat := str.RawGetString("format").(*lua.LFunction).GFunction
	set(str, "format", func(L *lua.LState) int {
		lim.alloc(L, formatSize(L))
		return origFormat(L)
	})
	installPatterns(L, str, lim)
	tab := L.GetGlobal("table").(*lua.LTable)
	set(tab, "concat", func(L *lua.LState) int { return tableConcat(L, lim) })
	// table.sort's own comparisons (third_party/gopher-lua's LState.SortCompare) count as the bytes two strings
	// may scan, so that a sort of long strings stops at the time limit as pattern matching does.
	L.SortCompare = func(L *lua.LState, a, b lua.LValue) {
		n := 1
		if sa, ok := a.(lua.LString); ok {
			if sb, ok := b.(lua.LString); ok {
				n += min(len(sa), len(sb))
			}
		}
		lim.stepN(L, n)
	}
	msgpack := L.GetGlobal("cmsgpack").(*lua.LTable)
	origPack := msgpack.RawGetString("pack").(*lua.LFunction).GFunction
	set(msgpack, "pack", func(L *lua.LState) int {
		n := 0
		for i := 1; i <= L.GetTop(); i++ {
			n += msgpackSize(L, lim, L.Get(i), 0)
			if n > lim.maxString {
				lim.alloc(L, n)
			}
		}
		lim.alloc(L, n)
		return origPack(L)
	})
	for _, name := range []string{"unpack", "unpack_one", "unpack_limit"} {
		orig := msgpack.RawGetString(name).(*lua.LFunction).GFunction
		set(msgpack, name, func(L *lua.LState) int {
			s, limit, offset := L.CheckString(1), int64(0), int64(0)
			switch name {
			case "unpack_one":
				limit, offset = 1, L.OptInt64(2, 0)
			case "unpack_limit":
				limit, offset = L.CheckInt64(2), L.OptInt64(3, 0)
			}
			if offset >= 0 && offset <= int64(len(s)) && limit >= 0 { // else unpack fails
				lim.mem(L, msgpackCost(L, lim, s[offset:], limit))
			}
			return orig(L)
		})
	}
}

// luaValueCost is about what one decoded value costs in memory (a number: less; a table: luaTableCost).
const luaValueCost = 128

// luaTableCost is what a table a decoder makes (LState.NewTable: room for 32 elements and 32 keys) costs in
// memory, about 3 KiB: counted as a value, a text of empty tables (a byte or two each) took 24 times what the
// memory limit was checked for (an 8 MB cmsgpack argument, 24 GB).
const luaTableCost = 3 << 10

// formatSize is a bound on what string.format answers (third_party/gopher-lua's strFormat, Lua 5.1's
// str_format), reading the format as strFormat does: a byte for each literal byte, and for each directive at
// most its width (two digits) or what its argument prints: a string's bytes (%q: four for one), a number's
// precision and 32 bytes (%f: and every digit of its integer part, 309 for 1e308). It stops where strFormat
// fails. (It counted at most 64 bytes for a number, where %.2f of 1e308 is 312, so a format could build
// several times the string limit.)
func formatSize(L *lua.LState) int {
	f := L.CheckString(1)
	size, arg := 0, 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			size++
			continue
		}
		if i++; i < len(f) && f[i] == '%' {
			size++
			continue
		}
		if arg++; arg > L.GetTop() {
			break // no value: an error
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		num := func() int { // two digits at most: a third is an error
			n := 0
			for k := 0; k < 2 && i < len(f) && f[i] >= '0' && f[i] <= '9'; k++ {
				n, i = n*10+int(f[i]-'0'), i+1
			}
			return n
		}
		width, prec := num(), 6
		if i < len(f) && f[i] == '.' {
			i++
			prec = num()
		}
		if i == len(f) {
			break // no conversion: an error
		}
		v, item := L.Get(arg), 0
		switch f[i] {
		case 's':
			item = 32 // a number's %.14g
			if s, ok := v.(lua.LString); ok {
				item = len(s)
			}
		case 'q':
			item = 4*32 + 2
			if s, ok := v.(lua.LString); ok {
				item = 4*len(s) + 2
			}
		case 'f':
			item = prec + 32
			if x := math.Abs(float64(lua.LVAsNumber(v))); x >= 1 && !math.IsInf(x, 0) {
				item += int(math.Log10(x)) + 1
			}
		default: // another number's conversion, %c, or an error
			item = prec + 32
		}
		size += max(width, item)
	}
	return size
}

// tableConcat is table.concat(t [, sep [, i [, j]]]) as Lua 5.1 has it (Redis's), with its result bounded:
// elements i to j, none past j even when the table is longer, and Lua's error at the first that is not a string
// or a number, a nil past the table's end included (gopher-lua clamped i and j to the table, so a range past it
// answered what the table had, or "").
func tableConcat(L *lua.LState, lim *luaLimits) int {
	tbl := L.CheckTable(1)
	sep := L.OptString(2, "")
	i, j := L.OptInt(3, 1), L.OptInt(4, tbl.Len())
	var parts []string
	size := 0
	for k := i; k <= j; k++ {
		v := tbl.RawGetInt(k)
		if !lua.LVCanConvToString(v) {
			L.RaiseError("invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k)
		}
		s := lua.LVAsString(v)
		if size += len(s) + len(sep); size > lim.maxString {
			lim.alloc(L, size)
		}
		parts = append(parts, s)
		lim.step(L)
	}
	lim.alloc(L, size)
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}

// luaConcat is what the `..` operator calls (see luaConcatAST): Lua's concatenation of its arguments, right to
// left, with the __concat metamethod for operands that are not strings or numbers, and its result bounded.
//
// Called with no arguments it returns none: that is what a script's top-level `...` becomes (see
// luaConcatAST).
func luaConcat(L *lua.LState, lim *luaLimits) int {
	n := L.GetTop()
	if n == 0 {
		return 0
	}
	rhs := L.Get(n)
	for i := n - 1; i >= 1; i-- {
		lhs := L.Get(i)
		if lua.LVCanConvToString(lhs) && lua.LVCanConvToString(rhs) {
			// The run of strings ending at i joins at once, as the VM's OP_CONCAT does.
			k := i
			for k > 1 && lua.LVCanConvToString(L.Get(k-1)) {
				k--
			}
			parts, size := make([]string, 0, i-k+2), 0
			for m := k; m <= i; m++ {
				parts = append(parts, lua.LVAsString(L.Get(m)))
				size += len(parts[len(parts)-1])
			}
			parts = append(parts, lua.LVAsString(rhs))
			lim.alloc(L, size+len(parts[len(parts)-1]))
			rhs, i = lua.LString(strings.Join(parts, "")), k
			continue
		}
		op := L.GetMetaField(lhs, "__concat")
		if op == lua.LNil {
			op = L.GetMetaField(rhs, "__concat")
		}
		if op.Type() != lua.LTFunction {
			bad := lhs // Lua 5.1 names the first operand unless it is a string or a number
			if lhs.Type() == lua.LTString || lhs.Type() == lua.LTNumber {
				bad = rhs
			}
			L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
		}
		L.Push(op)
		L.Push(lhs)
		L.Push(rhs)
		L.Call(2, 1)
		rhs = L.Get(-1)
		L.Pop(1)
	}
	L.Push(rhs)
	return 1
}

// luaConcatName is the upvalue the rewritten script calls for `..`: not a Lua name, so no script can touch it.
const luaConcatName = "(concat)"

// luaConcatAST rewrites a parsed script so that every `a .. b .. c` is a call luaConcatName(a, b, c), and
// wraps it in a chunk whose function prototype FunctionPrototypes[0] is the script, luaConcatName its only
// possible upvalue (runScript sets it):
//
//	local (concat)
//	return function() <the script> end
//
// The script's function is not declared vararg, as the chunk would be: gopher-lua gives a vararg function
// other than the main chunk a hidden local `arg` (taking one of the 200 locals, and a table at each run), so
// the script's top-level `...` (which is empty: a script is called with no arguments) becomes a call of
// luaConcatName with none, which returns none.
func luaConcatAST(chunk []ast.Stmt) ([]ast.Stmt, error) {
	w := concatWalker{}
	w.stmts(chunk)
	if w.deep {
		return nil, errLuaSyntaxLevels
	}
	line := 1
	if len(chunk) > 0 {
		line = chunk[0].Line()
	}
	local := &ast.LocalAssignStmt{Names: []string{luaConcatName}}
	fn := &ast.FunctionExpr{ParList: &ast.ParList{}, Stmts: chunk}
	ret := &ast.ReturnStmt{Exprs: []ast.Expr{fn}}
	for _, n := range []interface{ SetLine(int) }{local, fn, ret} {
		n.SetLine(line)
	}
	fn.SetLastLine(line)
	if len(chunk) > 0 {
		fn.SetLastLine(chunk[len(chunk)-1].LastLine())
	}
	return []ast.Stmt{local, ret}, nil
}

// concatWalker rewrites `..` and the top-level `...`; nested counts the functions it is inside, depth the
// blocks and expressions, and deep says one went past luaMaxSyntaxDepth (the walk stops there).
type concatWalker struct {
	nested, depth int
	deep          bool
}

// luaMaxSyntaxDepth bounds how deep blocks and expressions may nest in a script. gopher-lua's parser keeps its
// own stack, but its compiler (and this walker) recurse once per level: `return {{{...}}}` nested a million deep
// (a 2 MB EVAL) overflowed the goroutine's stack, which ends the process. Lua refuses 200 nested levels ("chunk
// has too many syntax levels"); this bound is higher, because a chain of operators (`1+1+...+1`) or of elseifs is
// as deep here as it is long, where Lua's parser loops over it (Redis runs a chain of 2,000 elseifs).
const luaMaxSyntaxDepth = 5000

// errLuaSyntaxLevels is what compiling a script nested past luaMaxSyntaxDepth answers, Lua's own message.
var errLuaSyntaxLevels = errors.New("chunk has too many syntax levels")

// enter counts one level more, and reports false (and remembers it) past luaMaxSyntaxDepth.
func (w *concatWalker) enter() bool {
	w.depth++
	if w.depth > luaMaxSyntaxDepth {
		w.deep = true
	}
	return !w.deep
}

func concatIdent(e ast.Expr) *ast.IdentExpr {
	f := &ast.IdentExpr{Value: luaConcatName}
	f.SetLine(e.Line())
	f.SetLastLine(e.LastLine())
	return f
}

func (w *concatWalker) stmts(stmts []ast.Stmt) {
	defer func() { w.depth-- }()
	if !w.enter() {
		return
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.AssignStmt:
			w.exprs(s.Lhs)
			w.exprs(s.Rhs)
		case *ast.LocalAssignStmt:
			w.exprs(s.Exprs)
		case *ast.FuncCallStmt:
			s.Expr = w.expr(s.Expr)
		case *ast.DoBlockStmt:
			w.stmts(s.Stmts)
		case *ast.WhileStmt:
			s.Condition = w.expr(s.Condition)
			w.stmts(s.Stmts)
		case *ast.RepeatStmt:
			s.Condition = w.expr(s.Condition)
			w.stmts(s.Stmts)
		case *ast.IfStmt:
			s.Condition = w.expr(s.Condition)
			w.stmts(s.Then)
			w.stmts(s.Else)
		case *ast.NumberForStmt:
			s.Init, s.Limit = w.expr(s.Init), w.expr(s.Limit)
			if s.Step != nil {
				s.Step = w.expr(s.Step)
			}
			w.stmts(s.Stmts)
		case *ast.GenericForStmt:
			w.exprs(s.Exprs)
			w.stmts(s.Stmts)
		case *ast.FuncDefStmt:
			if s.Name != nil { // `function a.b.c:d()`: the name is an expression the compiler recurses into too
				if s.Name.Func != nil {
					s.Name.Func = w.expr(s.Name.Func)
				}
				if s.Name.Receiver != nil {
					s.Name.Receiver = w.expr(s.Name.Receiver)
				}
			}
			w.expr(s.Func)
		case *ast.ReturnStmt:
			w.exprs(s.Exprs)
		}
	}
}

func (w *concatWalker) exprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = w.expr(e)
	}
}

func (w *concatWalker) expr(e ast.Expr) ast.Expr {
	defer func() { w.depth-- }()
	if !w.enter() {
		return e
	}
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		ops := []ast.Expr{e.Lhs} // a .. (b .. c) is one call with three arguments
		rhs := e.Rhs
		for {
			c, ok := rhs.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			ops, rhs = append(ops, c.Lhs), c.Rhs
		}
		ops = append(ops, rhs)
		for i, op := range ops {
			// An operand is one value: a call or `...` giving several gives its first, giving none nil.
			switch op := w.expr(op).(type) {
			case *ast.FuncCallExpr:
				op.AdjustRet = true
				ops[i] = op
			case *ast.Comma3Expr:
				op.AdjustRet = true
				ops[i] = op
			default:
				ops[i] = op
			}
		}
		call := &ast.FuncCallExpr{Func: concatIdent(e), Args: ops, AdjustRet: true}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		return call
	case *ast.Comma3Expr:
		if w.nested == 0 { // the script's own `...`: no values (see luaConcatAST)
			call := &ast.FuncCallExpr{Func: concatIdent(e), AdjustRet: e.AdjustRet}
			call.SetLine(e.Line())
			call.SetLastLine(e.LastLine())
			return call
		}
	case *ast.AttrGetExpr:
		e.Object, e.Key = w.expr(e.Object), w.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = w.expr(f.Key)
			}
			f.Value = w.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = w.expr(e.Func)
		}
		if e.Receiver != nil {
			e.Receiver = w.expr(e.Receiver)
		}
		w.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs), w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs), w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs), w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.nested++
		w.stmts(e.Stmts)
		w.nested--
	}
	return e
}

// msgpackSize is an upper bound on the bytes cmsgpack.pack writes for v, walking as msgpackEncode does (tables
// nested deeper than cmsgpackMaxNesting are nil) and stopping as soon as it passes the string limit.
func msgpackSize(L *lua.LState, lim *luaLimits, v lua.LValue, level int) int {
	lim.step(L)
	switch v := v.(type) {
	case lua.LString:
		return 5 + len(v)
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			return 1
		}
		n := 5
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			n += msgpackSize(L, lim, k, level+1) + msgpackSize(L, lim, val, level+1)
			if n > lim.maxString {
				return n
			}
		}
		return n
	}
	return 9
}

// msgpackCost is about what unpacking the first limit objects of s (0: all) costs in memory, its objects counted
// (stopping at anything malformed, which unpack then reports) at luaValueCost each and its tables at
// luaTableCost, so that unpack's memory can be checked before it builds them. (It counted all of s for
// unpack_one, so a loop of unpack_one over s took time and counted memory in the square of its length.)
func msgpackCost(L *lua.LState, lim *luaLimits, s string, limit int64) int {
	count, tables := 0, 0
	var objects, open int // top-level objects begun; objects still to read to end the current one
	for i := 0; i < len(s); count++ {
		if open == 0 {
			if limit > 0 && int64(objects) == limit {
				break
			}
			objects, open = objects+1, 1
		}
		open--
		lim.step(L)
		b := s[i]
		i++
		size := func(n int) int { // a big-endian length of n bytes at i
			if i+n > len(s) {
				return len(s)
			}
			u := 0
			for _, c := range []byte(s[i : i+n]) {
				u = u<<8 | int(c)
			}
			i += n
			return min(u, len(s))
		}
		switch {
		case b&0xf0 == 0x90:
			tables, open = tables+1, open+int(b&0x0f)
		case b&0xf0 == 0x80:
			tables, open = tables+1, open+2*int(b&0x0f)
		case b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3:
		case b&0xe0 == 0xa0:
			i += int(b & 0x1f)
		case b >= 0xcc && b <= 0xcf:
			i += 1 << (b - 0xcc)
		case b >= 0xd0 && b <= 0xd3:
			i += 1 << (b - 0xd0)
		case b == 0xca:
			i += 4
		case b == 0xcb:
			i += 8
		case b >= 0xd9 && b <= 0xdb:
			i += size(1 << (b - 0xd9))
		case b == 0xdc || b == 0xdd: // lengths capped at the input's: each element takes a byte at least
			tables, open = tables+1, open+size(2<<(b-0xdc))
		case b == 0xde || b == 0xdf:
			tables, open = tables+1, open+2*size(2<<(b-0xde))
		default: // bin and ext: unpack fails on them
			return (count+1)*luaValueCost + tables*luaTableCost
		}
	}
	return count*luaValueCost + tables*luaTableCost
}
