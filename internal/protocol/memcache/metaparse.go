package memcache

// metaFlags are the parsed flags of a meta command (mg, ms, md, ma). The flags that only shape the reply
// (k, O, c, f, s, t, ...) are read again from rest when the reply is built, in the order the client sent them.
type metaFlags struct {
	isMeta     bool
	rest       []byte // the flag tokens as sent
	keyTok     []byte // the key token as sent (base64 text with b)
	binary     bool   // b: the key was base64
	value      bool   // v
	quiet      bool   // q
	stale      bool   // I
	hasTTL     bool   // T
	ttl        int64
	hasViv     bool // N
	viv        int64
	hasCas     bool // C
	cas        uint64
	flags      uint32 // F
	mode       byte   // M
	delta      uint64 // D (default 1)
	init       uint64 // J
	hasRecache bool   // R
	recache    int64
	// hitBefore (h), lastAccess (l): mg's return flags, answered from the handler's accesses (access.go).
	hitBefore, lastAccess bool
	// noBump (u): memcached leaves the item's LRU place and its fetched bit as they were, so the fetch is not
	// remembered for later h and l flags.
	noBump bool
}

// parseMeta parses mg, ms, md, ma, mn and me lines following memcached 1.6's process_m*_command: the same
// checks in the same order with the same error lines. For ms it returns the data length (the block is then
// read, or discarded when r.cmd is cmdError), otherwise -1.
func (p *parser) parseMeta(line []byte, nt int, r *request) int {
	tok := p.tok[:nt-1]
	r.meta.isMeta = true
	switch tok[0][1] {
	case 'g':
		r.cmd = cmdMg
	case 's':
		r.cmd = cmdMs
	case 'd':
		r.cmd = cmdMd
	case 'a':
		r.cmd = cmdMa
	case 'n':
		r.cmd = cmdMn
		return -1
	case 'e':
		r.cmd = cmdMe
		p.parseMe(tok, nt, r)
		return -1
	default:
		r.cmd, r.err = cmdError, "ERROR"
		return -1
	}
	fail := func(msg string) int {
		r.cmd, r.err, r.noreply = cmdError, msg, false
		return -1
	}
	if nt < 3 {
		return fail("ERROR")
	}
	if len(tok[1]) > maxKeyLen || (r.cmd == cmdMs && nt == 3) {
		return fail("CLIENT_ERROR bad command line format")
	}
	if nt > maxMetaTokens {
		if r.cmd == cmdMg {
			return fail("CLIENT_ERROR options flags are too long")
		}
		return fail("CLIENT_ERROR options flags too long")
	}
	first, vlen := 2, -1
	if r.cmd == cmdMs {
		n, ok := cInt(tok[2]) // as memcached reads it: a length it takes has a block after it (cNumber)
		if !ok || n < 0 || n > 1<<31-3 {
			return fail("CLIENT_ERROR bad command line format")
		}
		first, vlen = 3, int(n)
	}
	r.key, r.meta.keyTok = tok[1], tok[1]
	if first < len(tok) { // the flags run from their first token to the end of the line
		r.meta.rest = line[cap(line)-cap(tok[first]):]
	}
	if msg, ok := p.metaFlags(tok[first:], r); !ok {
		if r.cmd == cmdMd || r.cmd == cmdMa {
			msg = "CLIENT_ERROR invalid or duplicate flag"
		}
		fail(msg)
		return vlen // ms: the block is discarded
	}
	m := &r.meta
	if (!m.binary && !p.validKey(r.key)) || len(r.key) > p.maxKey {
		fail("CLIENT_ERROR bad command line format")
		return vlen // ms: a key memcached accepts, so the block is a value: discarded, never read as commands
	}
	r.noreply = m.quiet
	if opaqueTooLong(m.rest) {
		fail("CLIENT_ERROR opaque token too long")
		return vlen
	}
	switch r.cmd {
	case cmdMs:
		switch m.mode {
		case 0, 'E', 'A', 'P', 'R', 'S':
		default:
			fail("CLIENT_ERROR invalid mode for ms M token")
			return vlen
		}
	case cmdMa:
		switch m.mode {
		case 0, 'I', 'i', '+', 'D', 'd', '-':
		default:
			return fail("CLIENT_ERROR invalid mode for ma M token")
		}
	}
	return vlen
}

// parseMe parses "me <key> [b]".
func (p *parser) parseMe(tok [][]byte, nt int, r *request) {
	if nt < 3 || len(tok[1]) > maxKeyLen {
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
		return
	}
	r.meta.keyTok = tok[1]
	if nt >= 4 && string(tok[2]) == "b" {
		k, ok := p.decodeKey(tok[1])
		if !ok {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
			return
		}
		if len(k) > p.maxKey {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
			return
		}
		r.key, r.meta.binary = k, true
		return
	}
	p.key(tok[1], r)
}

// metaFlags is memcached's _meta_flag_preparse: every flag at most once, known letters only, numeric tokens
// checked. It returns the error line when the flags are refused.
func (p *parser) metaFlags(toks [][]byte, r *request) (string, bool) {
	var seen [2]uint64
	m := &r.meta
	m.delta = 1
	msg, bad := "", false
	setErr := func(s string) {
		bad = true
		if s != "" {
			msg = s
		}
	}
	const badToken = "CLIENT_ERROR bad token in command line format"
	for _, t := range toks {
		o := t[0]
		if o >= 127 || seen[o/64]&(1<<(o%64)) != 0 {
			return "CLIENT_ERROR duplicate flag", false
		}
		seen[o/64] |= 1 << (o % 64)
		arg := t[1:]
		switch o {
		case 'b':
			k, ok := p.decodeKey(r.key)
			if !ok {
				setErr("CLIENT_ERROR error decoding key")
				continue
			}
			r.key, m.binary = k, true
		case 'N', 'T', 'R':
			v, ok := parseInt(arg)
			if !ok {
				setErr(badToken)
				continue
			}
			switch o {
			case 'N':
				m.hasViv, m.viv = true, v
			case 'T':
				m.hasTTL, m.ttl = true, v
			default:
				m.hasRecache, m.recache = true, v
			}
		case 'l':
			m.lastAccess = true
		case 'h':
			m.hitBefore = true
		case 'u':
			m.noBump = true
		case 'O', 'P', 'L', 'k', 's', 't', 'c', 'f':
		case 'v':
			m.value = true
		case 'q':
			m.quiet = true
		case 'F':
			v, ok := parseUint(arg, 32)
			if !ok {
				setErr("")
				continue
			}
			m.flags = uint32(v)
		case 'C':
			v, ok := parseUint(arg, 64)
			if !ok {
				setErr(badToken)
				continue
			}
			m.hasCas, m.cas = true, v
		case 'M':
			if len(t) != 2 {
				setErr("CLIENT_ERROR incorrect length for M token")
				continue
			}
			m.mode = t[1]
		case 'J':
			v, ok := parseUint(arg, 64)
			if !ok {
				setErr("CLIENT_ERROR invalid numeric initial value")
				continue
			}
			m.init = v
		case 'D':
			v, ok := parseUint(arg, 64)
			if !ok {
				setErr("CLIENT_ERROR invalid numeric delta value")
				continue
			}
			m.delta = v
		case 'I':
			m.stale = true
		default:
			return "CLIENT_ERROR invalid flag", false
		}
	}
	if bad {
		if msg == "" {
			msg = "CLIENT_ERROR bad command line format"
		}
		return msg, false
	}
	return "", true
}

// opaqueTooLong reports whether an O token is longer than memcached allows.
func opaqueTooLong(rest []byte) bool {
	for t, after := nextToken(rest); len(t) > 0; t, after = nextToken(after) {
		if t[0] == 'O' && len(t) > maxOpaqueLen {
			return true
		}
	}
	return false
}
