package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestCRC64(t *testing.T) {
	if got := CRC64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca { // crc64.c's own test vector
		t.Fatalf("crc64 = %x", got)
	}
}

// redisDumps reads testdata/redis7_dumps.txt: redis-server 7.0's payloads by name.
func redisDumps(t testing.TB) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/redis7_dumps.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, h, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// TestDecodeRedisDumps decodes every payload redis-server wrote into what it holds (see gen_redis7_dumps.py).
func TestDecodeRedisDumps(t *testing.T) {
	dumps := redisDumps(t)
	want := map[string]string{
		"str_raw":       "hello world",
		"str_empty":     "",
		"str_int8":      "-12",
		"str_int16":     "3000",
		"str_int32":     "-2000000000",
		"str_int64":     "9223372036854775807",
		"str_lzf":       strings.Repeat("abcabcabcabcabcabcabcabcabcabcabcabc", 20),
		"set_intset16":  "-7 1 2 3",
		"set_intset32":  "-100000 1 100000",
		"set_intset64":  "-9223372036854775808 1 10000000000",
		"hash_listpack": "a 1 b -5000 c  d " + strings.Repeat("x", 40) + " e 70000 f -9000000000",
		"list_listpack": "a 1 -1 127 -4096 4095 32767 8388607 2147483647 9223372036854775807  " + strings.Repeat("x", 70) + " " + strings.Repeat("y", 5000),
		"zset_listpack": "d:-Inf b:-2.5 e:0.1 a:1 :3e+200 c:+Inf",
	}
	for name, p := range dumps {
		v, err := Decode(p, Limits{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got string
		switch v.Kind {
		case String:
			got = string(v.Str)
		case ZSet:
			var parts []string
			for i, e := range v.Elems {
				parts = append(parts, string(e)+":"+strconv.FormatFloat(v.Scores[i], 'g', -1, 64))
			}
			got = strings.Join(parts, " ")
		default:
			got = string(bytes.Join(v.Elems, []byte(" ")))
		}
		if w, ok := want[name]; ok && got != w {
			t.Errorf("%s decodes to %.200q, want %.200q", name, got, w)
		}
		count := map[string]int{"hash_ht": 600, "list_big": 2000, "list_plain": 3, "set_ht": 4, "set_big": 1000, "zset_skiplist": 300}
		if n, ok := count[name]; ok && len(v.Elems) != n {
			t.Errorf("%s: %d elements, want %d", name, len(v.Elems), n)
		}
		if name == "str_binary" && !bytes.Equal(v.Str, func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}()) {
			t.Errorf("str_binary decodes to %q", v.Str)
		}
		if name == "str_big" && string(v.Str) != strings.Repeat("x", 70000) {
			t.Errorf("str_big decodes to %d bytes", len(v.Str))
		}
	}
}

// TestEncodeDecode: what Encode writes decodes to the same value.
func TestEncodeDecode(t *testing.T) {
	big := bytes.Repeat([]byte("z"), 100000)
	var many [][]byte
	for i := range 3000 {
		many = append(many, []byte(strconv.Itoa(i*7919-1000000)))
	}
	for _, v := range []Value{
		{Kind: String, Str: []byte("")},
		{Kind: String, Str: []byte("-128")},
		{Kind: String, Str: []byte("2147483648")},
		{Kind: String, Str: []byte("007")},
		{Kind: String, Str: big},
		{Kind: List, Elems: [][]byte{[]byte("a"), {}, big, []byte("-4096"), []byte("8388607"), []byte("-8388609"), []byte("9223372036854775807"), bytes.Repeat([]byte("q"), 5000)}},
		{Kind: List, Elems: many},
		{Kind: Set, Elems: [][]byte{[]byte("1"), []byte("x"), {}}},
		{Kind: Hash, Elems: [][]byte{[]byte("f"), {}, {}, []byte("v"), []byte("n"), big}},
		{Kind: ZSet, Elems: [][]byte{[]byte("a"), []byte("b"), []byte("c"), {}}, Scores: []float64{math.Inf(1), math.Inf(-1), -0.1, 1e-300}},
	} {
		got, err := Decode(Encode(v), Limits{})
		if err != nil {
			t.Fatalf("%v: %v", v.Kind, err)
		}
		if got.Kind != v.Kind || !bytes.Equal(got.Str, v.Str) || len(got.Elems) != len(v.Elems) {
			t.Fatalf("%v decoded to %v", v.Kind, got.Kind)
		}
		for i := range v.Elems {
			if !bytes.Equal(got.Elems[i], v.Elems[i]) || v.Scores != nil && got.Scores[i] != v.Scores[i] {
				t.Fatalf("%v element %d: %.50q, want %.50q", v.Kind, i, got.Elems[i], v.Elems[i])
			}
		}
	}
}

// TestEncodeMatchesRedis: a list of one listpack node and integer strings are written as redis-server writes them.
func TestEncodeMatchesRedis(t *testing.T) {
	dumps := redisDumps(t)
	for name, v := range map[string]Value{
		"str_int8":  {Kind: String, Str: []byte("-12")},
		"str_int16": {Kind: String, Str: []byte("3000")},
		"str_int32": {Kind: String, Str: []byte("-2000000000")},
		"str_int64": {Kind: String, Str: []byte("9223372036854775807")},
		"str_raw":   {Kind: String, Str: []byte("hello world")},
		"str_empty": {Kind: String, Str: []byte{}},
	} {
		if got := Encode(v); !bytes.Equal(got, dumps[name]) {
			t.Errorf("%s: %x, redis-server %x", name, got, dumps[name])
		}
	}
}

// ziplist builds a ziplist of the entries (strings, or integers in the encoding given), as Redis 6 wrote them.
func ziplist(entries ...any) []byte {
	b := make([]byte, 10)
	prev := 0
	for _, e := range entries {
		at := len(b)
		if prev < 254 {
			b = append(b, byte(prev))
		} else {
			b = binary.LittleEndian.AppendUint32(append(b, 0xfe), uint32(prev))
		}
		switch e := e.(type) {
		case string:
			switch l := len(e); {
			case l < 64:
				b = append(b, byte(l))
			case l < 16384:
				b = append(b, 0x40|byte(l>>8), byte(l))
			default:
				b = binary.BigEndian.AppendUint32(append(b, 0x80), uint32(l))
			}
			b = append(b, e...)
		case int8:
			b = append(b, 0xfe, byte(e))
		case int16:
			b = binary.LittleEndian.AppendUint16(append(b, 0xc0), uint16(e))
		case int32:
			b = binary.LittleEndian.AppendUint32(append(b, 0xd0), uint32(e))
		case int64:
			b = binary.LittleEndian.AppendUint64(append(b, 0xe0), uint64(e))
		case int: // 24 bits, or 0..12 in the encoding byte when below 13 and not negative
			if e >= 0 && e <= 12 {
				b = append(b, 0xf1+byte(e))
			} else {
				b = append(b, 0xf0, byte(e), byte(e>>8), byte(e>>16))
			}
		}
		prev = len(b) - at
	}
	b = append(b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint16(b[8:], uint16(len(entries)))
	return b
}

func payload(t byte, body []byte) []byte { return Finish(append([]byte{t}, body...)) }

// TestDecodeZiplists: the encodings of Redis before 7 (ziplists, quicklists of ziplists, text scores).
func TestDecodeZiplists(t *testing.T) {
	zl := ziplist("a", int8(-5), int16(300), int32(-70000), int64(1<<40), 7, 12, -1000000, strings.Repeat("s", 300), strings.Repeat("l", 20000))
	want := "a -5 300 -70000 1099511627776 7 12 -1000000 " + strings.Repeat("s", 300) + " " + strings.Repeat("l", 20000)
	str := func(b []byte) []byte { return append(AppendLen(nil, uint64(len(b))), b...) }
	for name, c := range map[string]struct {
		p    []byte
		kind Kind
		want string
	}{
		"list ziplist":   {payload(TypeListZiplist, str(zl)), List, want},
		"quicklist":      {payload(TypeListQuicklist, append(append([]byte{2}, str(zl)...), str(ziplist("z"))...)), List, want + " z"},
		"hash ziplist":   {payload(TypeHashZiplist, str(ziplist("f", 1, "g", "v"))), Hash, "f 1 g v"},
		"zset ziplist":   {payload(TypeZSetZiplist, str(ziplist("m", 1, "n", "2.5", "o", "-inf"))), ZSet, "m n o"},
		"zset text":      {payload(TypeZSet, []byte{2, 1, 'a', 3, '1', '.', '5', 1, 'b', 254}), ZSet, "a b"},
		"list linked":    {payload(TypeList, []byte{2, 1, 'a', 0xc0, 5}), List, "a 5"},
		"set plain ints": {payload(TypeSet, []byte{2, 0xc1, 0x10, 0x27, 0xc2, 1, 0, 0, 0x80}), Set, "10000 -2147483647"},
	} {
		v, err := Decode(c.p, Limits{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := string(bytes.Join(v.Elems, []byte(" "))); v.Kind != c.kind || got != c.want {
			t.Errorf("%s: %v %.100q, want %v %.100q", name, v.Kind, got, c.kind, c.want)
		}
		if name == "zset ziplist" && (v.Scores[0] != 1 || v.Scores[1] != 2.5 || !math.IsInf(v.Scores[2], -1)) {
			t.Errorf("zset ziplist scores %v", v.Scores)
		}
	}
}

// TestDecodeHostile: malformed payloads are errors, never panics or big allocations.
func TestDecodeHostile(t *testing.T) {
	good := redisDumps(t)["hash_listpack"]
	bad := map[string][]byte{
		"short":        {1, 2, 3},
		"wrong crc":    append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1),
		"huge string":  payload(TypeString, []byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
		"huge set":     payload(TypeSet, []byte{0x80, 0xff, 0xff, 0xff, 0xff, 1, 'a'}),
		"huge lzf":     payload(TypeString, []byte{0xc3, 2, 0x81, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 'a'}),
		"empty set":    payload(TypeSet, []byte{0}),
		"dup set":      payload(TypeSet, []byte{2, 1, 'a', 1, 'a'}),
		"dup hash":     payload(TypeHash, []byte{2, 1, 'a', 0, 1, 'a', 0}),
		"nan score":    payload(TypeZSet, []byte{1, 1, 'a', 253}),
		"module":       payload(TypeModule2, []byte{0}),
		"unknown type": payload(42, []byte{0}),
		"truncated":    payload(TypeHash, []byte{2, 1, 'a', 0, 0x40, 0xff}),
		"bad lzf":      payload(TypeString, []byte{0xc3, 2, 5, 0x20, 0}),
		"bad listpack": payload(TypeHashListpack, []byte{7, 7, 0, 0, 0, 0, 0, 0xff}),
		"bad intset":   payload(TypeSetIntset, []byte{8, 3, 0, 0, 0, 0, 0, 0, 0}),
	}
	bad["version 11"] = func() []byte {
		b := append([]byte{0, 1, 'a'}, 11, 0)
		return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
	}()
	for name, p := range bad {
		if _, err := Decode(p, Limits{MaxValue: 1 << 20, MaxTotal: 1 << 24}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := Decode(bad["wrong crc"], Limits{}); !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong crc: %v", err)
	}
	if _, err := Decode(bad["version 11"], Limits{}); !errors.Is(err, ErrChecksum) {
		t.Errorf("version 11: %v", err)
	}
	if _, err := Decode(bad["huge lzf"], Limits{MaxValue: 1 << 20}); !errors.Is(err, ErrFormat) {
		t.Errorf("huge lzf: %v", err) // more than its bytes can expand to
	}
	bigLZF := payload(TypeString, append([]byte{0xc3, 0x80, 0, 0, 0x80, 0, 0x80, 0, 0x20, 0, 0}, make([]byte, 0x8000)...))
	if _, err := Decode(bigLZF, Limits{MaxValue: 1 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("lzf of 2 MiB: %v", err)
	}
	if _, err := Decode(good, Limits{MaxTotal: 10}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit on the total: %v", err)
	}
}

// FuzzDecode: no payload panics the decoder, and what it accepts encodes and decodes back to itself.
func FuzzDecode(f *testing.F) {
	for _, p := range redisDumps(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) > 10 { // make the checksum right, so the fuzzer explores the value
			binary.LittleEndian.PutUint16(p[len(p)-10:], Version)
			binary.LittleEndian.PutUint64(p[len(p)-8:], CRC64(0, p[:len(p)-8]))
		}
		v, err := Decode(p, Limits{MaxValue: 1 << 20, MaxTotal: 1 << 24, ElemOverhead: 64})
		if err != nil {
			return
		}
		w, err := Decode(Encode(v), Limits{})
		if err != nil || w.Kind != v.Kind || !bytes.Equal(w.Str, v.Str) || len(w.Elems) != len(v.Elems) {
			t.Fatalf("re-encoded %v: %v", v.Kind, err)
		}
		for i := range v.Elems {
			if !bytes.Equal(w.Elems[i], v.Elems[i]) {
				t.Fatalf("element %d differs", i)
			}
		}
	})
}
