package redis

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua pattern matching for string.find, match, gmatch and gsub, in place of gopher-lua's: a backtracking
// matcher can take exponential time (string.find(string.rep('a', 3000), '.-.-.-b') runs for hours), and
// gopher-lua's cannot be interrupted, while a script's time limit must stop it. This is a port of Lua 5.1's
// lstrlib.c matcher (the one Redis runs, with %f and %b) whose every step counts towards luaLimits.stepN (a step
// that scans a long class, compares a long capture or expands a long gsub replacement, by the bytes it scans),
// so past the deadline it raises the time-limit error. As in C, a pattern ends at its first NUL. gmatch finds
// its matches one at a time (gopher-lua's finds all at once), and gsub's result is bounded as other built
// strings are.

const (
	patMaxCaptures = 32     // LUA_MAXCAPTURES
	patMaxDepth    = 200000 // recursion of the matcher: deeper is "pattern too complex" (see match)
	capUnfinished  = -1
	capPosition    = -2
)

// matchState is lstrlib.c's MatchState: the subject, the pattern and the captures so far.
type matchState struct {
	L      *lua.LState
	lim    *luaLimits
	src    string
	pat    string
	depth  int
	level  int
	starts [patMaxCaptures]int
	lens   [patMaxCaptures]int
}

// patAt is the byte of s at i, or 0 past its end (as C's terminating NUL).
func patAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func (ms *matchState) classEnd(p int) int {
	c := patAt(ms.pat, p)
	p++
	switch c {
	case '%':
		if p >= len(ms.pat) {
			ms.L.RaiseError("%s", "malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		start := p
		if patAt(ms.pat, p) == '^' {
			p++
		}
		for { // look for a ']'
			if p >= len(ms.pat) {
				ms.L.RaiseError("malformed pattern (missing ']')")
			}
			c := ms.pat[p]
			p++
			if c == '%' && p < len(ms.pat) {
				p++ // skip escapes (e.g. '%]')
			}
			if patAt(ms.pat, p) == ']' {
				ms.lim.stepN(ms.L, (p-start)/16) // a long class costs as its length, not as one step
				return p + 1
			}
		}
	}
	return p
}

func luaMatchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = c|0x20 >= 'a' && c|0x20 <= 'z'
	case 'c':
		res = c < 0x20 || c == 0x7f
	case 'd':
		res = c >= '0' && c <= '9'
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = c > 0x20 && c < 0x7f && !(c|0x20 >= 'a' && c|0x20 <= 'z') && !(c >= '0' && c <= '9')
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9'
	case 'x':
		res = c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'a' && cl <= 'z' {
		return res
	}
	return !res
}

// matchBracketClass matches c against the set [...] at p, whose ']' is at ec.
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	ms.lim.stepN(ms.L, (ec-p)/16) // a long class costs as its length, not as one step
	sig := true
	if patAt(ms.pat, p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.pat[p] == '%':
			p++
			if luaMatchClass(c, patAt(ms.pat, p)) {
				return sig
			}
		case patAt(ms.pat, p+1) == '-' && p+2 < ec:
			p += 2
			if ms.pat[p-2] <= c && c <= ms.pat[p] {
				return sig
			}
		case ms.pat[p] == c:
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(c byte, p, ep int) bool {
	switch ms.pat[p] {
	case '.':
		return true
	case '%':
		return luaMatchClass(c, patAt(ms.pat, p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.pat[p] == c
}

// match matches the pattern from p against the subject from s: the end of the match, or -1. Its recursion
// (through doMatch and the functions it calls) is at most patMaxDepth deep: each level takes a few hundred
// bytes of goroutine stack, so the deepest is some tens of MiB, far below Go's 1 GB limit. (Lua 5.1 has no such
// limit but its C stack: Redis matches 20,000 `a?` against 20,000 a.) The depth is not restored when an error
// is raised: a matchState is not used again after one.
func (ms *matchState) match(s, p int) int {
	if ms.depth++; ms.depth > patMaxDepth {
		ms.L.RaiseError("pattern too complex")
	}
	res := ms.doMatch(s, p)
	ms.depth--
	return res
}

func (ms *matchState) doMatch(s, p int) int {
	for {
		ms.lim.step(ms.L)
		if p >= len(ms.pat) {
			return s
		}
		switch ms.pat[p] {
		case '(':
			if patAt(ms.pat, p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '$':
			if p+1 == len(ms.pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			switch c := patAt(ms.pat, p+1); {
			case c == 'b':
				if s = ms.matchBalance(s, p+2); s == -1 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if patAt(ms.pat, p) != '[' {
					ms.L.RaiseError("%s", "missing '[' after '%f' in pattern")
				}
				ep := ms.classEnd(p)
				var prev byte
				if s > 0 {
					prev = ms.src[s-1]
				}
				if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(patAt(ms.src, s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			case c >= '0' && c <= '9':
				if s = ms.matchCapture(s, int(c)); s == -1 {
					return -1
				}
				p += 2
				continue
			}
		}
		// default: a single character class, perhaps repeated
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
		switch patAt(ms.pat, ep) {
		case '?':
			if m {
				if res := ms.match(s+1, ep+1); res != -1 {
					return res
				}
			}
			p = ep + 1
			continue
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		}
		if !m {
			return -1
		}
		s, p = s+1, ep
	}
}

func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		ms.L.RaiseError("unbalanced pattern")
	}
	if s >= len(ms.src) || ms.src[s] != ms.pat[p] {
		return -1
	}
	b, e, cont := ms.pat[p], ms.pat[p+1], 1
	for s++; s < len(ms.src); s++ {
		ms.lim.step(ms.L)
		if ms.src[s] == e {
			if cont--; cont == 0 {
				return s + 1
			}
		} else if ms.src[s] == b {
			cont++
		}
	}
	return -1
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		ms.lim.step(ms.L)
		i++
	}
	for ; i >= 0; i-- { // try with the most repetitions, then fewer
		if res := ms.match(s+i, ep+1); res != -1 {
			return res
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if res := ms.match(s, ep+1); res != -1 {
			return res
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= patMaxCaptures {
		ms.L.RaiseError("too many captures")
	}
	ms.starts[ms.level], ms.lens[ms.level] = s, what
	ms.level++
	res := ms.match(s, p)
	if res == -1 {
		ms.level--
	}
	return res
}

func (ms *matchState) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.lens[i] == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		ms.L.RaiseError("invalid pattern capture")
	}
	ms.lens[l] = s - ms.starts[l]
	res := ms.match(s, p)
	if res == -1 {
		ms.lens[l] = capUnfinished
	}
	return res
}

func (ms *matchState) matchCapture(s, c int) int {
	l := c - '1'
	if l < 0 || l >= ms.level || ms.lens[l] == capUnfinished {
		ms.L.RaiseError("invalid capture index")
	}
	n := ms.lens[l]
	if n < 0 { // a position capture: as in C, where its length is a huge size_t, it never matches
		return -1
	}
	ms.lim.stepN(ms.L, n/16) // comparing a long capture costs as its length
	if len(ms.src)-s >= n && ms.src[ms.starts[l]:ms.starts[l]+n] == ms.src[s:s+n] {
		return s + n
	}
	return -1
}

// capture is capture i of the match s..e (the whole match for i 0 when there are none).
func (ms *matchState) capture(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i != 0 {
			ms.L.RaiseError("invalid capture index")
		}
		return lua.LString(ms.src[s:e])
	}
	switch n := ms.lens[i]; n {
	case capUnfinished:
		ms.L.RaiseError("unfinished capture")
	case capPosition:
		return lua.LNumber(ms.starts[i] + 1)
	}
	return lua.LString(ms.src[ms.starts[i] : ms.starts[i]+ms.lens[i]])
}

// pushCaptures pushes the captures (or the whole match, wholeMatch and none), returning how many.
func (ms *matchState) pushCaptures(s, e int, wholeMatch bool) int {
	n := ms.level
	if n == 0 && wholeMatch {
		n = 1
	}
	for i := range n {
		ms.L.Push(ms.capture(i, s, e))
	}
	return n
}

// patCString is pattern p as Lua 5.1's matcher sees it: up to its first NUL, as a C string.
func patCString(p string) string {
	if i := strings.IndexByte(p, 0); i >= 0 {
		return p[:i]
	}
	return p
}

// installPatterns replaces find, match, gmatch (and its old name gfind) and gsub in the string table.
func installPatterns(L *lua.LState, str *lua.LTable, lim *luaLimits) {
	newMS := func(L *lua.LState, src, pat string) *matchState {
		return &matchState{L: L, lim: lim, src: src, pat: pat}
	}
	// init is a 1-based start position (negative: from the end), as a 0-based offset within s.
	initPos := func(L *lua.LState, s string, arg int) int {
		init := L.OptInt(arg, 1)
		if init < 0 {
			init += len(s) + 1
		}
		return min(max(init-1, 0), len(s))
	}
	findAux := func(L *lua.LState, find bool) int {
		s, p := L.CheckString(1), L.CheckString(2)
		init := initPos(L, s, 3)
		if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(patCString(p), "^$*+?.([%-")) {
			if i := strings.Index(s[init:], p); i >= 0 { // a plain search, of the whole of p
				L.Push(lua.LNumber(init + i + 1))
				L.Push(lua.LNumber(init + i + len(p)))
				return 2
			}
			L.Push(lua.LNil)
			return 1
		}
		p = patCString(p)
		anchor := strings.HasPrefix(p, "^")
		if anchor {
			p = p[1:]
		}
		ms := newMS(L, s, p)
		for s1 := init; s1 <= len(s); s1++ {
			ms.level = 0
			if e := ms.match(s1, 0); e != -1 {
				if find {
					L.Push(lua.LNumber(s1 + 1))
					L.Push(lua.LNumber(e))
					return ms.pushCaptures(-1, -1, false) + 2
				}
				return ms.pushCaptures(s1, e, true)
			}
			if anchor {
				break
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	str.RawSetString("find", L.NewFunction(func(L *lua.LState) int { return findAux(L, true) }))
	str.RawSetString("match", L.NewFunction(func(L *lua.LState) int { return findAux(L, false) }))
	gmatch := L.NewFunction(func(L *lua.LState) int {
		s, p := L.CheckString(1), patCString(L.CheckString(2))
		pos := 0
		L.Push(L.NewFunction(func(L *lua.LState) int {
			ms := newMS(L, s, p)
			for ; pos <= len(s); pos++ {
				ms.level = 0
				if e := ms.match(pos, 0); e != -1 {
					start := pos
					pos = e
					if e == start { // an empty match: go on at least one position
						pos++
					}
					return ms.pushCaptures(start, e, true)
				}
			}
			return 0
		}))
		return 1
	})
	str.RawSetString("gmatch", gmatch)
	str.RawSetString("gfind", gmatch)
	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int { return gsub(L, newMS(L, "", "")) }))
}

// gsub is string.gsub(s, pattern, repl [, n]) as Lua 5.1 has it, its result bounded.
func gsub(L *lua.LState, ms *matchState) int {
	src, p := L.CheckString(1), patCString(L.CheckString(2))
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTFunction, lua.LTTable:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	anchor := strings.HasPrefix(p, "^")
	if anchor {
		p = p[1:]
	}
	ms.src, ms.pat = src, p
	var b []byte
	add := func(s string) {
		n := len(b) + len(s)
		if n > ms.lim.maxString {
			ms.lim.alloc(L, n)
		}
		if n > cap(b) {
			ms.lim.mem(L, 2*n)
		}
		b = append(b, s...)
	}
	s, n := 0, 0
	for n < maxN {
		ms.level = 0
		e := ms.match(s, 0)
		if e != -1 {
			n++
			add(gsubValue(L, ms, repl, s, e))
		}
		switch {
		case e != -1 && e > s:
			s = e
		case s < len(src):
			add(src[s : s+1])
			s++
		default:
			anchor = true // the subject is used up
		}
		if anchor {
			break
		}
	}
	if s < len(src) {
		add(src[s:])
	}
	L.Push(lua.LString(b))
	L.Push(lua.LNumber(n))
	return 2
}

// gsubValue is the replacement for the match s..e: repl with %0-%9 expanded, or what the function returns or
// the table holds for the first capture (the match itself if that is nil or false).
func gsubValue(L *lua.LState, ms *matchState, repl lua.LValue, s, e int) string {
	var v lua.LValue
	switch r := repl.(type) {
	case *lua.LFunction:
		top := L.GetTop()
		L.Push(r)
		L.Call(ms.pushCaptures(s, e, true), 1)
		v = L.Get(-1)
		L.SetTop(top)
	case *lua.LTable:
		v = L.GetTable(r, ms.capture(0, s, e))
	default:
		news := lua.LVAsString(repl)
		ms.lim.stepN(L, len(news)/4) // expanding a long replacement costs as its length
		var b strings.Builder
		for i := 0; i < len(news); i++ {
			c := news[i]
			if c != '%' {
				b.WriteByte(c)
				continue
			}
			i++
			switch c = patAt(news, i); {
			case c < '0' || c > '9':
				b.WriteByte(c)
			case c == '0':
				b.WriteString(ms.src[s:e])
			default:
				b.WriteString(lua.LVAsString(ms.capture(int(c-'1'), s, e)))
			}
			if b.Len() > ms.lim.maxString {
				ms.lim.alloc(L, b.Len())
			}
		}
		return b.String()
	}
	if !lua.LVAsBool(v) {
		return ms.src[s:e] // keep the original text
	}
	if !lua.LVCanConvToString(v) {
		L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	}
	return lua.LVAsString(v)
}
