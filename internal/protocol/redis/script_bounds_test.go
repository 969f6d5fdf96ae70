package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestTailCallsStoppedWithoutATraceback: a script that tail-calls itself forever is stopped at the time limit
// with little memory. gopher-lua's traceback of the failing frame held a line per tail call, hundreds of millions
// of them (10 GB) by the 5 s limit.
func TestTailCallsStoppedWithoutATraceback(t *testing.T) {
	c := withTimeLimit(t, 500*time.Millisecond)
	for _, script := range []string{
		"local function f() return f() end return f()",
		"local t = setmetatable({}, {__call = function(self) return self() end}) return t()",
	} {
		var err error
		start := time.Now()
		peak := heapPeak(func() { _, err = c.Eval(ctx, script, nil).Result() })
		if err == nil || !strings.Contains(err.Error(), "Script killed") {
			t.Errorf("%s: %v, want the time limit's error", script, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: answered after %v", script, took)
		}
		if peak > 100<<20 {
			t.Errorf("%s: heap rose by %d MiB", script, peak>>20)
		}
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("serving after the scripts: %v", err)
	}
}

// TestPcallAfterManyTailCallsBuildsASmallTraceback: pcall's error carries a traceback, which had a line per
// tail call of the frames below it (1.2 GB after 20 million).
func TestPcallAfterManyTailCallsBuildsASmallTraceback(t *testing.T) {
	c := withTimeLimit(t, time.Minute) // the race detector's slowness must not stop it first
	var got string
	var err error
	peak := heapPeak(func() {
		got, err = c.Eval(ctx, `local function f(n) if n == 0 then local ok = pcall(error, 'x') return tostring(ok) end
			return f(n - 1) end return f(3000000)`, nil).Text()
	})
	if err != nil || got != "false" || peak > 40<<20 { // 1 MiB with the patch, 126 MiB without
		t.Errorf("pcall after 3,000,000 tail calls: %q, %v, heap rose by %d MiB", got, err, peak>>20)
	}
}

// TestScriptRegistryOverflowFailsTheScriptOnly: a script that passes the interpreter's registry (ten nested calls
// with 5,000 arguments each) fails with its own error, and in a transaction only that command fails. With an
// error handler given to PCall, gopher-lua panicked outside its recover: an internal error that refused the
// whole transaction.
func TestScriptRegistryOverflowFailsTheScriptOnly(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	const script = "local t = {} for i = 1, 5000 do t[i] = i end " +
		"local function f(n, ...) if n == 0 then return select('#', ...) end return 1 + f(n - 1, ...) end return f(10, unpack(t))"
	if err := c.Eval(ctx, script, nil).Err(); err == nil || !strings.Contains(err.Error(), "registry overflow") {
		t.Errorf("ten calls of 5,000 arguments: %v, want the registry overflow error", err)
	}
	cmds, _ := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Eval(ctx, script, nil)
		p.Set(ctx, "b", "1", 0)
		return nil
	})
	if cmds[0].Err() != nil || cmds[1].Err() == nil || cmds[2].Err() != nil {
		t.Errorf("in a transaction: %v / %v / %v, want only the script to fail", cmds[0].Err(), cmds[1].Err(), cmds[2].Err())
	}
	if n := c.Exists(ctx, "a", "b").Val(); n != 2 {
		t.Errorf("%d of the transaction's SETs applied", n)
	}
}

// TestDeeplyNestedScriptIsRefused: a script nested past luaMaxSyntaxDepth is a compile error, where gopher-lua's
// compiler recursed once per level and a 2 MB script of nested braces (a million levels) overflowed the stack,
// which ended the process.
// A long chain of operators below the bound still runs.
func TestDeeplyNestedScriptIsRefused(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	const n = 20_000 // 20 times the bound; without it such a script compiles, and a million levels ended the process
	for _, script := range []string{
		"return " + strings.Repeat("{", n) + strings.Repeat("}", n),
		"return " + strings.Repeat("not ", n) + "1",
		strings.Repeat("do ", n) + strings.Repeat("end ", n),
		"function a" + strings.Repeat(".b", n) + "() end", // the function's name is an expression too
	} {
		_, err := c.Eval(ctx, script, nil).Result()
		if err == nil || !strings.Contains(err.Error(), "too many syntax levels") {
			t.Errorf("%.20s... nested %d deep: %v, want the syntax levels error", script, n, err)
		}
	}
	elseifs := "local x = 2000 if x == 0 then return 0" // Redis runs a chain of 2,000 elseifs
	for i := 1; i <= 2000; i++ {
		elseifs += fmt.Sprintf(" elseif x == %d then return %d", i, i)
	}
	if got, err := c.Eval(ctx, elseifs+" end", nil).Int(); err != nil || got != 2000 {
		t.Errorf("a chain of 2,000 elseifs: %d, %v", got, err)
	}
	sum := "return 1" + strings.Repeat("+1", 500)
	if got, err := c.Eval(ctx, sum, nil).Int(); err != nil || got != 501 {
		t.Errorf("a sum of 501 ones: %d, %v", got, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("serving after the scripts: %v", err)
	}
}

// TestSparseTableIndexAllocatesLittle: one assignment at a high integer index goes to the table's hash part;
// gopher-lua filled the array part with nils up to it (4 GB and 16 s for t[67108863]). Redis answers 0 for its #.
func TestSparseTableIndexAllocatesLittle(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	var got int64
	var err error
	start := time.Now()
	peak := heapPeak(func() {
		got, err = c.Eval(ctx, "local t = {} t[67108863] = 1 return #t + t[67108863]", nil).Int64()
	})
	if err != nil || got != 1 {
		t.Errorf("#t + t[67108863]: %d, %v; want 1 (# of the empty array part is 0, as in Redis)", got, err)
	}
	if peak > 200<<20 {
		t.Errorf("one sparse assignment: heap rose by %d MiB", peak>>20)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// TestSparseTableKeys: the tables of third_party/gopher-lua keep sparse integer keys in their hash part and move
// them into the array part once it reaches them, so a table filled out of order reads, counts, iterates and sorts
// as Lua's (each key once), and a table bigger than the old array bound stays whole.
func TestSparseTableKeys(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for script, want := range map[string]string{
		// filled from the far end first: 5000 and 3000 are sparse until the array reaches them
		`local t = {} t[5000] = 5000 t[3000] = 3000 for i = 1, 4999 do if i ~= 3000 then t[i] = i end end
		 local n = 0 for k, v in pairs(t) do n = n + 1 if k ~= v then return 'bad ' .. k end end
		 local m = 0 for i, v in ipairs(t) do m = m + 1 end
		 t[#t + 1] = 'next'
		 return {#t, n, m, t[5001], t[3000]}`: "[5001 5000 5000 next 3000]",
		// a sparse key overwritten, a gap filled across it, then sorted
		`local t = {} t[2000] = 1 t[2000] = 2 for i = 1, 1999 do t[i] = 2001 - i end table.sort(t)
		 return {#t, t[1], t[2000], t[1000]}`: "[2000 2 2000 1000]",
		// table.insert past the gap, and unpack over it
		`local t = {} t[1500] = 'far' for i = 1, 1498 do table.insert(t, i) end table.insert(t, 'mid')
		 return {#t, t[1499], t[1500], select('#', unpack(t, 1498, 1500))}`: "[1500 mid far 3]",
	} {
		got, err := c.Eval(ctx, script, nil).Result()
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%.60s...: %v, %v; want %s", script, got, err, want)
		}
	}
}

// TestRandomPicksAndLCSInScripts: commands that bound their work by the request limits (SRANDMEMBER,
// HRANDFIELD and ZRANDMEMBER with a count, LCS) answer inside a script too; the script's handler had no limits,
// and they failed with a nil pointer.
func TestRandomPicksAndLCSInScripts(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	c.SAdd(ctx, "s", "a", "b", "c")
	c.HSet(ctx, "h", "f1", "1", "f2", "2")
	c.ZAdd(ctx, "z", goredis.Z{Score: 1, Member: "m1"}, goredis.Z{Score: 2, Member: "m2"})
	c.Set(ctx, "s1", "ohmytext", 0)
	c.Set(ctx, "s2", "mynewtext", 0)
	for script, want := range map[string]int{
		"return #redis.call('srandmember', 's', 2)":  2,
		"return #redis.call('srandmember', 's', -5)": 5,
		"return #redis.call('hrandfield', 'h', 3)":   2,
		"return #redis.call('zrandmember', 'z', -3)": 3,
		"return #redis.call('lcs', 's1', 's2')":      6, // "mytext"
	} {
		if got, err := c.Eval(ctx, script, nil).Int(); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", script, got, err, want)
		}
	}
}

// TestClientSetinfoRefusesSpaces: CLIENT SETINFO's lib-name and lib-ver refuse spaces, newlines and other bytes
// outside '!'..'~', as Redis 7.2: one could forge a line of CLIENT LIST.
func TestClientSetinfoRefusesSpaces(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, v := range []string{"a b", "a\nid=999 addr=6.6.6.6:1234 name=admin", "a\x01"} {
		for _, attr := range []string{"lib-name", "lib-ver"} {
			err := c.Do(ctx, "client", "setinfo", attr, v).Err()
			if err == nil || !strings.Contains(err.Error(), "cannot contain spaces") {
				t.Errorf("CLIENT SETINFO %s %q: %v", attr, v, err)
			}
		}
	}
	if err := c.Do(ctx, "client", "setinfo", "lib-name", "redis-py").Err(); err != nil {
		t.Errorf("a valid lib-name: %v", err)
	}
	list, err := c.ClientList(ctx).Result()
	if err != nil || strings.Count(strings.TrimSpace(list), "\n") != 0 || !strings.Contains(list, "lib-name=redis-py") {
		t.Errorf("CLIENT LIST: %q, %v", list, err)
	}
}

// TestTinyBlockingTimeoutIsOneMillisecond: a positive timeout too small for a millisecond is one (Redis rounds up);
// it was 0, which blocks forever.
func TestTinyBlockingTimeoutIsOneMillisecond(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, cmd := range [][]any{{"blpop", "nolist", "1e-300"}, {"bzpopmin", "nozset", "0.0000001"}} {
		start := time.Now()
		err := c.Do(ctx, cmd...).Err()
		if err == nil || err.Error() != "redis: nil" {
			t.Errorf("%v: %v, want a nil reply", cmd, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%v: answered after %v", cmd, took)
		}
	}
}

// TestBigScriptsAreNotCompiled: a script or library over 4 MiB does not compile (EVAL, SCRIPT LOAD, FUNCTION
// LOAD); compiling takes about a hundred times the source in memory, inside the engine's batch when the compiled
// form is not kept: an EVAL of a 60 MB table constructor took the process from 100 MB to 5.3 GB for 21 s. One
// of 4 MiB runs.
func TestBigScriptsAreNotCompiled(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	pad := func(n int) string { return strings.Repeat("a", n) } // a string literal: cheap to compile either way
	over := "return #'" + pad(maxScriptSource) + "'"
	if _, err := c.Eval(ctx, over, nil).Result(); err == nil || !strings.Contains(err.Error(), "script too large") {
		t.Errorf("EVAL of %d bytes: %v", len(over), err)
	}
	if _, err := c.ScriptLoad(ctx, over).Result(); err == nil || !strings.Contains(err.Error(), "script too large") {
		t.Errorf("SCRIPT LOAD of %d bytes: %v", len(over), err)
	}
	lib := "#!lua name=big\nredis.register_function('f', function() return 1 end) -- " + pad(maxScriptSource)
	if _, err := c.FunctionLoad(ctx, lib).Result(); err == nil || !strings.Contains(err.Error(), "script too large") {
		t.Errorf("FUNCTION LOAD of %d bytes: %v", len(lib), err)
	}
	under := "return #'" + pad(maxScriptSource-10) + "'"
	if got, err := c.Eval(ctx, under, nil).Int(); err != nil || got != maxScriptSource-10 {
		t.Errorf("EVAL of %d bytes: %d, %v", len(under), got, err)
	}
}

// TestStructPackIsBoundedByTheStringLimit: struct.pack builds at most the value limit, as string.rep and the other
// calls that build strings do ("string too large"). It was not bounded: one call of 's' options over big strings
// built 600 MB (the process went to 2.9 GB), and 8,000 arguments of 64 MiB would be 512 GB.
func TestStructPackIsBoundedByTheStringLimit(t *testing.T) {
	c := startServer(t, Options{}, 0).client(t, nil) // a value limit of 1 MiB
	for _, script := range []string{
		"local s = string.rep('a', 600000) return #struct.pack('ss', s, s)",
		"local s = string.rep('a', 600000) return #struct.pack('c0c0', s, s)",
		"local s = string.rep('a', 100000) return #struct.pack(string.rep('x', 1000000) .. 's', s)",
		"return #struct.pack(string.rep('x', 1048570) .. 'i8', 1)", // small options past the limit
	} {
		if n, err := c.Eval(ctx, script, nil).Int(); err == nil || !strings.Contains(err.Error(), "string too large") {
			t.Errorf("%s: %d, %v; want the string limit's error", script, n, err)
		}
	}
	if n, err := c.Eval(ctx, "local s = string.rep('a', 600000) return #struct.pack('>!4 i2 s', 7, s)", nil).Int(); err != nil || n != 600003 {
		t.Errorf("a pack within the limit: %d, %v", n, err)
	}
}

// TestTableSortStoppedAtTheTimeLimit: table.sort, one call in Go, is stopped at the time limit like the other
// library calls that can run long: without a comparison function it compared in Go without ever looking at the
// clock, and sorting 4,000 substrings of one 1 MB string (each comparison scanning a megabyte) ran for seconds
// past a limit of 100 ms (a comparison of long strings now checks the limit itself, and those of shorter ones
// are memcmp's speed: 40,000 substrings of a 60 KB string take seconds); substrings of 60 MB would hold every write for hours. With a comparison function, and
// a sort that fits the limit, nothing changes.
func TestTableSortStoppedAtTheTimeLimit(t *testing.T) {
	c := withTimeLimit(t, 100*time.Millisecond)
	fill := func(n, m int) string { // m substrings of a string of n bytes, shuffled
		return fmt.Sprintf("local s = string.rep('a', %d) local t = {} for i = 1, %d do t[i] = s:sub(i) end "+
			"for i = #t, 2, -1 do local j = math.random(i) t[i], t[j] = t[j], t[i] end ", n, m)
	}
	killedWithin(t, c, 700*time.Millisecond, fill(1000000, 20000)+"table.sort(t) return #t",
		fill(60000, 40000)+"table.sort(t) return #t", // comparisons of 20-60 KB: seconds of them
		fill(1000000, 20000)+"table.sort(t, function(a, b) return a < b end) return #t")
	got, err := c.Eval(ctx, "local t = {} for i = 1, 1000 do t[i] = (i * 7919) % 1000 end table.sort(t) "+
		"local u = {'b', 'c', 'a'} table.sort(u, function(x, y) return x > y end) return {t[1], t[1000], u[1], u[3]}", nil).Slice()
	if err != nil || fmt.Sprint(got) != "[0 999 c a]" {
		t.Errorf("sorts within the limit: %v, %v", got, err)
	}
}

// TestLongStringComparisonsStoppedAtTheTimeLimit: a loop comparing long strings stops near the time limit. The
// interpreter checks the limit every 1,024 instructions, and a comparison (<, <=, ==) of two long strings is one
// instruction: gopher-lua compared them a byte at a time in Go, about 3 ms a megabyte, so a loop of comparisons
// of 1 MB strings ran a second past a 100 ms limit (of 60 MB strings, 48 s past a 5 s one). They now compare as
// memcmp does, and a comparison of long strings checks the limit at once.
func TestLongStringComparisonsStoppedAtTheTimeLimit(t *testing.T) {
	c := withTimeLimit(t, 100*time.Millisecond)
	loop := func(setup, cmp string) string { // a loop of two instructions a comparison
		return "local s = string.rep('a', 1000000) " + setup + " while true do " + strings.Repeat("if "+cmp+" then end ", 16) + "end"
	}
	killedWithin(t, c, 500*time.Millisecond,
		loop("local u = s:sub(2)", "s < u"), loop("local u = s:sub(2)", "s <= u"),
		loop("local u = s:sub(1, -2) .. 'b'", "s == u"))
	got, err := c.Eval(ctx, "return {tostring('a' < 'b'), tostring('ab' < 'a'), tostring('a\\0b' < 'a\\0c'), "+
		"tostring('a' <= 'a'), tostring('\\255' > 'z'), tostring('' < '\\0')}", nil).StringSlice()
	if err != nil || strings.Join(got, " ") != "true false true true true true" {
		t.Errorf("comparisons: %v, %v", got, err)
	}
}
