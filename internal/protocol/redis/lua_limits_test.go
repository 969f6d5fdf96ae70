package redis

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestScriptBuildsNoHugeString: each way a script could build a huge string in one Go call (or a few VM
// instructions) answers an error instead of taking the server's memory, and the server goes on serving. The
// test server's value limit is 1 MiB, which is then the largest string a call may build.
func TestScriptBuildsNoHugeString(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, script := range []string{
		"return #string.rep('x', 2^40)",
		"return #string.rep('abc', 2^31)",
		"local s = 'x' for i = 1, 40 do s = s .. s end return #s",
		"local s = string.rep('x', 2^19) return #(s .. s .. s)",
		"local s = string.rep('x', 2^19) return #string.format('%s%s%s', s, s, s)",
		"return #string.format('%q', string.rep('\\0', 2^18))",
		"local t = {} for i = 1, 4000 do t[i] = 1e308 end return #string.format(string.rep('%.2f', 4000), unpack(t))",
		"local t = {} for i = 1, 20 do t[i] = string.rep('x', 2^16) end return #table.concat(t)",
		"local t = {'a', 'b'} return #table.concat(t, string.rep('-', 2^21))",
		"return #string.gsub(string.rep('x', 2^14), 'x', string.rep('y', 100))",
		"return #string.gsub(string.rep('x', 2^14), 'x', '%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0%0')",
		"local t = {} for i = 1, 21 do t = {t, t} end return #cjson.encode(t)",
		"local t = {} for i = 1, 10 do t[i] = i end for l = 1, 8 do local u = {} for i = 1, 10 do u[i] = t end t = u end return #cmsgpack.pack(t)",
		"return #string.upper(string.rep('x', 2^21))",
	} {
		start := time.Now()
		_, err := c.Eval(ctx, script, nil).Result()
		if err == nil || !strings.Contains(err.Error(), "string too large") {
			t.Errorf("%s: %v, want a string too large error", script, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: took %v", script, d)
		}
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil || c.Get(ctx, "k").Val() != "v" {
		t.Fatalf("server not serving after refused scripts: %v", err)
	}
	// Within the bounds all of them work.
	got, err := c.Eval(ctx, `return {#string.rep('ab', 1000), #string.format('%5d|%-3s|%.2f', 7, 'x', 1.5),
		table.concat({1, 'a', 2.5}, ','), (string.gsub('hello world', 'o', '0')), 'a' .. 1 .. 'b' .. 2.5}`, nil).Result()
	if err != nil || fmt.Sprint(got) != "[2000 14 1,a,2.5 hell0 w0rld a1b2.5]" {
		t.Fatalf("bounded calls: %v %v", got, err)
	}
}

// TestScriptMemoryLimit: many strings each under the limit, kept together, fail at the memory limit.
func TestScriptMemoryLimit(t *testing.T) {
	c := withScriptMemoryLimit(t, 32<<20)
	_, err := c.Eval(ctx, "local t = {} for i = 1, 200 do t[i] = string.rep('x', 2^20) end return #t", nil).Result()
	if err == nil || !strings.Contains(err.Error(), "script memory limit exceeded") {
		t.Fatalf("200 MiB of strings: %v", err)
	}
	if c.Ping(ctx).Val() != "PONG" {
		t.Fatal("server not serving")
	}
}

// TestScriptTimeLimitStopsLibraryCalls: pattern matching that backtracks without end, and cjson/cmsgpack over
// big shared tables, stop at the script's time limit with its error, as a Lua loop does.
func TestScriptTimeLimitStopsLibraryCalls(t *testing.T) {
	c := withTimeLimit(t, 100*time.Millisecond)
	killedWithin(t, c, 5*time.Second,
		"local s = string.rep('a', 3000) return string.find(s, '.-.-.-b')",
		"local s = string.rep('a', 3000) return s:match('.-.-.-b')",
		"local s = string.rep('a', 3000) return string.gsub(s, '.-.-.-b', '')",
		"local s = string.rep('a', 3000) for m in s:gmatch('.-.-.-b') do end return 1",
		"local s = string.rep('a', 3000) return string.find(s, '(.*)(.*)(.*)(.*)b')",
		"local s = string.rep('a', 3000) while true do pcall(string.find, s, '.-.-.-b') end",
	)
	// One call over 2^15 shared tables builds less than the 1 MiB limit, but takes longer than 1 ms (2 ms it did
	// not always, on an idle machine).
	luaTimeLimit.Store(int64(time.Millisecond))
	for _, f := range []string{"cjson.encode", "cmsgpack.pack"} {
		script := "local t = {} for i = 1, 15 do t = {t, t} end return #" + f + "(t)"
		if _, err := c.Eval(ctx, script, nil).Result(); err == nil || !strings.Contains(err.Error(), "Script killed") {
			t.Errorf("%s: %v, want the time limit's error", script, err)
		}
	}
	if c.Ping(ctx).Val() != "PONG" {
		t.Fatal("server not serving")
	}
}

// TestScriptSandboxGlobals: what Redis does not give scripts (or what reaches the server's files, stdout or
// compiler) is not there.
func TestScriptSandboxGlobals(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, name := range []string{"_printregs", "print", "dofile", "loadfile", "load", "loadstring", "require",
		"module", "collectgarbage", "getfenv", "setfenv", "newproxy", "os", "io", "debug", "package"} {
		got, err := c.Eval(ctx, "return tostring(rawget(_G, '"+name+"'))", nil).Result()
		if err != nil || got != "nil" {
			t.Errorf("rawget(_G, %q) = %v %v, want nil", name, got, err)
		}
	}
	// The function `..` calls is not reachable by any name.
	got, err := c.Eval(ctx, "local n = 0 for k in pairs(_G) do n = n + 1 end return {type(rawget(_G, '(concat)')), n > 10}", nil).Result()
	if err != nil || fmt.Sprint(got) != "[nil 1]" {
		t.Fatalf("globals: %v %v", got, err)
	}
}

// TestLuaPatterns: the pattern functions behave as Lua 5.1's (the matcher is a port of it).
func TestLuaPatterns(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, tc := range []struct{ expr, want string }{
		{"string.find('hello world', 'o w')", "5 7"},
		{"string.find('hello', 'l+')", "3 4"},
		{"string.find('hello', 'xyz')", "nil"},
		{"string.find('a.b', '.', 1, true)", "2 2"},
		{"string.find('hello', 'l', -2)", "4 4"},
		{"string.find('key:123:x', '(%d+)')", "5 7 123"},
		{"string.find('abc', '()b()')", "2 2 2 3"},
		{"string.match('key:123', '^(%a+):(%d+)$')", "key 123"},
		{"string.match('  trim  ', '^%s*(.-)%s*$')", "trim"},
		{"string.match('f(a(b)c)d', '%b()')", "(a(b)c)"},
		{"string.match('THE (quick) fox', '%f[%a]%a+')", "THE"},
		{"string.match('abcabc', '(abc)%1')", "abc"},
		{"string.match('x=1, y=2', '(%w+)=(%w+)', 5)", "y 2"},
		{"string.match('[a]', '[%[]')", "["},
		{"string.match('a-b', '[a-]+')", "a-"},
		{"string.match('hello', '[^aeiou]+')", "h"},
		{"string.match('2024', '%d?%d?%d%d')", "2024"},
		{"string.gsub('hello world', '(%w+)', '<%1>')", "<hello> <world> 2"},
		{"string.gsub('abc', '', '-')", "-a-b-c- 4"},
		{"string.gsub('hello', 'l', {l='L'})", "heLLo 2"},
		{"string.gsub('a b c', '%a', function(x) if x ~= 'b' then return x:upper() end end)", "A b C 3"},
		{"string.gsub('aaa', 'a', 'b', 2)", "bba 2"},
		{"string.gsub('abc', '^a', 'x')", "xbc 1"},
		{"string.gsub('x', 'x', '%%')", "% 1"},
		{"string.gsub('12', '%d', 7)", "77 2"},
	} {
		got, err := c.Eval(ctx, "local r = {"+tc.expr+"} for i = 1, select('#', "+tc.expr+") do r[i] = tostring(r[i]) end "+
			"return table.concat(r, ' ')", nil).Result()
		if err != nil || got != tc.want {
			t.Errorf("%s = %q %v, want %q", tc.expr, got, err, tc.want)
		}
	}
	got, err := c.Eval(ctx, "local r = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do r[#r+1] = k .. v end "+
		"for w in ('one two'):gmatch('%a+') do r[#r+1] = w end return table.concat(r, ',')", nil).Result()
	if err != nil || got != "a1,b2,one,two" {
		t.Fatalf("gmatch: %v %v", got, err)
	}
	for _, tc := range []struct{ script, want string }{
		{"return string.find('a', '%')", "malformed pattern"},
		{"return string.find('a', '[a')", "missing ']'"},
		{"return string.find('a', '(a')", "unfinished capture"},
		{"return string.match('a', 'a)')", "invalid pattern capture"},
		{"return string.gsub('a', 'a', true)", "string/function/table expected"},
	} {
		if _, err := c.Eval(ctx, tc.script, nil).Result(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.script, err, tc.want)
		}
	}
}

// TestScriptConcat: `..` (rewritten into a bounded call) keeps Lua's results, metamethods, errors and lines.
func TestScriptConcat(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	got, err := c.Eval(ctx, `local mt = {__concat = function(a, b) return 'M' end}
		local x = setmetatable({}, mt)
		local function f(...) return ... end
		return {1 .. 2, 'a' .. 10 / 4, x .. 'a', 'a' .. x, 'p' .. (f('q', 'r')) .. 's', ('a' .. 'b') .. 'c', select('#', f('a' .. 'b', 'c'))}`,
		nil).Result()
	if err != nil || fmt.Sprint(got) != "[12 a2.5 M M pqs abc 2]" {
		t.Fatalf("concatenations: %v %v", got, err)
	}
	_, err = c.Eval(ctx, "local a = 1\nreturn a .. nil", nil).Result()
	if err == nil || !strings.Contains(err.Error(), "user_script:2: attempt to concatenate a nil value") {
		t.Fatalf("concat error: %v", err)
	}
}

// TestScriptCacheEvicts: past 500 scripts brought by EVAL, the least recently used go (EVALSHA then answers
// NOSCRIPT); a script SCRIPT LOAD loaded stays, and one EVALSHA keeps using stays.
func TestScriptCacheEvicts(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	first := c.ScriptLoad(ctx, "return 'first'").Val() // loaded: kept
	if err := c.Eval(ctx, "return 'evicted'", nil).Err(); err != nil {
		t.Fatal(err)
	}
	evicted := sha1hex([]byte("return 'evicted'"))
	if err := c.Eval(ctx, "return 'used'", nil).Err(); err != nil {
		t.Fatal(err)
	}
	used := sha1hex([]byte("return 'used'"))
	pipe := c.Pipeline()
	for i := range scriptCacheEvalMax {
		pipe.Eval(ctx, fmt.Sprintf("return %d", i), nil)
		if i%100 == 0 {
			pipe.EvalSha(ctx, used, nil)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	exists := c.ScriptExists(ctx, first, evicted, used, sha1hex([]byte("return 499"))).Val()
	if fmt.Sprint(exists) != "[true false true true]" {
		t.Fatalf("SCRIPT EXISTS loaded, evicted, used, last = %v", exists)
	}
	if err := c.EvalSha(ctx, evicted, nil).Err(); err == nil || !strings.Contains(err.Error(), "NOSCRIPT") {
		t.Fatalf("EVALSHA of an evicted script: %v", err)
	}
	ts.h.scripts.mu.Lock()
	n, evals := len(ts.h.scripts.m), ts.h.scripts.evals.Len()
	ts.h.scripts.mu.Unlock()
	if n != scriptCacheEvalMax+1 || evals != scriptCacheEvalMax {
		t.Fatalf("cache holds %d scripts, %d of EVAL", n, evals)
	}
}

// TestScriptReplyNesting: a result that holds itself (nested without end) answers Redis's error instead of
// overflowing the Go stack, which kills the process; a deep but finite one converts; one standing for
// billions of elements stops at the time limit.
func TestScriptReplyNesting(t *testing.T) {
	old := luaTimeLimit.Load()
	luaTimeLimit.Store(int64(100 * time.Millisecond))
	t.Cleanup(func() { luaTimeLimit.Store(old) })
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, script := range []string{
		"local a = {} a[1] = a return a",
		"local a = {1, 2} local b = {a} a[3] = b return a",
		"local t = {} for i = 1, 2000 do t = {t} end return t",
	} {
		if _, err := c.Eval(ctx, script, nil).Result(); err == nil || err.Error() != "ERR reached lua stack limit" {
			t.Errorf("%s: %v, want the stack limit error", script, err)
		}
	}
	got, err := c.Eval(ctx, "local t = {'x'} for i = 1, 900 do t = {t} end return t", nil).Result()
	for i := 0; i < 900 && err == nil; i++ {
		a, ok := got.([]any)
		if !ok || len(a) != 1 {
			t.Fatalf("level %d: %v", i, got)
		}
		got = a[0]
	}
	if err != nil || fmt.Sprint(got) != "[x]" {
		t.Fatalf("900 levels: %v %v", got, err)
	}
	start := time.Now()
	_, err = c.Eval(ctx, "local t = {1} for i = 1, 40 do t = {t, t} end return t", nil).Result()
	if err == nil || !strings.Contains(err.Error(), "Script killed") {
		t.Errorf("2^40 elements: %v, want the time limit's error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("2^40 elements: took %v", d)
	}
	if c.Ping(ctx).Val() != "PONG" {
		t.Fatal("server not serving")
	}
}

// TestScriptConcatOperandValues: an operand of `..` is one value, as in Lua: a call or `...` giving several
// gives its first, giving none gives nil (an error). The script's own `...` is empty, and it has no `arg`.
func TestScriptConcatOperandValues(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, tc := range []struct{ script, want string }{
		{"return 'a' .. string.find('abc', 'b')", "a2"},
		{"return string.find('abc', 'b') .. 'a'", "2a"},
		{"local function f(...) return 'a' .. ... end return f('b', 'c')", "ab"},
		{"local function f(...) return ... .. 'x' .. ... end return f('b', 'c')", "bxb"},
		{"local function f() end return tostring(pcall(function() return 'a' .. f() end))", "false"},
		{"local function f() return 'p', 'q' end return select('#', f() .. f(), f())", "3"},
		{"return select('#', ...)", "0"},
		{"local a, b = ... return type(a) .. type(b)", "nilnil"},
		{"return #{...}", "0"},
		{"return tostring(pcall(function(...) return 'a' .. ... end))", "false"},
		{"return tostring((...))", "nil"},
		{"return tostring(rawget(_G, 'arg'))", "nil"},
	} {
		got, err := c.Eval(ctx, tc.script, nil).Result()
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s = %v %v, want %s", tc.script, got, err, tc.want)
		}
	}
	if _, err := c.Eval(ctx, "return 'a' .. ...", nil).Result(); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("'a' .. (no value): %v, want the concatenation error", err)
	}
	// 200 top-level locals: the most Lua allows, and no hidden one takes a place.
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "local v%d = %d\n", i, i)
	}
	b.WriteString("return v200")
	if got, err := c.Eval(ctx, b.String(), nil).Result(); err != nil || got != int64(200) {
		t.Errorf("200 locals: %v %v", got, err)
	}
}

// TestScriptMemoryLimitMediumStrings: strings each just under a MiB (below the size a single call is checked
// at), kept together, fail at the memory limit too.
func TestScriptMemoryLimitMediumStrings(t *testing.T) {
	c := withScriptMemoryLimit(t, 32<<20)
	for _, script := range []string{
		"local t = {} for i = 1, 200 do t[i] = string.rep('x', 1048576 - 16) end return #t",
		"local t = {} for i = 1, 2000 do t[i] = string.rep('x', 2^17) .. i end return #t",
	} {
		_, err := c.Eval(ctx, script, nil).Result()
		if err == nil || !strings.Contains(err.Error(), "script memory limit exceeded") {
			t.Errorf("%s: %v, want the memory limit's error", script, err)
		}
	}
	// Building as much that is garbage at once is fine.
	if got, err := c.Eval(ctx, "local n = 0 for i = 1, 200 do n = n + #string.rep('x', 1048576 - 16) end return n", nil).Result(); err != nil ||
		got != int64(200*(1048576-16)) {
		t.Fatalf("garbage: %v %v", got, err)
	}
}

// TestScriptMemoryLimitNoRatchet: the same script, run again, is refused at about the same size: what the
// previous run kept, now garbage, does not count as what was there before the script.
func TestScriptMemoryLimitNoRatchet(t *testing.T) {
	c := withScriptMemoryLimit(t, 64<<20)
	script := "local t = {} local ok, e = pcall(function() for i = 1, 1e5 do t[i] = string.rep('x', 1048576) end end) " +
		"return {#t, tostring(e)}"
	var counts []int64
	for range 4 {
		got, err := c.Eval(ctx, script, nil).Result()
		r, ok := got.([]any)
		if err != nil || !ok || len(r) != 2 || !strings.Contains(fmt.Sprint(r[1]), "script memory limit exceeded") {
			t.Fatalf("%v %v", got, err)
		}
		counts = append(counts, r[0].(int64))
	}
	t.Logf("strings kept, run after run: %v", counts)
	for _, n := range counts {
		if n < 16 || n > 64+8 || n > counts[0]+8 || n < counts[0]-8 {
			t.Fatalf("strings kept before the limit, run after run: %v (limit: 64 MiB)", counts)
		}
	}
}

// TestScriptTimeLimitWeighsSteps: a pattern step scanning a long class, a long capture compared again, and a
// long gsub replacement expanded at each match count as the bytes they scan: they stop near the time limit.
func TestScriptTimeLimitWeighsSteps(t *testing.T) {
	killedWithin(t, withTimeLimit(t, 100*time.Millisecond), 3*time.Second,
		"local p = '[' .. string.rep('b', 1e6) .. ']' return string.find(string.rep('a', 20000), p)",
		"local p = '%f[' .. string.rep('b', 1e6) .. ']' return string.find(string.rep('a', 20000), p)",
		"return string.gsub(string.rep('a', 5000), '(x*)', string.rep('%1', 5e5))",
		"return string.find(string.rep('a', 2^19), '(.*)%1b')",
	)
}

// withTimeLimit sets the script time limit for the test and returns a client of a fresh server.
func withTimeLimit(t *testing.T, d time.Duration) *goredis.Client {
	old := luaTimeLimit.Load()
	luaTimeLimit.Store(int64(d))
	t.Cleanup(func() { luaTimeLimit.Store(old) })
	// A read waits out the limit (go-redis's 3 s default failed a slow script under -race on a loaded machine),
	// and is not retried: a retry would run the script again.
	return startServer(t, Options{}, 0).client(t, &goredis.Options{ReadTimeout: d + 10*time.Second, MaxRetries: -1})
}

// killedWithin runs each script and wants the time limit's error within d.
func killedWithin(t *testing.T, c *goredis.Client, d time.Duration, scripts ...string) {
	t.Helper()
	for _, script := range scripts {
		start := time.Now()
		_, err := c.Eval(ctx, script, nil).Result()
		if err == nil || !strings.Contains(err.Error(), "Script killed") {
			t.Errorf("%.60s: %v, want the time limit's error", script, err)
		}
		if took := time.Since(start); took > d {
			t.Errorf("%.60s: stopped after %v", script, took)
		}
	}
}

// TestLuaPatternsAsLua51: error texts, recursion depth and NULs in patterns as in Lua 5.1 (and Redis).
func TestLuaPatternsAsLua51(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, tc := range []struct{ script, want string }{
		{"return string.find('a', '%')", "malformed pattern (ends with '%')"},
		{"return string.find('a', 'a%f')", "missing '[' after '%f' in pattern"},
		{"return string.find(string.rep('a', 250000), string.rep('a?', 250000))", "pattern too complex"},
	} {
		_, err := c.Eval(ctx, tc.script, nil).Result()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "%%") {
			t.Errorf("%.60s: %v, want %q", tc.script, err, tc.want)
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{"string.find(string.rep('a', 20000), string.rep('a?', 20000))", "1 20000"},
		{"string.find('a\\0b', 'a\\0.')", "nil"},
		{"string.find('xa\\0.', 'a\\0.')", "2 4"},
		{"string.match('a\\0b', 'a\\0x')", "a"},
		{"string.gsub('aaa', 'a\\0b', 'c')", "ccc 3"},
		{"string.find('ab', '[\\0b]')", "missing ']'"},
	} {
		got, err := c.Eval(ctx, "local r = {"+tc.expr+"} for i = 1, select('#', "+tc.expr+") do r[i] = tostring(r[i]) end "+
			"return table.concat(r, ' ')", nil).Result()
		if err != nil && strings.Contains(err.Error(), tc.want) {
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %q %v, want %q", tc.expr, got, err, tc.want)
		}
	}
}

// TestScriptCJSONEncodeBound: cjson.encode's size bound counts escapes (a control character or DEL is six
// bytes of JSON, a slash two), so a string of a quarter of the limit in them is refused, not built six times over.
func TestScriptCJSONEncodeBound(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, script := range []string{
		"return #cjson.encode(string.rep('\\1', 2^18))",
		"return #cjson.encode({[string.rep('\\127', 2^18)] = 1})",
		"return #cjson.encode({string.rep('/', 2^19)})",
	} {
		if _, err := c.Eval(ctx, script, nil).Result(); err == nil || !strings.Contains(err.Error(), "string too large") {
			t.Errorf("%s: %v, want a string too large error", script, err)
		}
	}
	got, err := c.Eval(ctx, "return {#cjson.encode(string.rep('\\1', 1000)), #cjson.encode(string.rep('\\195\\169', 2^18))}", nil).Result()
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]any{int64(6002), int64(1<<19 + 2)}) {
		t.Fatalf("within the bound: %v %v", got, err)
	}
}

// TestScriptMemoryLimitKeyspaceReads: what KEYS and SCAN answer a script counts against its memory limit, as
// what it builds does: a loop keeping KEYS * (or a SCAN of every key) over 10,000 keys of 100 bytes held the
// key names without limit (5 GB past a 1 GiB limit, over 100,000 keys, in one request). Kept once, they fit.
func TestScriptMemoryLimitKeyspaceReads(t *testing.T) {
	c := withScriptMemoryLimit(t, 32<<20)
	if err := c.Eval(ctx, "local p = string.rep('k', 100) for i = 1, 10000 do redis.call('set', p .. i, '1') end", nil).Err(); err != nil && err != goredis.Nil {
		t.Fatal(err)
	}
	for _, call := range []string{"redis.call('keys', '*')", "redis.call('scan', '0', 'count', '100000')[2]"} {
		got, err := c.Eval(ctx, "local t = {} for i = 1, 100 do t[i] = "+call+" end return #t", nil).Result()
		if err == nil || !strings.Contains(err.Error(), "script memory limit exceeded") {
			t.Errorf("keeping %s 100 times: %v %v, want the memory limit's error", call, got, err)
		}
		if got, err := c.Eval(ctx, "return #"+call, nil).Result(); err != nil || got != int64(10000) {
			t.Errorf("%s once: %v %v", call, got, err)
		}
	}
}

// TestScriptDecodedTablesCount: the tables cjson.decode and cmsgpack.unpack make count at what they cost (about 3
// KiB each) against the memory limit: counted as any value (128 bytes), a text of empty tables, a byte or three
// each, took 24 times the limit (40,000 of them: 120 MiB under a 32 MiB limit).
func TestScriptDecodedTablesCount(t *testing.T) {
	c := withScriptMemoryLimit(t, 32<<20)
	const n = 40000
	msgpack := "\xdd\x00\x00\x9c\x40" + strings.Repeat("\x90", n)
	json := "[" + strings.Repeat("[],", n-1) + "[]]"
	for _, call := range []string{"cmsgpack.unpack(ARGV[1])", "cjson.decode(ARGV[2])"} {
		_, err := c.Eval(ctx, "return #"+call, nil, msgpack, json).Result()
		if err == nil || !strings.Contains(err.Error(), "script memory limit exceeded") {
			t.Errorf("%s of %d empty tables: %v, want the memory limit's error", call, n, err)
		}
		got, err := c.Eval(ctx, "return #"+call, nil, "\xdd\x00\x00\x03\xe8"+strings.Repeat("\x90", 1000), "[[]"+strings.Repeat(",[]", 999)+"]").Result()
		if err != nil || got != int64(1000) {
			t.Errorf("%s of 1,000 empty tables: %v %v", call, got, err)
		}
	}
}

// TestCMsgpackUnpackOneCountsItsObjects: unpack_one and unpack_limit count against the memory limit the objects
// they read, not all of their input: reading 20,000 objects one by one counted (and scanned) the whole input at
// each, 400 million objects, 51 GB.
func TestCMsgpackUnpackOneCountsItsObjects(t *testing.T) {
	vm := newFuzzVM(1 << 20)
	defer vm.release(false)
	const n = 20000
	rets, msg := luaFuzzRun(t, vm, `local off, n, v = 0, 0 while off ~= -1 do off, v = cmsgpack.unpack_one(KEYS[1], off) n = n + v end
		off = 0 while off ~= -1 do off = cmsgpack.unpack_limit(KEYS[1], 1000, off) end return n`, strings.Repeat("\x01", n))
	if msg != "" || len(rets) != 1 || rets[0].String() != "20000" {
		t.Fatalf("unpack_one over %d objects: %v %s", n, rets, msg)
	}
	if vm.lim.built > 4*n*luaValueCost {
		t.Errorf("unpack_one and unpack_limit over %d objects counted %d bytes", n, vm.lim.built)
	}
}

// withScriptMemoryLimit sets the scripts' memory limit for the test and returns a client of a new server.
func withScriptMemoryLimit(t *testing.T, limit int64) *goredis.Client {
	old := luaMemoryLimit.Load()
	luaMemoryLimit.Store(limit)
	t.Cleanup(func() { luaMemoryLimit.Store(old) })
	c := startServer(t, Options{}, 0).client(t, nil)
	// A script's base is the live heap of the last collection, which may hold an earlier test's data freed since:
	// the first script could then grow by that much more (a shuffled run kept 112 MiB under a 64 MiB limit).
	runtime.GC()
	return c
}

// TestScriptKeysStopAtTheTimeLimit: a script's KEYS and DBSIZE over a big keyspace stop at the script's time
// limit as they go (every 10,000 keys), not once they listed every key: the script's deadline was checked only
// between its calls. Each runs first without a limit, to know how long the whole call takes here, then under a
// tenth of that: it must end in well under the whole time (200,000 keys: KEYS 240 ms in all under -race, stopped
// after 32 ms).
func TestScriptKeysStopAtTheTimeLimit(t *testing.T) {
	old := luaTimeLimit.Load()
	t.Cleanup(func() { luaTimeLimit.Store(old) })
	ts := startServer(t, Options{}, 0)
	rc := ts.raw(t)
	const keys = 200000
	for i := 0; i < keys; i += 10000 {
		args := []string{"MSET"}
		for j := i; j < i+10000; j++ {
			args = append(args, fmt.Sprint("key:", j), "v")
		}
		if got := rc.do(args...); got != "+OK\r\n" {
			t.Fatalf("MSET: %q", got)
		}
	}
	eval := func(script string) (string, time.Duration) {
		start := time.Now()
		got := rc.do("EVAL", script, "0")
		return got, time.Since(start)
	}
	for _, c := range []struct{ script, whole string }{
		{"return #redis.call('KEYS', '*x')", ":0\r\n"}, // every key matched, none listed
		{"return redis.call('DBSIZE')", fmt.Sprintf(":%d\r\n", keys)},
	} {
		luaTimeLimit.Store(0) // never stopped
		got, whole := eval(c.script)
		if got != c.whole {
			t.Fatalf("%s without a time limit: %q, want %q", c.script, got, c.whole)
		}
		luaTimeLimit.Store(int64(whole / 10))
		took := time.Hour
		for range 3 { // the quickest of three: a collection's pause is not the call's
			got, d := eval(c.script)
			if !strings.Contains(got, "Script killed") {
				t.Fatalf("%s under a limit of %v: %q, want the time limit's error", c.script, whole/10, got)
			}
			took = min(took, d)
		}
		t.Logf("%s: %v in all, stopped after %v under a limit of %v", c.script, whole, took, whole/10)
		if took > whole/2 {
			t.Errorf("%s ran %v under a limit of %v (%v in all)", c.script, took, whole/10, whole)
		}
	}
}
