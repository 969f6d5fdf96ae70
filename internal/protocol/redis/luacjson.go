package redis

import (
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson.encode and cjson.decode as Lua CJSON 2.1.0's (lua_cjson.c, as Redis 7.0 bundles it), with its errors:
// decode's tokenizer (numbers read by strtod, leading zeros, hexadecimal, inf and nan taken while
// decode_invalid_numbers is on, raw control characters in strings, \u escapes and surrogate pairs to UTF-8, a
// NUL ending the text), JSON null as cjson.null (a userdata standing for Lua CJSON's NULL lightuserdata), and
// encode's array detection (keys 1..n, holes as null unless the array is excessively sparse: more than twice
// as many slots as items and more than 10) and its "Cannot serialise" errors. Objects' keys are written
// sorted (Redis: its table's order).

// The tokens of Lua CJSON (json_token_type_t), named as its errors name them.
const (
	jtObjBegin = iota
	jtObjEnd
	jtArrBegin
	jtArrEnd
	jtString
	jtNumber
	jtBoolean
	jtNull
	jtColon
	jtComma
	jtEnd
	jtWhitespace
	jtError
	jtUnknown
)

var jtNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
	"T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

// jsonCh2Token is Lua CJSON's ch2token table.
var jsonCh2Token = func() (t [256]int) {
	for i := range t {
		t[i] = jtError
	}
	t['['], t[']'], t['{'], t['}'] = jtArrBegin, jtArrEnd, jtObjBegin, jtObjEnd
	t[','], t[':'], t[0] = jtComma, jtColon, jtEnd
	t[' '], t['\t'], t['\r'], t['\n'] = jtWhitespace, jtWhitespace, jtWhitespace, jtWhitespace
	for _, c := range []byte("fiInNt\"+-0123456789") {
		t[c] = jtUnknown
	}
	return t
}()

type jsonToken struct {
	typ   int
	index int // where it starts, 0-based
	str   string
	num   float64
	b     bool
	err   string // jtError: what
}

// cjsonDecoder is json_parse_t.
type cjsonDecoder struct {
	L     *lua.LState
	lim   *luaLimits
	null  lua.LValue
	data  string
	ptr   int
	depth int
	slots int // the Lua stack slots Lua CJSON's C would hold here (see luaCStack)
}

// at is the byte at i, 0 past the end (C's terminating NUL).
func (d *cjsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (d *cjsonDecoder) setError(t *jsonToken, what string) {
	t.typ, t.index, t.err = jtError, d.ptr, what
}

// isInvalidNumber is json_is_invalid_number: numbers JSON forbids (a leading +, hexadecimal, leading zeros, inf,
// nan) that decode_invalid_numbers decides on.
func (d *cjsonDecoder) isInvalidNumber() bool {
	p := d.ptr
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if c := d.at(p); c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || c2 >= '0' && c2 <= '9'
	} else if c <= '9' {
		return false
	}
	rest := strings.ToLower(d.data[p:min(p+3, len(d.data))])
	return rest == "inf" || rest == "nan"
}

func (d *cjsonDecoder) numberToken(t *jsonToken) {
	t.typ = jtNumber
	f, n := lua.StrToD(d.data[d.ptr:])
	if n == 0 {
		d.setError(t, "invalid number")
		return
	}
	t.num = f
	d.ptr += n
}

func (d *cjsonDecoder) next(t *jsonToken) {
	*t = jsonToken{}
	for {
		t.typ = jsonCh2Token[d.at(d.ptr)]
		if t.typ != jtWhitespace {
			break
		}
		d.ptr++
	}
	t.index = d.ptr
	switch t.typ {
	case jtError:
		d.setError(t, "invalid token")
		return
	case jtEnd:
		return
	case jtUnknown:
	default:
		d.ptr++
		return
	}
	rest := d.data[d.ptr:]
	switch ch := d.at(d.ptr); {
	case ch == '"':
		d.stringToken(t)
	case ch == '-' || ch >= '0' && ch <= '9':
		if d.lim.json.decodeInvalid == 0 && d.isInvalidNumber() {
			d.setError(t, "invalid number")
			return
		}
		d.numberToken(t)
	case strings.HasPrefix(rest, "true"):
		t.typ, t.b = jtBoolean, true
		d.ptr += 4
	case strings.HasPrefix(rest, "false"):
		t.typ = jtBoolean
		d.ptr += 5
	case strings.HasPrefix(rest, "null"):
		t.typ = jtNull
		d.ptr += 4
	case d.lim.json.decodeInvalid != 0 && d.isInvalidNumber():
		d.numberToken(t)
	default:
		d.setError(t, "invalid token")
	}
}

var jsonEscape2Char = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', 'u': 'u'}

func (d *cjsonDecoder) hex4(i int) int {
	v := 0
	for k := 0; k < 4; k++ {
		c := d.at(i + k)
		var x int
		switch {
		case c >= '0' && c <= '9':
			x = int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			x = int(c|0x20-'a') + 10
		default:
			return -1
		}
		v = v<<4 | x
	}
	return v
}

// unicodeEscape is json_append_unicode_escape: \uXXXX (a surrogate pair: two) at ptr, as UTF-8.
func (d *cjsonDecoder) unicodeEscape(b []byte) ([]byte, bool) {
	cp := d.hex4(d.ptr + 2)
	if cp < 0 {
		return b, false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || d.at(d.ptr+6) != '\\' || d.at(d.ptr+7) != 'u' {
			return b, false
		}
		lo := d.hex4(d.ptr + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return b, false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		b = append(b, byte(cp))
	case cp <= 0x7FF:
		b = append(b, byte(0xC0|cp>>6), byte(0x80|cp&0x3F))
	case cp <= 0xFFFF:
		b = append(b, byte(0xE0|cp>>12), byte(0x80|cp>>6&0x3F), byte(0x80|cp&0x3F))
	default:
		b = append(b, byte(0xF0|cp>>18), byte(0x80|cp>>12&0x3F), byte(0x80|cp>>6&0x3F), byte(0x80|cp&0x3F))
	}
	d.ptr += n
	return b, true
}

func (d *cjsonDecoder) stringToken(t *jsonToken) {
	d.ptr++
	var b []byte
	for {
		ch := d.at(d.ptr)
		if ch == '"' {
			break
		}
		if ch == 0 {
			d.setError(t, "unexpected end of string")
			return
		}
		if ch == '\\' {
			e, ok := jsonEscape2Char[d.at(d.ptr+1)]
			if ok && e == 'u' {
				var good bool
				if b, good = d.unicodeEscape(b); good {
					continue
				}
				d.setError(t, "invalid unicode escape code")
				return
			}
			if !ok {
				d.setError(t, "invalid escape code")
				return
			}
			ch = e
			d.ptr++
		}
		b = append(b, ch)
		d.ptr++
	}
	d.ptr++
	t.typ, t.str = jtString, string(b)
}

func (d *cjsonDecoder) throw(expected string, t *jsonToken) {
	found := t.err
	if t.typ != jtError {
		found = jtNames[t.typ]
	}
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, t.index+1)
}

// luaCStack is Lua 5.1's LUAI_MAXCSTACK, the stack slots a C function may use: Lua CJSON's decoder and encoder
// ask lua_checkstack for the slots of each level they enter, so this bounds their nesting whatever
// decode_max_depth and encode_max_depth say (in Redis 7,999 arrays deep, 4,000 objects); it also bounds the
// recursion here, which a raised setting left unbounded (a table containing itself overflowed the goroutine's
// stack, which ends the process).
const luaCStack = 8000

// descend is json_decode_descend: one level deeper, where json_parse_*_context needs more slots.
func (d *cjsonDecoder) descend(more int) {
	if d.depth++; d.depth > d.lim.json.decodeMaxDepth || d.slots+more > luaCStack {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", d.depth, d.ptr)
	}
}

func (d *cjsonDecoder) value(t *jsonToken) lua.LValue {
	d.lim.step(d.L)
	switch t.typ {
	case jtString:
		return lua.LString(t.str)
	case jtNumber:
		return lua.LNumber(t.num)
	case jtBoolean:
		return lua.LBool(t.b)
	case jtNull:
		return d.null
	case jtObjBegin:
		d.descend(3) // the table, a key and its value
		d.lim.mem(d.L, luaTableCost)
		tab := d.L.NewTable()
		d.next(t)
		if t.typ == jtObjEnd {
			d.depth--
			return tab
		}
		d.slots += 2 // the table and a key, while the key's value is read
		for {
			if t.typ != jtString {
				d.throw("object key string", t)
			}
			k := lua.LString(t.str)
			if d.next(t); t.typ != jtColon {
				d.throw("colon", t)
			}
			d.next(t)
			tab.RawSetH(k, d.value(t))
			if d.next(t); t.typ == jtObjEnd {
				d.depth--
				d.slots -= 2
				return tab
			}
			if t.typ != jtComma {
				d.throw("comma or object end", t)
			}
			d.next(t)
		}
	case jtArrBegin:
		d.descend(2) // the table and a value
		d.lim.mem(d.L, luaTableCost)
		tab := d.L.NewTable()
		d.next(t)
		if t.typ == jtArrEnd {
			d.depth--
			return tab
		}
		d.slots++ // the table, while its values are read
		for i := 1; ; i++ {
			tab.RawSetInt(i, d.value(t))
			if d.next(t); t.typ == jtArrEnd {
				d.depth--
				d.slots--
				return tab
			}
			if t.typ != jtComma {
				d.throw("comma or array end", t)
			}
			d.next(t)
		}
	}
	d.throw("value", t)
	return nil
}

// cjsonDecode is json_decode.
func cjsonDecode(L *lua.LState, lim *luaLimits, null lua.LValue, s string) lua.LValue {
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		L.RaiseError("JSON parser does not support UTF-16 or UTF-32")
	}
	d := cjsonDecoder{L: L, lim: lim, null: null, data: s, slots: 1} // the argument's slot
	var t jsonToken
	d.next(&t)
	v := d.value(&t)
	if d.next(&t); t.typ != jtEnd {
		d.throw("the end", &t)
	}
	return v
}

// cjsonEncoder is json_append_data's walk, bounded by lim: in the size of what it builds (a table referenced
// twice is encoded twice, so 30 levels of t={t,t} would be a billion leaves) and in time.
type cjsonEncoder struct {
	L    *lua.LState
	lim  *luaLimits
	null lua.LValue
	b    []byte
}

func (e *cjsonEncoder) fail(v lua.LValue, reason string) {
	e.L.RaiseError("Cannot serialise %s: %s", v.Type().String(), reason)
}

func (e *cjsonEncoder) number(v lua.LValue, f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		switch e.lim.json.encodeInvalid {
		case 0:
			e.fail(v, "must not be NaN or Inf")
		case 1:
			if math.IsNaN(f) {
				e.b = append(e.b, "nan"...)
			} else if f > 0 {
				e.b = append(e.b, "inf"...)
			} else {
				e.b = append(e.b, "-inf"...)
			}
		default:
			e.b = append(e.b, "null"...)
		}
		return
	}
	e.b = strconv.AppendFloat(e.b, f, 'g', e.lim.json.precision, 64)
}

// arrayLength is lua_array_length: the largest key of a table whose keys are all integers from 1 (0 for an
// empty one), -1 for any other table; an excessively sparse array is an error.
func (e *cjsonEncoder) arrayLength(t *lua.LTable) int {
	maxKey, items, array := 0.0, 0, true
	t.ForEach(func(k, _ lua.LValue) {
		if n, ok := k.(lua.LNumber); ok && float64(n) == math.Floor(float64(n)) && n >= 1 {
			maxKey = max(maxKey, float64(n))
			items++
			return
		}
		array = false
	})
	if !array {
		return -1
	}
	if maxKey > float64(items)*2 && maxKey > 10 {
		e.fail(t, "excessively sparse array")
	}
	return int(maxKey)
}

// value appends v's encoding; depth is the tables around it, slots the Lua stack slots Lua CJSON's walk would
// hold (the argument, a value for each array around v, a key and a value for each object).
func (e *cjsonEncoder) value(v lua.LValue, depth, slots int) {
	e.lim.step(e.L)
	if len(e.b) > e.lim.maxString {
		e.lim.alloc(e.L, len(e.b))
	}
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LNumber:
		e.number(v, float64(v))
	case lua.LBool:
		e.b = strconv.AppendBool(e.b, bool(v))
	case *lua.LNilType:
		e.b = append(e.b, "null"...)
	case *lua.LTable:
		if depth++; depth > e.lim.json.encodeMaxDepth || slots+3 > luaCStack { // json_check_encode_depth
			e.L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(v); n > 0 {
			e.b = append(e.b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					e.b = append(e.b, ',')
				}
				e.value(v.RawGetInt(i), depth, slots+1)
			}
			e.b = append(e.b, ']')
			return
		}
		type pair struct {
			key string
			k   lua.LValue
			v   lua.LValue
		}
		var pairs []pair
		v.ForEach(func(k, val lua.LValue) { pairs = append(pairs, pair{k.String(), k, val}) })
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		e.b = append(e.b, '{')
		for i, p := range pairs {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			switch k := p.k.(type) {
			case lua.LNumber:
				e.b = append(e.b, '"')
				e.number(k, float64(k))
				e.b = append(e.b, '"', ':')
			case lua.LString:
				e.str(string(k))
				e.b = append(e.b, ':')
			default:
				e.fail(p.k, "table key must be a number or string")
			}
			e.value(p.v, depth, slots+2)
		}
		e.b = append(e.b, '}')
	default:
		if v == e.null {
			e.b = append(e.b, "null"...)
			return
		}
		e.fail(v, "type not supported")
	}
}

// str appends s quoted, once its quoted length is known to fit the string limit: a string of control characters
// is six times as long quoted, and is refused before it is built.
func (e *cjsonEncoder) str(s string) {
	if n := len(e.b) + jsonStringSize(s); n > e.lim.maxString {
		e.lim.alloc(e.L, n)
	}
	e.b = appendJSONString(e.b, s)
}

// jsonStringSize is the length of s as appendJSONString writes it, quoted and escaped: a quote, backslash,
// slash, \b \f \n \r or \t as two bytes, another control character or DEL as six (\u00XX).
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '/' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == 0x7f:
			n += 6
		default:
			n++
		}
	}
	return n
}

// cjsonEncode is json_encode.
func cjsonEncode(L *lua.LState, lim *luaLimits, null lua.LValue, v lua.LValue) string {
	e := cjsonEncoder{L: L, lim: lim, null: null}
	e.value(v, 0, 1)
	lim.alloc(L, len(e.b))
	return string(e.b)
}
