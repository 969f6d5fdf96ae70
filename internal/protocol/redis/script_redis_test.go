package redis

import (
	"strings"
	"testing"
)

// scriptSteps are steps of one connection ("sub"), each a command as arguments, with one reply each.
func scriptSteps(cmds ...[]string) []transcriptStep {
	steps := make([]transcriptStep, len(cmds))
	for i, args := range cmds {
		steps[i] = transcriptStep{"sub", respCmd(args...), 1}
	}
	return steps
}

func eval(script string, keysAndArgs ...string) []string {
	if len(keysAndArgs) == 0 {
		keysAndArgs = []string{"0"}
	}
	return append([]string{"EVAL", script}, keysAndArgs...)
}

// TestScriptSelectMatchesRedis: a script's SELECT changes the database of its later commands and not its
// caller's, as in Redis 7 (it was refused: "This Redis command is not allowed from script"), with SELECT's
// errors; PING answers its argument; XREAD without BLOCK runs (it was refused), with BLOCK it is refused as
// Redis refuses it.
func TestScriptSelectMatchesRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"FLUSHALL"}, []string{"SELECT", "9"}, []string{"SET", "k", "db9"}, []string{"SELECT", "10"},
			[]string{"SET", "k", "db10"},
			eval("return redis.pcall('select','9')"), []string{"GET", "k"},
			eval("redis.call('select','9'); return redis.call('get','k')"), []string{"GET", "k"},
			eval("redis.call('select',9); local a = redis.call('get','k'); redis.call('select',10); return {a, redis.call('get','k')}"),
			eval("return redis.pcall('select','x')"), eval("return redis.pcall('select','100')"),
			eval("return redis.pcall('select','-1')"), eval("return redis.pcall('select')"),
			eval("return redis.pcall('select', 1, 2)"), eval("return redis.call('select',99)"),
			eval("return redis.pcall('ping')"), eval("return redis.pcall('ping','asdf')"),
			eval("return redis.pcall('PING','a','b')"),
			[]string{"DEL", "s"}, []string{"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"},
			eval("return redis.pcall('xread','STREAMS','s','$')", "1", "s"),
			[]string{"XADD", "s", "1-1", "a", "b"}, []string{"XADD", "s", "2-1", "c", "d"},
			eval("return redis.pcall('xread','COUNT',1,'STREAMS','s','0')", "1", "s"),
			eval("return redis.pcall('xread','STREAMS','s','nos','0','0')", "2", "s", "nos"),
			eval("return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')", "1", "s"),
			eval("return redis.pcall('XREAD','BLOCK',0,'STREAMS','s','$')", "1", "s"),
			eval("return redis.pcall('xreadgroup','group','g','c','BLOCK',0,'STREAMS','s','>')", "1", "s"),
			eval("return redis.pcall('xread','STREAMS','s')", "1", "s"),
			[]string{"SELECT", "0"},
		))
	})
}

// TestScriptRESP3MatchesRedis: redis.setresp(3) makes the script's commands answer in RESP3, converted to Lua as
// Redis 7 converts them (maps, sets, doubles, nulls), and its true and false booleans; a RESP2 caller gets their
// RESP2 forms. It raised "RESP version must be 2 here".
func TestScriptRESP3MatchesRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		r3 := func(body string) []string { return eval("redis.setresp(3); " + body) }
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"FLUSHALL"}, []string{"HSET", "h", "f", "v"}, []string{"SADD", "st", "a"},
			[]string{"ZADD", "z", "1.5", "m"}, []string{"XADD", "s", "1-1", "a", "b"},
			r3("return true"), r3("return false"), r3("return nil"), r3("return {1, true, false, 2}"),
			r3("return redis.call('hgetall','h')"), r3("local t = redis.call('hgetall','h'); return {t.map.f, type(t.map)}"),
			r3("local t = redis.call('smembers','st'); return {tostring(t.set.a)}"), r3("return redis.call('smembers','st')"),
			r3("local t = redis.call('zscore','z','m'); return {type(t), tostring(t.double)}"),
			r3("return redis.call('zscore','z','m')"), r3("return redis.call('zrange','z',0,-1,'withscores')"),
			r3("local t = redis.call('get','nokey'); return type(t)"), r3("return redis.call('get','nokey')"),
			r3("return {1, redis.call('get','nokey'), 2}"), r3("return redis.call('hmget','h','f','nof')"),
			r3("return redis.call('xread','streams','s','0')"), r3("return redis.call('xread','streams','nos','0')"),
			r3("return redis.call('set','a','b')"), r3("return redis.call('incr','n')"),
			r3("return redis.pcall('incr','h')"), r3("return redis.call('hrandfield','h', 1, 'withvalues')"),
			r3("redis.setresp(2); return redis.call('hgetall','h')"), r3("redis.setresp(2); return true"),
			eval("return redis.call('hgetall','h')"), eval("return {true, false}"),
			eval("redis.setresp(4)"), eval("redis.setresp()"), eval("redis.setresp('a')"), eval("redis.setresp('3'); return true"),
			eval("redis.setresp(3, 4)"), eval("redis.setresp(2.5)"),
		))
	})
}

// TestScriptLibArgsMatchRedis: redis.sha1hex, redis.log, redis.error_reply and redis.status_reply check their
// arguments as Redis 7.0 does, with its errors (sha1hex() answered Lua's "bad argument #1" error, redis.log
// checked nothing).
func TestScriptLibArgsMatchRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			eval("return redis.sha1hex()"), eval("return redis.sha1hex('a','b')"), eval("return redis.sha1hex({})"),
			eval("return redis.sha1hex(1)"), eval("return redis.sha1hex(1.5)"), eval("return redis.sha1hex(nil)"),
			eval("return redis.sha1hex(true)"), eval("return redis.sha1hex('')"),
			eval("local ok, e = pcall(redis.sha1hex); return e"),
			eval("redis.log(9,'x')"), eval("redis.log(-1,'x')"), eval("redis.log('1','x')"), eval("redis.log('a','x')"),
			eval("redis.log(1.5,'x')"), eval("redis.log(1)"), eval("redis.log()"), eval("redis.log(redis.LOG_WARNING, 'x', 'y')"),
			eval("return redis.error_reply(1)"), eval("return redis.error_reply({})"), eval("return redis.error_reply('a', 'b')"),
			eval("return redis.status_reply({})"), eval("return redis.status_reply('a', 'b')"),
			eval("local ok, e = pcall(redis.error_reply); return {type(e), e}"),
			eval("return redis.error_reply('MY_ERR_CODE custom msg')"), eval("return redis.error_reply('')"),
			eval("return redis.status_reply('MY_OK custom')"),
		))
	})
}

// TestScriptErrorStatsMatchRedis: INFO errorstats counts the error replies of the commands a script calls and of
// the calls it has refused (once, even when the script returns or raises them), the error replies a script
// returns itself (redis.error_reply, {err=...}, nested ones) and its runtime errors, as Redis 7.0 counts them.
// Before, only a script's failure counted, and a returned error reply did not.
func TestScriptErrorStatsMatchRedis(t *testing.T) {
	scripts := [][]string{
		eval("return redis.error_reply('MY_ERR_CODE custom msg')"), eval("return redis.error_reply('')"),
		eval("error('boom')"), eval("return redis.call('incr','s')"), eval("return redis.pcall('incr','s')"),
		eval("redis.pcall('incr','s'); return 1"), eval("local t = redis.pcall('incr','s'); return t.ignore_error_stats_update"),
		eval("return {redis.pcall('incr','s'), redis.error_reply('X y')}"), eval("return redis.pcall('nocmd')"),
		eval("redis.pcall('nocmd'); return 1"), eval("return redis.call('nocmd')"), eval("redis.pcall('incr'); return 1"),
		eval("return redis.pcall()"), eval("redis.pcall(); return 1"), eval("return redis.pcall('get',{})"),
		eval("redis.pcall('get',{}); return 1"), {"EVAL_RO", "redis.pcall('set','x','y'); return 1", "1", "x"},
		{"EVAL_RO", "return redis.pcall('set','x','y')", "1", "x"}, eval("return redis.sha1hex()"),
		eval("return {err='FOO bar'}"), eval("error({err='FOO bar'})"), eval("return redis.call('select',99)"),
		eval("redis.pcall('select',99); return 1"), eval("redis.pcall('subscribe','x'); return 1"),
		eval("redis.pcall('xread','block',0,'streams','s','0'); return 1"), eval("redis.pcall('ping','a','b'); return 1"),
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		cmds := [][]string{{"FLUSHALL"}, {"SET", "s", "str"}}
		for _, s := range scripts {
			cmds = append(cmds, []string{"CONFIG", "RESETSTAT"}, s, []string{"INFO", "errorstats"})
		}
		return pubsubTranscript(t, addr, scriptSteps(cmds...))
	})
}

// TestScriptACLCheckMatchesRedis: redis.acl_check_cmd answers whether the script's user may run a command with
// those arguments, with Redis's errors (it was not there).
func TestScriptACLCheckMatchesRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			eval("return redis.acl_check_cmd('set','xx',1)"), eval("return redis.acl_check_cmd('set')"),
			eval("return redis.acl_check_cmd('invalid-cmd','arg')"), eval("return redis.acl_check_cmd()"),
			eval("return redis.acl_check_cmd(1)"), eval("return redis.acl_check_cmd({})"),
			[]string{"ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "~x*"}, []string{"AUTH", "bob", "123"},
			eval("return redis.acl_check_cmd('set','xx',1)", "1", "xx"),
			eval("return redis.acl_check_cmd('hset','xx','f',1)", "1", "xx"),
			eval("return redis.acl_check_cmd('set','yy',1)"), eval("return redis.acl_check_cmd('set')"),
			eval("return redis.acl_check_cmd('get')"), eval("return redis.acl_check_cmd('invalid-cmd','arg')"),
			[]string{"ACL", "LOG", "RESET"}, []string{"AUTH", "default", "x"}, []string{"ACL", "DELUSER", "bob"},
		))
	})
}

// TestScriptCacheCountMatchesRedis: INFO memory's number_of_cached_scripts counts the scripts SCRIPT LOAD and
// EVAL cached (a script that does not compile is not), and SCRIPT FLUSH empties it, as in redis-server (it was
// not there).
func TestScriptCacheCountMatchesRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		rc := dialRaw(t, addr)
		do := func(args ...string) string { rc.send(respCmd(args...)); return rc.reply() }
		count := func() string {
			info := do("INFO", "memory")
			for _, line := range strings.Split(info, "\r\n") {
				if strings.HasPrefix(line, "number_of_cached_scripts:") {
					return line
				}
			}
			return "no number_of_cached_scripts in " + info
		}
		var out []string
		do("SCRIPT", "FLUSH")
		out = append(out, count())
		for i := range 5 {
			do("SCRIPT", "LOAD", "return "+itoa(int64(i)))
		}
		do("SCRIPT", "LOAD", "return 1") // loaded already
		do("EVAL", "return 'x'", "0")
		do("EVAL", "return (", "0") // does not compile
		out = append(out, count())
		do("SCRIPT", "FLUSH", "ASYNC")
		return append(out, count())
	})
}

// TestScriptCJSONSettingsMatchRedis: cjson's settings functions (encode_max_depth and the rest, Redis's smoke
// test calls them) answer and act as Redis's Lua CJSON does; cjson.encode quotes strings as it does ("\/", no
// <>& escapes). Each script restores what it set: in Redis a setting outlives the script, here it does not.
func TestScriptCJSONSettingsMatchRedis(t *testing.T) {
	restore := " cjson.encode_max_depth(1000) cjson.decode_max_depth(1000) cjson.encode_invalid_numbers(false)" +
		" cjson.encode_number_precision(14) cjson.encode_keep_buffer(true) "
	js := func(body string) []string { return eval(body + restore + "return r") }
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			eval("return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_keep_buffer(), "+
				"cjson.encode_invalid_numbers(), cjson.decode_invalid_numbers(), cjson.encode_number_precision()}"),
			js("local r = {cjson.encode_max_depth(5), cjson.encode_max_depth()}"),
			eval("return cjson.encode_max_depth(0)"), eval("return cjson.encode_number_precision(15)"),
			eval("return cjson.encode_keep_buffer('x')"),
			js("local r = {cjson.encode_keep_buffer(false), cjson.encode_keep_buffer('on')}"),
			js("local r = cjson.encode_invalid_numbers('null')"),
			js("cjson.encode_invalid_numbers('null') local r = cjson.encode({1/0})"),
			js("cjson.encode_invalid_numbers(true) local r = cjson.encode({1/0, -1/0, 0/0})"),
			eval("return cjson.encode({1/0})"),
			js("cjson.encode_max_depth(1) local ok, r = pcall(function() return cjson.encode({{1}}) end)"),
			js("cjson.encode_max_depth(2) local ok, r = pcall(function() return cjson.encode({a={b={c=1}}}) end)"),
			js("cjson.decode_max_depth(1) local ok, r = pcall(function() return cjson.decode('[[1]]') end)"),
			js("cjson.decode_max_depth(2) local ok, r = pcall(function() return cjson.decode('{\"a\": [ {\"b\":1}]}') end)"),
			js("cjson.encode_number_precision(3) local r = cjson.encode({1.23456, 100000})"),
			eval("return {cjson._NAME, cjson._VERSION, tostring(cjson.encode_sparse_array())}"),
			eval("local t = {} t[false] = 1 return {pcall(function() return cjson.encode(t) end)}"),
			eval("return cjson.encode(string.char(1,8,9,10,12,13,31,34,39,47,60,92,127,128,255) .. 'é')"),
			eval("return cjson.encode({a='x<>&/'})"), eval("return cjson.encode({1, 'a', {true, false}})"),
		))
	})
}

// TestScriptUnpackMatchesRedis: unpack hands up to Lua 5.1's 8,000 stack values to a command, as in Redis (7,999
// to LPUSH overflowed gopher-lua's registry: "registry overflow"), and past that fails as Lua 5.1 fails.
func TestScriptUnpackMatchesRedis(t *testing.T) {
	fill := func(n, body string) []string {
		return eval("local a = {} for i=1," + n + " do a[i]=i end " + body)
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"DEL", "l"}, fill("7999", "return redis.call('lpush', 'l', unpack(a))"), []string{"LLEN", "l"},
			fill("7999", "return select('#', unpack(a))"), fill("8000", "return select('#', unpack(a))"),
			fill("8001", "return select('#', unpack(a))"), fill("7998", "return select('#', unpack(a, 1, 7998))"),
			fill("7997", "return select('#', unpack(a, 1, 7997))"),
			eval("return {unpack({1,2,3}, 2)}"), eval("return {unpack({1,2,3}, 3, 2)}"),
			eval("return {unpack({1,2,3}, -1, 1)}"), eval("return unpack({})"), eval("return unpack()"),
		))
	})
}

// TestScriptRuntimeErrorsMatchRedis: the runtime errors of a script read as Lua 5.1's in Redis where no variable
// is named (gopher-lua said "attempt to call a non-function object", "cannot perform add operation between
// number and table", "__len undefined", "attempt to index a non-table object(nil) with key 'b'"); string.dump
// is not there, so loading a function's bytecode fails as in Redis ("attempt to call a nil value").
func TestScriptRuntimeErrorsMatchRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			eval("return loadstring(string.dump(function() return 1 end))()"), eval("return (nil)()"),
			eval("return ({})()"), eval("return 1 + {}"), eval("return {} + 1"), eval("return 'a' + 1"),
			eval("return 1 - nil"), eval("return #nil"), eval("return #5"), eval("return ({} .. 'a')"),
			eval("return 'a' .. {}"), eval("return 1 .. nil"), eval("return ('x') < 1"),
			eval("return (nil).x"), eval("return ('x')()"),
		))
	})
}

// TestScriptReplicationAndDebuggerCallsMatchRedis: redis.set_repl with the REPL_ constants (scripts written for
// Redis 3.2 to 6 choose what is replicated with it) and the debugger's redis.breakpoint and redis.debug, which
// do nothing outside a debugging session, answer as in Redis 7 (set_repl's argument checks and errors
// included), in scripts and, for set_repl, in functions. They were missing: such a script failed with
// "attempt to call a nil value".
func TestScriptReplicationAndDebuggerCallsMatchRedis(t *testing.T) {
	lib := "#!lua name=r2repl\nredis.register_function('r2repl', function(keys, args) " +
		"redis.set_repl(redis.REPL_NONE) redis.call('set', keys[1], 'f') return {redis.REPL_ALL, redis.call('get', keys[1])} end)"
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			eval("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"),
			eval("return redis.set_repl(redis.REPL_ALL)"),
			eval("redis.set_repl(redis.REPL_NONE) redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1])", "1", "rk"),
			[]string{"GET", "rk"},
			eval("return redis.set_repl()"), eval("return redis.set_repl(1, 2)"), eval("return redis.set_repl(4)"),
			eval("return redis.set_repl(-1)"), eval("return redis.set_repl('x')"), eval("return redis.set_repl('3')"),
			eval("return redis.set_repl(3.7)"), eval("return redis.set_repl({})"), eval("return redis.set_repl(0/0)"),
			eval("return redis.set_repl(2^40)"), eval("return {pcall(redis.set_repl, 9)}"),
			eval("return redis.breakpoint()"), eval("return tostring(redis.breakpoint())"),
			eval("return select('#', redis.breakpoint(1, 2))"), eval("return redis.debug('x')"),
			eval("return select('#', redis.debug())"), eval("return select('#', redis.debug('a', {}, 1))"),
			[]string{"FUNCTION", "LOAD", "REPLACE", lib}, []string{"FCALL", "r2repl", "1", "fk"},
		))
	})
}

// TestScriptVerbatimFormatsMatchRedis: a verbatim string a script returns has a format of three bytes, as Redis
// writes it: the format's first three, a shorter one (or one cut by a zero byte) padded with spaces. A format of
// other than three bytes became "txt".
func TestScriptVerbatimFormatsMatchRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		var cmds [][]string
		for _, f := range []string{"'txt'", "'mkd'", "'t'", "''", "'ab'", "'markdown'", "'a\\0b'", "'\\0'"} {
			cmds = append(cmds, eval("return {verbatim_string={format="+f+", string='hello'}}"))
		}
		return pubsubTranscript(t, addr, scriptSteps(cmds...))
	})
}

// TestReadOnlyScriptsRefusePFCountMatchRedis: a read-only script (EVAL_RO, a no-writes shebang, FCALL_RO) may not
// call PFCOUNT, which Redis flags may-replicate (it may write its cardinality cache) and refuses there as a write,
// as it refuses PUBLISH; EVAL may. It ran.
func TestReadOnlyScriptsRefusePFCountMatchRedis(t *testing.T) {
	lib := "#!lua name=r2pf\nredis.register_function{function_name='r2pf', flags={'no-writes'}, " +
		"callback=function(keys) return redis.pcall('pfcount', keys[1]) end}"
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"PFADD", "hll", "a", "b"},
			[]string{"EVAL_RO", "return redis.call('pfcount', KEYS[1])", "1", "hll"},
			[]string{"EVAL_RO", "return redis.pcall('pfcount', KEYS[1])", "1", "hll"},
			eval("#!lua flags=no-writes\nreturn redis.pcall('pfcount', KEYS[1])", "1", "hll"),
			eval("return redis.call('pfcount', KEYS[1])", "1", "hll"),
			[]string{"FUNCTION", "LOAD", "REPLACE", lib}, []string{"FCALL_RO", "r2pf", "1", "hll"},
			[]string{"FCALL", "r2pf", "1", "hll"},
		))
	})
}

// TestScriptCallCheckOrderMatchesRedis: a script's call is checked in Redis 7's order (scriptCall): the command
// known, its arity, whether scripts may run it, the user's rules, then whether a read-only script may (a write or
// may-replicate command), and only then the command's own checks (XREADGROUP's BLOCK). A call of the wrong arity
// answered that read-only scripts may not write, or that scripts may not run it, and a read-only script's
// XREADGROUP BLOCK the BLOCK error.
func TestScriptCallCheckOrderMatchesRedis(t *testing.T) {
	ro := func(script string) []string { return []string{"EVAL_RO", script, "0"} }
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			ro("return redis.pcall('set', 'a')"), ro("return redis.pcall('publish', 'a')"),
			ro("return redis.pcall('spublish', 'a')"), ro("return redis.pcall('pfcount')"),
			ro("return redis.pcall('xreadgroup', 'group', 'g', 'c', 'block', '0', 'streams', 'x', '>')"),
			ro("return redis.pcall('blpop', 'a')"), ro("return redis.pcall('time', 'x')"),
			eval("return redis.pcall('xreadgroup', 'group', 'g', 'c', 'block', '0', 'streams', 'x', '>')"),
			eval("return redis.pcall('debug')"), eval("return redis.pcall('eval')"), eval("return redis.pcall('blpop', 'a')"),
			eval("return redis.pcall('blpop', 'a', '0')"), eval("return redis.pcall('select')"),
			eval("return redis.pcall('time', 'x')"), eval("return redis.pcall('publish', 'a')"),
			eval("return redis.call('eval')"), eval("return redis.call('nosuch', 'a')"),
		))
	})
}

// TestEvalShaChecksNumKeysFirstMatchesRedis: EVALSHA checks its key count before it looks the script up, as
// Redis's evalGenericCommand does: an unknown script with a bad count answers the count's error. It answered
// NOSCRIPT.
func TestEvalShaChecksNumKeysFirstMatchesRedis(t *testing.T) {
	const unknown = "ffffffffffffffffffffffffffffffffffffffff"
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		return pubsubTranscript(t, addr, scriptSteps(
			[]string{"EVALSHA", unknown, "x"}, []string{"EVALSHA", unknown, "-1"}, []string{"EVALSHA", unknown, "2", "a"},
			[]string{"EVALSHA", unknown, "0"}, []string{"EVALSHA_RO", unknown, "x"}, []string{"EVALSHA", "abc", "x"},
		))
	})
}
