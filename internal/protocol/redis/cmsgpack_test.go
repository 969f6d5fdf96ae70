package redis

import (
	"strings"
	"testing"
)

// TestCMsgpack: cmsgpack (BullMQ passes its scripts' arguments msgpacked) encodes as Redis 7.0.15's
// lua-cmsgpack does, byte for byte (the expected encodings are redis-server's answers to the same scripts), and
// decodes every form it knows, with its errors for the others.
func TestCMsgpack(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	const hex = `local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', string.byte(c)) end)) end
`
	for _, tc := range []struct{ pack, want string }{
		{"1, -1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649",
			"01ff7fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000e0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffff"},
		{"0.5, 1.1, 1e300, -0.25, 2^53, 2^63, -2^63, 1/0, -1/0",
			"ca3f000000cb3ff199999999999acb7e37e43c8800759ccabe800000cf0020000000000000ca5f000000d38000000000000000ca7f800000caff800000"},
		{"'', 'abc', string.rep('x', 31), string.rep('y', 32)",
			"a0a3616263bf" + strings.Repeat("78", 31) + "d920" + strings.Repeat("79", 32)},
		{"string.rep('z', 256)", "da0100" + strings.Repeat("7a", 256)},
		{"true, false, nil, {}, {1,2,3}, {a=1}, {[1]=1,[3]=3}, {1,{2,{3}}}, {[1.5]=1}, {[-1]=2}",
			"c3c2c0909301020381a16101820101030392019202910381ca3fc000000181ff02"},
		{"{1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}", "dc00100102030405060708090a0b0c0d0e0f10"},
		{"(function() local t = {}; local c = t; for i=1,20 do c[1] = {}; c = c[1] end; return t end)()",
			strings.Repeat("91", 16) + "c0"}, // nested deeper than 16: nil
		{"redis.call", "c0"},
	} {
		got, err := c.Eval(ctx, hex+"return hex(cmsgpack.pack("+tc.pack+"))", nil).Result()
		if err != nil || got != tc.want {
			t.Errorf("pack(%s) = %v, %v\nwant %s", tc.pack, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ script, want string }{
		{"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, {x='y'}}, 2.5))}", "[1 a [1 []] 2]"},
		{"return cmsgpack.unpack(ARGV[1])", "[1 2 3]"}, // \x93 1 2 3: one array
		{"return select('#', cmsgpack.unpack(''))", "0"},
		{"return {cmsgpack.unpack_one(cmsgpack.pack(7, 8))}", "[1 7]"},
		{"return {cmsgpack.unpack_one(cmsgpack.pack(7, 8), 1)}", "[-1 8]"},
		{"return {cmsgpack.unpack_limit(cmsgpack.pack(7, 8, 9), 2)}", "[2 7 8]"},
		{"return cmsgpack.unpack('\\217\\003abc')", "abc"},
		{"return cmsgpack.unpack('\\207\\000\\000\\000\\001\\000\\000\\000\\000')", "4294967296"},
		{"return tostring(cmsgpack.unpack('\\211\\255\\255\\255\\255\\255\\255\\255\\254'))", "-2"},
		// a uint 64 is read as a signed long, as Redis's lua-cmsgpack pushes it (a differential run found it)
		{"return {tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255')), tostring(cmsgpack.unpack('\\207\\255\\255\\239\\255\\255\\255\\255\\255'))}",
			"[-1 -17592186044417]"},
		{"return tostring(cmsgpack.unpack('\\202\\063\\192\\000\\000'))", "1.5"},
		{"return cmsgpack.unpack('\\222\\000\\002\\161a\\001\\161b\\192').a", "1"}, // map16, a nil value
		{"return cmsgpack.unpack(cmsgpack.pack(string.rep('q', 70000))) == string.rep('q', 70000)", "1"},
		// BullMQ's addJob arguments as msgpackr packs them: a float64 timestamp, nils, a map16 of options.
		{"local a = cmsgpack.unpack('\\154\\168bull:bq:\\160\\163add\\203\\066\\122\\032\\178\\253\\248\\176\\000\\192\\192\\192\\192\\192\\192'); return {a[1], a[3], tostring(a[4])}",
			"[bull:bq: add 1795484016523]"},
	} {
		got, err := c.Eval(ctx, tc.script, nil, "\x93\x01\x02\x03").Result()
		if err != nil || toString(got) != tc.want {
			t.Errorf("%s = %v (%v), want %s", tc.script, toString(got), err, tc.want)
		}
	}
	for _, tc := range []struct{ script, want string }{
		{"return cmsgpack.unpack('\\196\\001a')", "Bad data format in input."},     // bin: unknown to lua-cmsgpack
		{"return cmsgpack.unpack('\\212\\000\\000')", "Bad data format in input."}, // ext
		{"return cmsgpack.unpack('\\146\\001')", "Missing bytes in input."},
		{"return cmsgpack.unpack_one('abc', 10)", "Start offset 10 greater than input length 3."},
		{"return cmsgpack.pack()", "MessagePack pack needs input."},
		{"return cmsgpack.unpack('\\129\\192\\001')", "table index is nil"},
	} {
		if err := c.Eval(ctx, tc.script, nil).Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.script, err, tc.want)
		}
	}
}
