package redis

import (
	"context"
	"errors"
	"strconv"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// structScript exercises Redis's struct library: every option packed and unpacked in both byte orders, with
// alignment, c0 in both directions, offsets, sizes, and the errors (as pcall results).
const structScript = `local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
local out = {}
local function add(...) for _, v in ipairs({...}) do out[#out+1] = type(v) == "string" and hex(v) or tostring(v) end end
add(struct.pack("b", -1), struct.pack("B", 255), struct.pack(">h", 258), struct.pack("<H", 258), struct.pack("i", -2),
  struct.pack(">I3", 65539), struct.pack("l", -5), struct.pack(">L", 1099511627776), struct.pack("T", 7))
add(struct.pack("f", 1.5), struct.pack(">d", -0.1), struct.pack("c3", "abcdef"), struct.pack("c0", "xyz"),
  struct.pack("s", "hi"), struct.pack("!4 b i", 1, 2), struct.pack("!bxd", 1, 2.5), struct.pack("> !2 b h", 1, 2),
  struct.pack("i16", -1), struct.pack("I9", 2^60), struct.pack(">i3", -2))
add(struct.unpack("b", "\255"), struct.unpack("B", "\255"), struct.unpack(">h", "\1\2"),
  struct.unpack("<i", struct.pack("<i", -123456)), struct.unpack(">I3", "\0\1\3"), struct.unpack("l", struct.pack("l", -5)))
add(struct.unpack("f", struct.pack("f", 1.5)), struct.unpack(">d", struct.pack(">d", -0.1)), struct.unpack("c3", "abcdef"),
  struct.unpack("bc0", "\3abcdef"), struct.unpack("s", "hi\0there"), struct.unpack("!4 b i", struct.pack("!4 b i", 1, 2)))
add(struct.unpack("b", "abc", 2), struct.unpack("", "abc", 10), struct.unpack("i16", struct.pack("i16", -7)),
  struct.unpack(">i3", struct.pack(">i3", -2)))
add(struct.size("i"), struct.size("!8 b d"), struct.size("c7"), struct.size("bhilfdT"), struct.size("!4 bI3"), struct.size("zz"))
for _, f in ipairs({function() return struct.pack("q", 1) end, function() return struct.unpack("i", "ab") end,
  function() return struct.size("s") end, function() return struct.size("c0") end, function() return struct.pack("!3 b", 1) end,
  function() return struct.pack("i33", 1) end, function() return struct.unpack("c0", "abc") end,
  function() return struct.unpack("s", "abc") end, function() return struct.pack("c5", "ab") end,
  function() return struct.unpack("b", "abc", 0) end, function() return struct.pack("i", "x") end}) do
  local ok = pcall(f); add(ok)
end
return out`

// TestStructLibraryMatchesRedis: the struct library answers as redis-server's (Redisson's RMapCache,
// RDelayedQueue, RRateLimiter and RTimeSeries scripts call struct.pack; it was missing).
func TestStructLibraryMatchesRedis(t *testing.T) {
	sameEvalAsRedis(t, structScript)
}

// sameEvalAsRedis runs script (no keys) on redis-server and on anykv and requires the same reply, byte for byte.
func sameEvalAsRedis(t *testing.T, script string) {
	t.Helper()
	run := func(addr string) string {
		rc := dialRaw(t, addr)
		defer rc.c.Close()
		rc.send(evalCmd("EVAL", script))
		return rc.reply()
	}
	want := run(startRedisServer(t))
	ts := startServer(t, Options{}, 0)
	if got := run(ts.addr); got != want {
		t.Errorf("%s\nanykv:\n%q\nredis-server:\n%q", script, got, want)
	}
}

// FuzzLuaStruct: struct.pack, unpack and size with any format, data and offset raise Lua errors at worst, never a
// Go runtime error (an index out of range would fail the script with a panic's text, and a bug here is one).
func FuzzLuaStruct(f *testing.F) {
	for _, s := range []string{"b", ">i3", "!4 b i", "c0", "bc0", "s", "!3", "i33", "c5", "x!8d", "<>=!T", "c99999999999"} {
		f.Add(s, []byte("\x03abc\x00def\xff\xfe"), 1)
	}
	f.Fuzz(func(t *testing.T, format string, data []byte, pos int) {
		vm := newLuaVM()
		vm.prepare(context.Background(), 1<<20, nil, [][]byte{[]byte(format), data}, [][]byte{[]byte(strconv.Itoa(pos))}, false)
		defer vm.release(false)
		L := vm.L
		for _, call := range []string{
			"return struct.pack(KEYS[1], 1, -2, 3.5, KEYS[2], 4, KEYS[2], 2^40)",
			"return struct.unpack(KEYS[1], KEYS[2], tonumber(ARGV[1]))",
			"return struct.size(KEYS[1])",
		} {
			err := L.DoString(call)
			var ae *lua.ApiError
			if errors.As(err, &ae) && ae.Type == lua.ApiErrorPanic {
				t.Fatalf("%s with %q, %q, %d: %v", call, format, data, pos, err)
			}
		}
	})
}
