package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/rdb"
)

const funcTestLib = `#!lua name=t1
local function helper(k) return redis.call('get', k) end
redis.register_function('getk', function(keys, args) return helper(keys[1]) end)
redis.register_function('setk', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}
redis.register_function{function_name='rog', callback=function(keys, args) return #keys + #args end, flags={'allow-oom', 'no-writes'}, description='read only'}
redis.register_function('boom', function(keys, args)
  error('bad thing')
end)
redis.register_function('boom2', function(keys, args)
  return redis.call('incr', keys[1])
end)
redis.register_function('gl', function(keys, args) return KEYS end)
redis.register_function('ty', function(keys, args) return {type(keys), string.len('abc'), args[1], {double=1.5}} end)
redis.register_function('e0', function(keys, args) error('x', 0) end)
redis.register_function('et', function(keys, args) error({err='MY custom'}) end)
redis.register_function('gw', function(keys, args) x = 1 end)
redis.register_function('undeclared', function(keys, args) return redis.call('set', 'other', '1') end)`

// funcLoadErrors are libraries FUNCTION LOAD refuses, each with Redis 7.0's error.
var funcLoadErrors = []string{
	"redis.register_function('f1', function() end)",
	"#!lua name=my-lib\nredis.register_function('f1', function() end)",
	"#!lua name=lib2\nlocal x = 1",
	"#!lua name=lib2\nredis.register_function{function_name='g', callback=function() end, flags={'bad'}}",
	"#!lua name=lib2\nredis.call('set','a','b')",
	"#!lua name=lib2\nredis.register_function('g-x', function() end)",
	"#!lua name=lib2\nerror('boom')",
	"#!lua name=lib2\nlocal t = string",
	"#!lua name=lib2\nlocal t = redis.pcall",
	"#!lua name=lib2\nx = 5",
	"#!lua name=lib2\nredis.foo = 5",
	"#!lua name=lib2\nredis.log(1)",
	"#!lua\nredis.register_function('g', function() end)",
	"#!lua name=a name=b\nredis.register_function('g', function() end)",
	"#!lua foo=a\nredis.register_function('g', function() end)",
	"#!js name=a\nredis.register_function('g', function() end)",
	"#!lua name=lib3\nredis.register_function('g', function() end)\nredis.register_function('g', function() end)",
	"#!lua name=lib3\nredis.register_function('g')",
	"#!lua name=lib3\nredis.register_function('g', 5)",
	"#!lua name=lib3\nredis.register_function{function_name='g', callback=function() end, foo=1}",
	"#!lua name=lib3\nredis.register_function{callback=function() end}",
	"#!lua name=lib3\nredis.register_function{function_name='g'}",
	"#!lua name=lib3\nredis.register_function{function_name='g', callback=function() end, flags='no-writes'}",
	"#!lua name=lib3\nredis.register_function(1,2,3)",
	"#!lua name=lib3\nredis.register_function('getk', function() end)", // another library's function
	"#!lua name=t1\nredis.register_function('zz', function() end)",     // the library exists
}

// libCounter counts its calls in a local variable of the library.
const libCounter = "#!lua name=cnt\nlocal n = 0\nredis.register_function('cnt', function() n = n + 1 return n end)"

// functionsTranscript loads a library, calls its functions (FCALL, FCALL_RO, errors, KEYS not a global), lists
// it, and runs FUNCTION's other subcommands and their errors, in RESP2 and RESP3.
func functionsTranscript(t *testing.T, addr string) []string {
	c := func(args ...string) transcriptStep { return transcriptStep{"sub", respCmd(args...), 1} }
	steps := []transcriptStep{
		c("FUNCTION", "FLUSH"), c("FLUSHALL"),
		c("FUNCTION", "LOAD", funcTestLib),
		c("FCALL", "getk", "1", "a"), c("FCALL", "setk", "1", "a", "v"), c("FCALL", "getk", "1", "a"),
		c("FCALL_RO", "setk", "1", "a", "v"), c("FCALL_RO", "ro", "1", "a"), c("FCALL", "ro", "1", "a"),
		c("FCALL_RO", "rog", "2", "a", "b", "c"), c("FCALL", "boom", "0"), c("SET", "s", "str"),
		c("FCALL", "boom2", "1", "s"), c("FCALL", "gl", "0"), c("FCALL", "ty", "0", "arg"), c("FCALL", "e0", "0"),
		c("FCALL", "et", "0"), c("FCALL", "gw", "0"), c("FCALL", "undeclared", "0"), c("GET", "other"),
		c("FCALL", "nope", "0"), c("FCALL", "nope", "x"), c("FCALL", "getk", "x"), c("FCALL", "getk", "-1"),
		c("FCALL", "getk", "2", "a"), c("FCALL", "getk"), c("FCALL_RO", "nope", "0"),
		c("FUNCTION", "STATS"), c("FUNCTION", "KILL"), c("FUNCTION", "HELP"),
		c("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"),
		c("FUNCTION", "LIST", "LIBRARYNAME"), c("FUNCTION", "LIST", "foo"), c("FUNCTION", "LIST", "WITHCODE", "WITHCODE"),
		c("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"),
		c("FUNCTION", "DELETE", "nope"), c("FUNCTION", "DELETE", "a", "b"), c("FUNCTION", "FLUSH", "bad"),
		c("FUNCTION", "FLUSH", "SYNC", "x"), c("FUNCTION", "RESTORE"), c("FUNCTION", "RESTORE", "x"),
		c("FUNCTION", "RESTORE", "x", "y"), c("FUNCTION", "RESTORE", "x", "FLUSH", "z"), c("FUNCTION", "DUMP", "x"), c("FUNCTION", "STATS", "x"),
		// shebangs read as Redis's sdssplitargs reads them: quotes, the engine's and name='s case, an empty engine
		c("FUNCTION", "LOAD", "#!LUA name=up\nredis.register_function('up', function() return 1 end)"),
		c("FUNCTION", "LOAD", "#!lua NAME=\"q1\"\nredis.register_function('q1', function() return 1 end)"),
		c("FUNCTION", "LOAD", "#! name=e\nredis.register_function('e', function() return 1 end)"),
		c("FUNCTION", "LOAD", "#!lua name=\"unbalanced\nredis.register_function('u', function() return 1 end)"),
		c("FCALL", "up", "0"), c("FCALL", "q1", "0"), c("FCALL", "UP", "0"), c("FCALL_RO", "Q1", "0"),
		c("FUNCTION", "LOAD", "#!lua name=cs\nredis.register_function('uP', function() return 2 end)"), // Up's name, another case
		c("FUNCTION", "LIST", "LIBRARYNAME", "U*"), c("FUNCTION", "DELETE", "UP"), c("FUNCTION", "DELETE", "up"), c("FUNCTION", "DELETE", "q1"),
		c("EVAL", "#!lua flags=\"no-writes\"\nreturn redis.call('set', 'x', 1)", "0"),
		c("EVAL", "#!LUA\nreturn 1", "0"), c("EVAL", "#!lua flags='x\nreturn 1", "0"),
		c("FUNCTION", "foo"), c("FUNCTION"), c("FUNCTION", "LOAD", "a", "b"), c("FUNCTION", "LOAD", "REPLACE"),
	}
	for _, code := range funcLoadErrors {
		steps = append(steps, c("FUNCTION", "LOAD", code))
	}
	steps = append(steps,
		c("FUNCTION", "LOAD", "REPLACE", "#!lua name=t1\nredis.register_function('zz', function() return 7 end)"),
		c("FCALL", "zz", "0"), c("FCALL", "getk", "1", "a"),
		// one function per library: Redis lists a library's functions in its hash table's order
		c("FUNCTION", "LOAD", "#!lua name=l2\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'allow-stale','no-writes'}, description='d'}"),
		c("FUNCTION", "LIST", "LIBRARYNAME", "l*", "WITHCODE"), c("FUNCTION", "LIST", "LIBRARYNAME", "t*"),
		c("FUNCTION", "STATS"),
		c("FUNCTION", "DELETE", "l2"), c("FUNCTION", "DELETE", "l2"), c("FCALL", "f", "0"),
		c("FUNCTION", "FLUSH", "ASYNC"), c("FUNCTION", "LIST"), c("FUNCTION", "DUMP"),
		c("FUNCTION", "LOAD", "#!lua name=l3\nredis.register_function('h', function() return 1 end)"),
		c("FLUSHALL"), c("DBSIZE"), c("FCALL", "h", "0"), c("FUNCTION", "FLUSH"), c("FCALL", "h", "0"),
		// a library's local variables live from call to call, until it is loaded again
		c("FUNCTION", "LOAD", libCounter), c("FCALL", "cnt", "0"), c("FCALL", "cnt", "0"), c("FCALL", "cnt", "0"),
		c("FUNCTION", "LOAD", "REPLACE", libCounter), c("FCALL", "cnt", "0"), c("FCALL", "cnt", "0"),
		c("FUNCTION", "DELETE", "cnt"), c("FUNCTION", "LOAD", libCounter), c("FCALL", "cnt", "0"),
	)
	return pubsubTranscript(t, addr, steps)
}

// TestFunctionsMatchRedis: FUNCTION LOAD, LIST, STATS, DELETE, FLUSH, HELP, KILL and FCALL, FCALL_RO answer as
// redis-server 7.0 does, byte for byte, in RESP2 and RESP3, errors included; FLUSHALL keeps the functions.
func TestFunctionsMatchRedis(t *testing.T) {
	sameAsRedis(t, functionsTranscript)
}

// TestFunctionDumpRestoreWithRedis: FUNCTION DUMP's payload of redis-server (LZF-compressed code) restores into
// anykv, anykv's restores into redis-server, and anykv's into anykv, with the restore policies' errors.
func TestFunctionDumpRestoreWithRedis(t *testing.T) {
	const lib1 = "#!lua name=l1\nredis.register_function('f', function(keys, args) return 'one: ' .. string.rep('ab', 20) end)"
	const lib2 = "#!lua name=l2\nredis.register_function('g', function() return 2 end)"
	rs := dialRaw(t, startRedisServer(t))
	ts := startServer(t, Options{}, 0)
	ak := ts.raw(t)
	do := func(rc *rawConn, args ...string) string { rc.send(respCmd(args...)); return rc.reply() }
	bulk := func(r string) string { // a bulk string reply's content
		if !strings.HasPrefix(r, "$") {
			t.Fatalf("not a bulk string: %q", r)
		}
		_, body, _ := strings.Cut(r, "\r\n")
		return strings.TrimSuffix(body, "\r\n")
	}
	do(rs, "FUNCTION", "LOAD", lib1)
	do(rs, "FUNCTION", "LOAD", lib2)
	payload := bulk(do(rs, "FUNCTION", "DUMP"))
	if got := do(ak, "FUNCTION", "RESTORE", payload); got != "+OK\r\n" {
		t.Fatalf("restore of redis-server's payload: %q", got)
	}
	want := do(rs, "FCALL", "f", "0")
	if got := do(ak, "FCALL", "f", "0"); got != want {
		t.Fatalf("FCALL f after restore: %q, redis-server %q", got, want)
	}
	do(rs, "FUNCTION", "DELETE", "l2") // one library that collides: Redis finds the first in its hash table's order
	do(ak, "FUNCTION", "DELETE", "l2")
	for _, policy := range []string{"APPEND", "REPLACE", "FLUSH", "BAD"} {
		if got, want := do(ak, "FUNCTION", "RESTORE", payload, policy), do(rs, "FUNCTION", "RESTORE", payload, policy); got != want {
			t.Errorf("RESTORE %s: %q, redis-server %q", policy, got, want)
		}
	}
	if got, want := do(ak, "FUNCTION", "RESTORE", payload[:len(payload)-1]+"x"), do(rs, "FUNCTION", "RESTORE", payload[:len(payload)-1]+"x"); got != want {
		t.Errorf("RESTORE of a bad checksum: %q, redis-server %q", got, want)
	}
	ours := bulk(do(ak, "FUNCTION", "DUMP"))
	do(rs, "FUNCTION", "FLUSH")
	if got := do(rs, "FUNCTION", "RESTORE", ours); got != "+OK\r\n" {
		t.Fatalf("redis-server's restore of anykv's payload: %q", got)
	}
	for _, lib := range []string{"l1", "l2"} { // one at a time: redis-server lists them in its hash table's order
		if got, want := do(rs, "FUNCTION", "LIST", "LIBRARYNAME", lib, "WITHCODE"), do(ak, "FUNCTION", "LIST", "LIBRARYNAME", lib, "WITHCODE"); got != want {
			t.Errorf("library %s after the round trip: redis-server %q, anykv %q", lib, got, want)
		} else if !strings.Contains(got, "$2\r\n"+lib+"\r\n") {
			t.Errorf("library %s is not there after the round trip: %q", lib, got)
		}
	}
	// anykv to anykv
	ts2 := startServer(t, Options{}, 0)
	ak2 := ts2.raw(t)
	if got := do(ak2, "FUNCTION", "RESTORE", ours); got != "+OK\r\n" {
		t.Fatalf("anykv's restore of its payload: %q", got)
	}
	if got := do(ak2, "FCALL", "g", "0"); got != ":2\r\n" {
		t.Fatalf("FCALL g: %q", got)
	}
	// An empty payload: the version and checksum only, as Redis's.
	do(rs, "FUNCTION", "FLUSH")
	do(ak, "FUNCTION", "FLUSH")
	if got, want := do(ak, "FUNCTION", "DUMP"), do(rs, "FUNCTION", "DUMP"); got != want {
		t.Errorf("DUMP of no libraries: %q, redis-server %q", got, want)
	}
}

// TestFunctionsAreData: the libraries are kept in the engine: another handler over the same store (a restart)
// finds them, FLUSHALL keeps them, keys commands never see them, FUNCTION FLUSH removes them from the engine; an
// FCALL's writes are durable in the engine as a script's.
func TestFunctionsAreData(t *testing.T) {
	e := memstore.New()
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	rc := ts.raw(t)
	rc.expect("$2\r\nlx\r\n", "FUNCTION", "LOAD", "#!lua name=lx\nredis.register_function('w', function(keys, args) redis.call('set', keys[1], args[1]) return redis.call('incr', keys[2]) end)")
	rc.expect(":1\r\n", "FCALL", "w", "2", "k", "n", "v")
	rc.expect("+OK\r\n", "FLUSHALL")
	rc.expect(":0\r\n", "DBSIZE")
	rc.expect("*0\r\n", "KEYS", "*")
	rc.expect("*2\r\n$1\r\n0\r\n*0\r\n", "SCAN", "0")
	rc.expect(":1\r\n", "FCALL", "w", "2", "k", "n", "v")
	ts2 := startServerOver(t, e, kv.Options{}, Options{}, 0) // a restart over the same engine
	rc2 := ts2.raw(t)
	rc2.expect(":2\r\n", "FCALL", "w", "2", "k", "n", "v")
	rc2.expect("$1\r\nv\r\n", "GET", "k")
	rc2.expect("+OK\r\n", "FUNCTION", "FLUSH")
	ts3 := startServerOver(t, e, kv.Options{}, Options{}, 0)
	ts3.raw(t).expect("-ERR Function not found\r\n", "FCALL", "w", "2", "k", "n", "v")
}

// TestFunctionLoadsSurviveConcurrentFlushAll: FUNCTION LOADs acknowledged while FLUSHALLs run on another
// connection are all in the engine afterwards. A FLUSHALL reads the libraries and writes them back in its batch;
// a library written in between would be undone (kv.Store.functionsMu orders the two).
func TestFunctionLoadsSurviveConcurrentFlushAll(t *testing.T) {
	e := slowFunctionReads{memstore.New()}
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	loader, flusher := ts.client(t, nil), ts.client(t, nil)
	const n = 150
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			code := fmt.Sprintf("#!lua name=l%d\nredis.register_function('f%d', function() return %d end)", i, i, i)
			if err := loader.Do(ctx, "FUNCTION", "LOAD", code).Err(); err != nil {
				t.Errorf("FUNCTION LOAD l%d: %v", i, err)
				return
			}
			// A FLUSHALL that read the libraries before this load has committed by now: what the engine holds
			// must still have it (the next load would write it again, hiding the loss).
			time.Sleep(3 * time.Millisecond)
			if stored, err := ts.store.Functions(ctx); err != nil || !strings.Contains(string(stored), fmt.Sprintf("name=l%d\n", i)) {
				t.Errorf("after FUNCTION LOAD l%d was acknowledged and FLUSHALLs ran, the engine's libraries lack it (%v)", i, err)
				return
			}
		}
	}()
	flushes := 0
	for running := true; running; flushes++ {
		select {
		case <-done:
			running = false
		default:
		}
		if err := flusher.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	again := startServerOver(t, e, kv.Options{}, Options{}, 0).client(t, nil) // reads the libraries from the engine
	for i := range n {
		if got, err := again.Do(ctx, "FCALL", fmt.Sprint("f", i), "0").Int(); err != nil || got != i {
			t.Fatalf("after %d FLUSHALLs, FCALL f%d = %d, %v: the acknowledged library l%d is lost", flushes, i, got, err, i)
		}
	}
}

// slowFunctionReads is an engine whose reads of the function libraries take a millisecond, so that a write of
// them can fall between a FLUSHALL's read and its batch.
type slowFunctionReads struct{ *memstore.Store }

func (e slowFunctionReads) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if table == kv.FunctionsTable {
		time.Sleep(time.Millisecond)
	}
	return e.Store.Get(ctx, table, key, now)
}

// TestUnreadableLibrariesAreNotOverwritten: libraries stored in the engine that do not load (a damaged or newer
// payload) make FCALL and FUNCTION answer an error rather than serve none, so that a FUNCTION LOAD cannot write
// the set without them; FUNCTION FLUSH drops them, and then functions load again.
func TestUnreadableLibrariesAreNotOverwritten(t *testing.T) {
	e := memstore.New()
	ts := startServerOver(t, e, kv.Options{}, Options{}, 0)
	if err := ts.store.SetFunctions(ctx, []byte("not a FUNCTION DUMP payload")); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	const refused = "-ERR the function libraries stored do not load (DUMP payload version or checksum are wrong): FUNCTION FLUSH removes them\r\n"
	rc.expect(refused, "FCALL", "f", "0")
	rc.expect(refused, "FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return 1 end)")
	if stored, _ := ts.store.Functions(ctx); string(stored) != "not a FUNCTION DUMP payload" {
		t.Fatalf("the stored libraries were overwritten: %q", stored)
	}
	rc.expect("+OK\r\n", "FUNCTION", "FLUSH")
	rc.expect("$1\r\nl\r\n", "FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return 1 end)")
	rc.expect(":1\r\n", "FCALL", "f", "0")
}

// lzfBomb is an RDB string, LZF-compressed, of 'a' repeated 1 + 264k times, in about 3k bytes.
func lzfBomb(k int) []byte {
	c := []byte{0, 'a'} // a literal 'a', then back references of 264 bytes at distance 1
	for range k {
		c = append(c, 0xe0, 255, 0)
	}
	b := rdb.AppendLen([]byte{0xc3}, uint64(len(c)))
	return append(rdb.AppendLen(b, uint64(1+264*k)), c...)
}

// TestFunctionRestoreBoundsWhatItReads: FUNCTION RESTORE's libraries are bounded as they are read (16 MiB of code,
// 1024 libraries), not once all are loaded: LZF-compressed code expands up to 88 times, so a 64 MiB payload asked
// for gigabytes of code before any bound was checked.
func TestFunctionRestoreBoundsWhatItReads(t *testing.T) {
	var big []byte
	for range 20 { // 20 libraries of 1 MiB each, in 60 KB
		big = append(append(big, rdbOpcodeFunction2), lzfBomb(4000)...)
	}
	if _, err := readFunctionsPayload(rdb.Finish(big)); err != errTooManyLibraries {
		t.Errorf("20 MiB of code: %v", err)
	}
	var many []byte
	for range funcMaxLibraries + 1 {
		many = append(many, rdbOpcodeFunction2, 1, 'x')
	}
	if _, err := readFunctionsPayload(rdb.Finish(many)); err != errTooManyLibraries {
		t.Errorf("1025 libraries: %v", err)
	}
	rc := startServer(t, Options{}, 0).raw(t)
	if r := rc.do("FUNCTION", "RESTORE", string(rdb.Finish(big))); r != "-"+errTooManyLibraries.Error()+"\r\n" {
		t.Errorf("FUNCTION RESTORE of 20 MiB of code: %q", r)
	}
}
