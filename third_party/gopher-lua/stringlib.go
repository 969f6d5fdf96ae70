package lua

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/pm"
)

const emptyLString LString = LString("")

func OpenString(L *LState) int {
	var mod *LTable
	//_, ok := L.G.builtinMts[int(LTString)]
	//if !ok {
	mod = L.RegisterModule(StringLibName, strFuncs).(*LTable)
	gmatch := L.NewClosure(strGmatch, L.NewFunction(strGmatchIter))
	mod.RawSetString("gmatch", gmatch)
	mod.RawSetString("gfind", gmatch)
	mod.RawSetString("__index", mod)
	L.G.builtinMts[int(LTString)] = mod
	//}
	L.Push(mod)
	return 1
}

var strFuncs = map[string]LGFunction{
	"byte":    strByte,
	"char":    strChar,
	"dump":    strDump,
	"find":    strFind,
	"format":  strFormat,
	"gsub":    strGsub,
	"len":     strLen,
	"lower":   strLower,
	"match":   strMatch,
	"rep":     strRep,
	"reverse": strReverse,
	"sub":     strSub,
	"upper":   strUpper,
}

// strByte is Lua 5.1's str_byte (anykv patch: string.byte('abc', 0, 10) answered nothing): positions relative
// to the end when negative, the start clamped to 1 and the end to the length.
func strByte(L *LState) int {
	str := L.CheckString(1)
	l := len(str)
	posrelat := func(pos int) int {
		if pos < 0 {
			pos += l + 1
		}
		return max(pos, 0)
	}
	posi := posrelat(L.OptInt(2, 1))
	pose := posrelat(L.OptInt(3, posi))
	posi = max(posi, 1)
	pose = min(pose, l)
	if posi > pose {
		return 0
	}
	for i := posi; i <= pose; i++ {
		L.Push(LNumber(str[i-1]))
	}
	return pose - posi + 1
}

// strChar is Lua 5.1's str_char (anykv patch): a code out of 0..255 is an error, where it was cut to a byte.
func strChar(L *LState) int {
	top := L.GetTop()
	bytes := make([]byte, top)
	for i := 1; i <= top; i++ {
		c := int32(cLong(float64(L.CheckNumber(i))))
		if c < 0 || c > 255 {
			L.ArgError(i, "invalid value")
		}
		bytes[i-1] = byte(c)
	}
	L.Push(LString(string(bytes)))
	return 1
}

func strDump(L *LState) int {
	L.RaiseError("GopherLua does not support the string.dump")
	return 0
}

func strFind(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	if len(pattern) == 0 {
		L.Push(LNumber(1))
		L.Push(LNumber(0))
		return 2
	}
	init := luaIndex2StringIndex(str, L.OptInt(3, 1), true)
	plain := false
	if L.GetTop() == 4 {
		plain = LVAsBool(L.Get(4))
	}

	if plain {
		pos := strings.Index(str[init:], pattern)
		if pos < 0 {
			L.Push(LNil)
			return 1
		}
		L.Push(LNumber(init+pos) + 1)
		L.Push(LNumber(init + pos + len(pattern)))
		return 2
	}

	mds, err := pm.Find(pattern, unsafeFastStringToReadOnlyBytes(str), init, 1)
	if err != nil {
		L.RaiseError(err.Error())
	}
	if len(mds) == 0 {
		L.Push(LNil)
		return 1
	}
	md := mds[0]
	L.Push(LNumber(md.Capture(0) + 1))
	L.Push(LNumber(md.Capture(1)))
	for i := 2; i < md.CaptureLength(); i += 2 {
		if md.IsPosCapture(i) {
			L.Push(LNumber(md.Capture(i)))
		} else {
			L.Push(LString(str[md.Capture(i):md.Capture(i+1)]))
		}
	}
	return md.CaptureLength()/2 + 1
}

// strFormat is Lua 5.1's str_format (anykv patch; it was Go's fmt.Sprintf, so %s of nil was "nil", %u
// "%!u(...)", %q escaped as Go quotes, %5.1s counted runes): each directive is C's printf of its argument
// (flags "-+ #0", a width and a precision of up to two digits each), %d %i %c of the number cast to a C long or
// int, %o %u %x %X to an unsigned long, %e %E %f %g %G of the double, %s of the string (a string of 100 bytes or
// more without a precision kept whole), %q quoted as Lua 5.1 quotes it; an item is cut at a NUL, as
// strlen cuts C's buffer.
func strFormat(L *LState) int {
	fs := L.CheckString(1)
	arg := 1
	var b []byte
	for i := 0; i < len(fs); {
		if fs[i] != '%' {
			b = append(b, fs[i])
			i++
			continue
		}
		i++
		if i < len(fs) && fs[i] == '%' {
			b = append(b, '%')
			i++
			continue
		}
		if arg++; arg > L.GetTop() {
			L.ArgError(arg, "no value")
		}
		// scanformat
		p := i
		for p < len(fs) && strings.IndexByte("-+ #0", fs[p]) >= 0 {
			p++
		}
		if p-i >= 6 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := fs[i:p]
		width, prec := -1, -1
		digits := func() int {
			n := -1
			for k := 0; k < 2 && p < len(fs) && fs[p] >= '0' && fs[p] <= '9'; k++ {
				if n < 0 {
					n = 0
				}
				n = n*10 + int(fs[p]-'0')
				p++
			}
			return n
		}
		width = digits()
		if p < len(fs) && fs[p] == '.' {
			p++
			if prec = digits(); prec < 0 {
				prec = 0
			}
		}
		if p < len(fs) && fs[p] >= '0' && fs[p] <= '9' {
			L.RaiseError("invalid format (width or precision too long)")
		}
		var conv byte
		if p < len(fs) {
			conv = fs[p]
		}
		i = p + 1
		var item string
		switch conv {
		case 'c':
			item = cPad(flags, width, string([]byte{byte(cIntCast(float64(L.CheckNumber(arg))))}))
		case 'd', 'i':
			item = cInt(flags, width, prec, cLong(float64(L.CheckNumber(arg))), false, 'd')
		case 'o', 'u', 'x', 'X':
			f := float64(L.CheckNumber(arg))
			var u uint64
			if f >= 9223372036854775808 { // gcc: the cast of f - 2^63, its top bit flipped
				u = uint64(cLong(f-9223372036854775808)) ^ 1<<63
			} else {
				u = uint64(cLong(f))
			}
			item = cInt(flags, width, prec, int64(u), true, conv)
		case 'e', 'E', 'f', 'g', 'G':
			item = cFloat(flags, width, prec, float64(L.CheckNumber(arg)), conv)
		case 'q':
			s := L.CheckString(arg)
			b = append(b, '"')
			for k := 0; k < len(s); k++ {
				switch c := s[k]; c {
				case '"', '\\', '\n':
					b = append(b, '\\', c)
				case '\r':
					b = append(b, '\\', 'r')
				case 0:
					b = append(b, '\\', '0', '0', '0')
				default:
					b = append(b, c)
				}
			}
			b = append(b, '"')
			continue
		case 's':
			s := L.CheckString(arg)
			if prec < 0 && len(s) >= 100 {
				b = append(b, s...)
				continue
			}
			s = cString(s)
			if prec >= 0 && len(s) > prec {
				s = s[:prec]
			}
			item = cPad(flags, width, s)
		default:
			if conv == 0 { // the format's end: Lua's %c of a NUL prints nothing
				L.RaiseError("%s", "invalid option '%' to 'format'")
			}
			L.RaiseError("invalid option '%%%c' to 'format'", conv)
		}
		b = append(b, cString(item)...)
	}
	L.Push(LString(b))
	return 1
}

// cIntCast is C's cast of a double to an int on x86-64 (out of range or NaN: the smallest int, so %c of 2^32+65 is
// a NUL, which ends the item, where the long's low byte was 'A').
func cIntCast(f float64) int32 {
	if f != f || f >= 2147483648 || f <= -2147483649 {
		return math.MinInt32
	}
	return int32(f)
}

// cLong is C's cast of a double to a long on x86-64 (out of range or NaN: the smallest long).
func cLong(f float64) int64 {
	if f != f || f >= 9223372036854775808 || f < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(f)
}

// cPad pads s with spaces to width (C's %-Ns and %Ns, by bytes).
func cPad(flags string, width int, s string) string {
	if len(s) >= width {
		return s
	}
	pad := strings.Repeat(" ", width-len(s))
	if strings.IndexByte(flags, '-') >= 0 {
		return s + pad
	}
	return pad + s
}

// cInt is C's printf of an integer (unsigned: v's bits as an unsigned long) for conv d, o, u, x or X.
func cInt(flags string, width, prec int, v int64, unsigned bool, conv byte) string {
	var digits string
	neg := false
	switch {
	case unsigned && conv == 'o':
		digits = strconv.FormatUint(uint64(v), 8)
	case unsigned && (conv == 'x' || conv == 'X'):
		digits = strconv.FormatUint(uint64(v), 16)
		if conv == 'X' {
			digits = strings.ToUpper(digits)
		}
	case unsigned:
		digits = strconv.FormatUint(uint64(v), 10)
	default:
		neg = v < 0
		digits = strconv.FormatUint(uint64(v), 10)
		if neg {
			digits = strconv.FormatUint(-uint64(v), 10)
		}
	}
	if prec == 0 && v == 0 {
		digits = ""
	}
	if prec > len(digits) {
		digits = strings.Repeat("0", prec-len(digits)) + digits
	}
	has := func(c byte) bool { return strings.IndexByte(flags, c) >= 0 }
	prefix := ""
	switch {
	case neg:
		prefix = "-"
	case !unsigned && has('+'):
		prefix = "+"
	case !unsigned && has(' '):
		prefix = " "
	}
	if has('#') {
		switch {
		case conv == 'o' && (len(digits) == 0 || digits[0] != '0'):
			digits = "0" + digits
		case conv == 'x' && v != 0:
			prefix = "0x"
		case conv == 'X' && v != 0:
			prefix = "0X"
		}
	}
	if has('0') && !has('-') && prec < 0 && len(prefix)+len(digits) < width {
		digits = strings.Repeat("0", width-len(prefix)-len(digits)) + digits
	}
	return cPad(flags, width, prefix+digits)
}

// cFloat is C's printf of a double for conv e, E, f, g or G (glibc's inf and nan).
func cFloat(flags string, width, prec int, f float64, conv byte) string {
	has := func(c byte) bool { return strings.IndexByte(flags, c) >= 0 }
	sign := ""
	switch {
	case math.Signbit(f):
		sign = "-"
	case has('+'):
		sign = "+"
	case has(' '):
		sign = " "
	}
	a := math.Abs(f)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s := "inf"
		if math.IsNaN(f) {
			s = "nan"
		}
		if conv == 'E' || conv == 'G' {
			s = strings.ToUpper(s)
		}
		return cPad(strings.ReplaceAll(flags, "0", ""), width, sign+s)
	}
	if prec < 0 {
		prec = 6
	}
	var body string
	switch conv {
	case 'e', 'E':
		body = strconv.FormatFloat(a, 'e', prec, 64)
	case 'f':
		body = strconv.FormatFloat(a, 'f', prec, 64)
	default:
		if prec == 0 {
			prec = 1
		}
		body = strconv.FormatFloat(a, 'e', prec-1, 64)
		exp, _ := strconv.Atoi(body[strings.IndexByte(body, 'e')+1:])
		if exp < -4 || exp >= prec {
			body = strconv.FormatFloat(a, 'e', prec-1, 64)
			if has('#') && exp == prec && exactExp(a) == prec-1 {
				// glibc's %#g of a number that rounds up to 10^prec (999.5 with %#.3g) writes no fraction
				// digits: "1.e+03", not "1.00e+03".
				body = "1" + body[strings.IndexByte(body, 'e'):]
			}
			if !has('#') {
				m, e := body[:strings.IndexByte(body, 'e')], body[strings.IndexByte(body, 'e'):]
				if strings.IndexByte(m, '.') >= 0 {
					m = strings.TrimRight(strings.TrimRight(m, "0"), ".")
				}
				body = m + e
			}
		} else {
			body = strconv.FormatFloat(a, 'f', prec-1-exp, 64)
			if !has('#') && strings.IndexByte(body, '.') >= 0 {
				body = strings.TrimRight(strings.TrimRight(body, "0"), ".")
			}
		}
		if conv == 'G' {
			body = strings.ToUpper(body)
		}
	}
	if conv == 'E' {
		body = strings.ToUpper(body)
	}
	if has('#') && strings.IndexByte(body, '.') < 0 {
		if e := strings.IndexAny(body, "eE"); e >= 0 {
			body = body[:e] + "." + body[e:]
		} else {
			body += "."
		}
	}
	if has('0') && !has('-') && len(sign)+len(body) < width {
		body = strings.Repeat("0", width-len(sign)-len(body)) + body
	}
	return cPad(flags, width, sign+body)
}

// exactExp is the decimal exponent of a (positive, finite), before any rounding.
func exactExp(a float64) int {
	s := strconv.FormatFloat(a, 'e', -1, 64) // the shortest form that reads as a: never a power of ten past it
	exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:])
	return exp
}

func strGsub(L *LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, LTString, LTTable, LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)

	mds, err := pm.Find(pat, unsafeFastStringToReadOnlyBytes(str), 0, limit)
	if err != nil {
		L.RaiseError(err.Error())
	}
	if len(mds) == 0 {
		L.SetTop(1)
		L.Push(LNumber(0))
		return 2
	}
	switch lv := repl.(type) {
	case LString:
		L.Push(LString(strGsubStr(L, str, string(lv), mds)))
	case *LTable:
		L.Push(LString(strGsubTable(L, str, lv, mds)))
	case *LFunction:
		L.Push(LString(strGsubFunc(L, str, lv, mds)))
	}
	L.Push(LNumber(len(mds)))
	return 2
}

type replaceInfo struct {
	Indicies []int
	String   string
}

func checkCaptureIndex(L *LState, m *pm.MatchData, idx int) {
	if idx <= 2 {
		return
	}
	if idx >= m.CaptureLength() {
		L.RaiseError("invalid capture index")
	}
}

func capturedString(L *LState, m *pm.MatchData, str string, idx int) string {
	checkCaptureIndex(L, m, idx)
	if idx >= m.CaptureLength() && idx == 2 {
		idx = 0
	}
	if m.IsPosCapture(idx) {
		return fmt.Sprint(m.Capture(idx))
	} else {
		return str[m.Capture(idx):m.Capture(idx+1)]
	}

}

func strGsubDoReplace(str string, info []replaceInfo) string {
	offset := 0
	buf := []byte(str)
	for _, replace := range info {
		oldlen := len(buf)
		b1 := append([]byte(""), buf[0:offset+replace.Indicies[0]]...)
		b2 := []byte("")
		index2 := offset + replace.Indicies[1]
		if index2 <= len(buf) {
			b2 = append(b2, buf[index2:len(buf)]...)
		}
		buf = append(b1, replace.String...)
		buf = append(buf, b2...)
		offset += len(buf) - oldlen
	}
	return string(buf)
}

func strGsubStr(L *LState, str string, repl string, matches []*pm.MatchData) string {
	infoList := make([]replaceInfo, 0, len(matches))
	for _, match := range matches {
		start, end := match.Capture(0), match.Capture(1)
		sc := newFlagScanner('%', "", "", repl)
		for c, eos := sc.Next(); !eos; c, eos = sc.Next() {
			if !sc.ChangeFlag {
				if sc.HasFlag {
					if c >= '0' && c <= '9' {
						sc.AppendString(capturedString(L, match, str, 2*(int(c)-48)))
					} else {
						sc.AppendChar('%')
						sc.AppendChar(c)
					}
					sc.HasFlag = false
				} else {
					sc.AppendChar(c)
				}
			}
		}
		infoList = append(infoList, replaceInfo{[]int{start, end}, sc.String()})
	}

	return strGsubDoReplace(str, infoList)
}

func strGsubTable(L *LState, str string, repl *LTable, matches []*pm.MatchData) string {
	infoList := make([]replaceInfo, 0, len(matches))
	for _, match := range matches {
		idx := 0
		if match.CaptureLength() > 2 { // has captures
			idx = 2
		}
		var value LValue
		if match.IsPosCapture(idx) {
			value = L.GetTable(repl, LNumber(match.Capture(idx)))
		} else {
			value = L.GetField(repl, str[match.Capture(idx):match.Capture(idx+1)])
		}
		if !LVIsFalse(value) {
			infoList = append(infoList, replaceInfo{[]int{match.Capture(0), match.Capture(1)}, LVAsString(value)})
		}
	}
	return strGsubDoReplace(str, infoList)
}

func strGsubFunc(L *LState, str string, repl *LFunction, matches []*pm.MatchData) string {
	infoList := make([]replaceInfo, 0, len(matches))
	for _, match := range matches {
		start, end := match.Capture(0), match.Capture(1)
		L.Push(repl)
		nargs := 0
		if match.CaptureLength() > 2 { // has captures
			for i := 2; i < match.CaptureLength(); i += 2 {
				if match.IsPosCapture(i) {
					L.Push(LNumber(match.Capture(i)))
				} else {
					L.Push(LString(capturedString(L, match, str, i)))
				}
				nargs++
			}
		} else {
			L.Push(LString(capturedString(L, match, str, 0)))
			nargs++
		}
		L.Call(nargs, 1)
		ret := L.reg.Pop()
		if !LVIsFalse(ret) {
			infoList = append(infoList, replaceInfo{[]int{start, end}, LVAsString(ret)})
		}
	}
	return strGsubDoReplace(str, infoList)
}

type strMatchData struct {
	str     string
	pos     int
	matches []*pm.MatchData
}

func strGmatchIter(L *LState) int {
	md := L.CheckUserData(1).Value.(*strMatchData)
	str := md.str
	matches := md.matches
	idx := md.pos
	md.pos += 1
	if idx == len(matches) {
		return 0
	}
	L.Push(L.Get(1))
	match := matches[idx]
	if match.CaptureLength() == 2 {
		L.Push(LString(str[match.Capture(0):match.Capture(1)]))
		return 1
	}

	for i := 2; i < match.CaptureLength(); i += 2 {
		if match.IsPosCapture(i) {
			L.Push(LNumber(match.Capture(i)))
		} else {
			L.Push(LString(str[match.Capture(i):match.Capture(i+1)]))
		}
	}
	return match.CaptureLength()/2 - 1
}

func strGmatch(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	mds, err := pm.Find(pattern, []byte(str), 0, -1)
	if err != nil {
		L.RaiseError(err.Error())
	}
	L.Push(L.Get(UpvalueIndex(1)))
	ud := L.NewUserData()
	ud.Value = &strMatchData{str, 0, mds}
	L.Push(ud)
	return 2
}

func strLen(L *LState) int {
	str := L.CheckString(1)
	L.Push(LNumber(len(str)))
	return 1
}

// strLower and strUpper change ASCII letters only, as C's tolower and toupper in the C locale (anykv patch: they
// were Unicode's, so 'é' became 'É').
func strLower(L *LState) int {
	b := []byte(L.CheckString(1))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	L.Push(LString(b))
	return 1
}

func strMatch(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	offset := L.OptInt(3, 1)
	l := len(str)
	if offset < 0 {
		offset = l + offset + 1
	}
	offset--
	if offset < 0 {
		offset = 0
	}

	mds, err := pm.Find(pattern, unsafeFastStringToReadOnlyBytes(str), offset, 1)
	if err != nil {
		L.RaiseError(err.Error())
	}
	if len(mds) == 0 {
		L.Push(LNil)
		return 0
	}
	md := mds[0]
	nsubs := md.CaptureLength() / 2
	switch nsubs {
	case 1:
		L.Push(LString(str[md.Capture(0):md.Capture(1)]))
		return 1
	default:
		for i := 2; i < md.CaptureLength(); i += 2 {
			if md.IsPosCapture(i) {
				L.Push(LNumber(md.Capture(i)))
			} else {
				L.Push(LString(str[md.Capture(i):md.Capture(i+1)]))
			}
		}
		return nsubs - 1
	}
}

func strRep(L *LState) int {
	str := L.CheckString(1)
	n := L.CheckInt(2)
	if n < 0 {
		L.Push(emptyLString)
	} else {
		L.Push(LString(strings.Repeat(str, n)))
	}
	return 1
}

func strReverse(L *LState) int {
	str := L.CheckString(1)
	bts := []byte(str)
	out := make([]byte, len(bts))
	for i, j := 0, len(bts)-1; j >= 0; i, j = i+1, j-1 {
		out[i] = bts[j]
	}
	L.Push(LString(string(out)))
	return 1
}

func strSub(L *LState) int {
	str := L.CheckString(1)
	start := luaIndex2StringIndex(str, L.CheckInt(2), true)
	end := luaIndex2StringIndex(str, L.OptInt(3, -1), false)
	l := len(str)
	if start >= l || end < start {
		L.Push(emptyLString)
	} else {
		L.Push(LString(str[start:end]))
	}
	return 1
}

func strUpper(L *LState) int {
	b := []byte(L.CheckString(1))
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	L.Push(LString(b))
	return 1
}

func luaIndex2StringIndex(str string, i int, start bool) int {
	if start && i != 0 {
		i -= 1
	}
	l := len(str)
	if i < 0 {
		i = l + i + 1
	}
	i = intMax(0, i)
	if !start && i > l {
		i = l
	}
	return i
}

//
