package lua

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

func intMin(a, b int) int {
	if a < b {
		return a
	} else {
		return b
	}
}

func intMax(a, b int) int {
	if a > b {
		return a
	} else {
		return b
	}
}

func defaultFormat(v interface{}, f fmt.State, c rune) {
	buf := make([]string, 0, 10)
	buf = append(buf, "%")
	for i := 0; i < 128; i++ {
		if f.Flag(i) {
			buf = append(buf, string(rune(i)))
		}
	}

	if w, ok := f.Width(); ok {
		buf = append(buf, strconv.Itoa(w))
	}
	if p, ok := f.Precision(); ok {
		buf = append(buf, "."+strconv.Itoa(p))
	}
	buf = append(buf, string(c))
	format := strings.Join(buf, "")
	fmt.Fprintf(f, format, v)
}

type flagScanner struct {
	flag       byte
	start      string
	end        string
	buf        []byte
	str        string
	Length     int
	Pos        int
	HasFlag    bool
	ChangeFlag bool
}

func newFlagScanner(flag byte, start, end, str string) *flagScanner {
	return &flagScanner{flag, start, end, make([]byte, 0, len(str)), str, len(str), 0, false, false}
}

func (fs *flagScanner) AppendString(str string) { fs.buf = append(fs.buf, str...) }

func (fs *flagScanner) AppendChar(ch byte) { fs.buf = append(fs.buf, ch) }

func (fs *flagScanner) String() string { return string(fs.buf) }

func (fs *flagScanner) Next() (byte, bool) {
	c := byte('\000')
	fs.ChangeFlag = false
	if fs.Pos == fs.Length {
		if fs.HasFlag {
			fs.AppendString(fs.end)
		}
		return c, true
	} else {
		c = fs.str[fs.Pos]
		if c == fs.flag {
			if fs.Pos < (fs.Length-1) && fs.str[fs.Pos+1] == fs.flag {
				fs.HasFlag = false
				fs.AppendChar(fs.flag)
				fs.Pos += 2
				return fs.Next()
			} else if fs.Pos != fs.Length-1 {
				if fs.HasFlag {
					fs.AppendString(fs.end)
				}
				fs.AppendString(fs.start)
				fs.ChangeFlag = true
				fs.HasFlag = true
			}
		}
	}
	fs.Pos++
	return c, false
}

var cDateFlagToGo = map[byte]string{
	'a': "mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "02 Jan 06 15:04 MST", 'd': "02",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'P': "pm", 'S': "05",
	'x': "15/04/05", 'X': "15:04:05", 'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST"}

func strftime(t time.Time, cfmt string) string {
	sc := newFlagScanner('%', "", "", cfmt)
	for c, eos := sc.Next(); !eos; c, eos = sc.Next() {
		if !sc.ChangeFlag {
			if sc.HasFlag {
				if v, ok := cDateFlagToGo[c]; ok {
					sc.AppendString(t.Format(v))
				} else {
					switch c {
					case 'w':
						sc.AppendString(fmt.Sprint(int(t.Weekday())))
					default:
						sc.AppendChar('%')
						sc.AppendChar(c)
					}
				}
				sc.HasFlag = false
			} else {
				sc.AppendChar(c)
			}
		}
	}

	return sc.String()
}

func isInteger(v LNumber) bool {
	return float64(v) == float64(int64(v))
	//_, frac := math.Modf(float64(v))
	//return frac == 0.0
}

func isArrayKey(v LNumber) bool {
	return isInteger(v) && v < LNumber(int((^uint(0))>>1)) && v > LNumber(0) && v < LNumber(MaxArrayIndex)
}

// parseNumber reads a number as Lua 5.1's luaO_str2d does (anykv patch): C's strtod (leading white space, a
// sign, a decimal or hexadecimal number, with a binary exponent for the latter, inf, infinity or nan, in any
// case), a hexadecimal integer, then nothing but white space. It parsed Go's forms (ParseInt with base 0: 010
// was 8, 0b1 and 1_000 were numbers, 1e3 as tonumber's argument was not).
func parseNumber(number string) (LNumber, error) {
	if f, ok := str2d(number); ok {
		return LNumber(f), nil
	}
	return LNumber(0), strconv.ErrSyntax
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// str2d is luaO_str2d with glibc's strtod.
func str2d(s string) (float64, bool) {
	s = cString(s)
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	for n < len(s) && isCSpace(s[n]) {
		n++
	}
	return f, n == len(s)
}

// cString is s up to its first NUL, as C reads a Lua string.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// strtod is glibc's strtod: the value of the longest prefix of s that is a number and its length (0: none).
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	lower := s[i:]
	if len(lower) > 8 {
		lower = lower[:8]
	}
	lower = strings.ToLower(lower)
	switch {
	case strings.HasPrefix(lower, "infinity"), strings.HasPrefix(lower, "inf"):
		n := 3
		if strings.HasPrefix(lower, "infinity") {
			n = 8
		}
		if s[start] == '-' {
			return math.Inf(-1), i + n
		}
		return math.Inf(1), i + n
	case strings.HasPrefix(lower, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' { // nan(n-char-sequence)
			j := n + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		if s[start] == '-' {
			return math.Copysign(math.NaN(), -1), n
		}
		return math.NaN(), n
	}
	digits := func(j int, hex bool) int {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || hex && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'f')) {
			j++
		}
		return j
	}
	hex := len(s) > i+1 && s[i] == '0' && s[i+1]|0x20 == 'x'
	if hex {
		j := digits(i+2, true)
		k := j
		if k < len(s) && s[k] == '.' {
			k = digits(k+1, true)
		}
		if k-(i+2) <= 0 || k == j+1 && j == i+2 { // no hexadecimal digit: the 0 alone
			return 0 * sign(s[start]), i + 1
		}
		end := k
		if k < len(s) && s[k]|0x20 == 'p' {
			e := k + 1
			if e < len(s) && (s[e] == '+' || s[e] == '-') {
				e++
			}
			if d := digits(e, false); d > e {
				end = d
			}
		}
		text := s[start:end]
		if end == k {
			text += "p0"
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, 0
		}
		return f, end
	}
	j := digits(i, false)
	k := j
	if k < len(s) && s[k] == '.' {
		k = digits(k+1, false)
	}
	if j == i && k <= j+1 { // no digit
		return 0, 0
	}
	end := k
	if k < len(s) && s[k]|0x20 == 'e' {
		e := k + 1
		if e < len(s) && (s[e] == '+' || s[e] == '-') {
			e++
		}
		if d := digits(e, false); d > e {
			end = d
		}
	}
	f, err := strconv.ParseFloat(s[start:end], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, 0
	}
	return f, end
}

func sign(c byte) float64 {
	if c == '-' {
		return -1
	}
	return 1
}

func popenArgs(arg string) (string, []string) {
	cmd := "/bin/sh"
	args := []string{"-c"}
	if LuaOS == "windows" {
		cmd = "C:\\Windows\\system32\\cmd.exe"
		args = []string{"/c"}
	}
	args = append(args, arg)
	return cmd, args
}

func isGoroutineSafe(lv LValue) bool {
	switch v := lv.(type) {
	case *LFunction, *LUserData, *LState:
		return false
	case *LTable:
		return v.Metatable == LNil
	default:
		return true
	}
}

func readBufioSize(reader *bufio.Reader, size int64) ([]byte, error, bool) {
	result := []byte{}
	read := int64(0)
	var err error
	var n int
	for read != size {
		buf := make([]byte, size-read)
		n, err = reader.Read(buf)
		if err != nil {
			break
		}
		read += int64(n)
		result = append(result, buf[:n]...)
	}
	e := err
	if e != nil && e == io.EOF {
		e = nil
	}

	return result, e, len(result) == 0 && err == io.EOF
}

func readBufioLine(reader *bufio.Reader) ([]byte, error, bool) {
	result := []byte{}
	var buf []byte
	var err error
	var isprefix bool = true
	for isprefix {
		buf, isprefix, err = reader.ReadLine()
		if err != nil {
			break
		}
		result = append(result, buf...)
	}
	e := err
	if e != nil && e == io.EOF {
		e = nil
	}

	return result, e, len(result) == 0 && err == io.EOF
}

func int2Fb(val int) int {
	e := 0
	x := val
	for x >= 16 {
		x = (x + 1) >> 1
		e++
	}
	if x < 8 {
		return x
	}
	return ((e + 1) << 3) | (x - 8)
}

// strCmp compares two strings byte by byte, as Lua 5.1's l_strcmp does in the C locale (anykv patch: as memcmp
// does, where a loop in Go took 2-3 ms a megabyte).
func strCmp(s1, s2 string) int {
	return strings.Compare(s1, s2)
}

func unsafeFastStringToReadOnlyBytes(s string) (bs []byte) {
	sh := (*reflect.StringHeader)(unsafe.Pointer(&s))
	bh := (*reflect.SliceHeader)(unsafe.Pointer(&bs))
	bh.Data = sh.Data
	bh.Cap = sh.Len
	bh.Len = sh.Len
	return
}

// StrToD is C's strtod as glibc reads in the C locale (anykv patch, for cjson.decode's numbers): the value of the
// longest prefix of s that is a number and its length, 0 when none is.
func StrToD(s string) (float64, int) { return strtod(s) }

// CNaN is the NaN glibc's libm answers on x86-64 where Go's math answers math.NaN() (anykv patch: tostring
// shows the sign, "-nan" against "nan"): an argument's NaN if one was, else an invalid operation's default NaN,
// which is negative.
func CNaN(r float64, args ...float64) float64 {
	if !math.IsNaN(r) {
		return r
	}
	for _, a := range args {
		if math.IsNaN(a) {
			return a
		}
	}
	return math.Copysign(math.NaN(), -1)
}
