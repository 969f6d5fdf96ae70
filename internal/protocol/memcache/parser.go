package memcache

import (
	"bytes"
	"encoding/base64"
)

// Limits of the text protocol, as memcached 1.6 has them.
const (
	// maxKeyLen is the longest key memcached accepts (KEY_MAX_LENGTH).
	maxKeyLen = 250
	// maxLineLen is how many bytes may precede a command line's '\n'. memcached closes a connection that has
	// sent more than 2048 bytes without a newline, unless the line is a get or gets.
	maxLineLen = 2048
	// defaultMaxGetLine bounds a get/gets key list; memcached grows its buffer without bound for those.
	defaultMaxGetLine = 2 << 20
	// maxTokens is memcached's MAX_TOKENS: a line is split into at most 23 tokens plus the rest.
	maxTokens = 24
	// maxMetaTokens is MFLAG_MAX_OPT_LENGTH: a meta command with more tokens (counting the terminal one, as
	// memcached does) is refused.
	maxMetaTokens = 20
	// maxOpaqueLen is the longest O(paque) token, its 'O' included.
	maxOpaqueLen = 32
)

// command names what a request asks for.
type command uint8

const (
	cmdNone  command = iota
	cmdError         // reply err (unless noreply) and go on
	cmdClose         // reply err (if any) and close the connection
	cmdGet
	cmdGets
	cmdGat
	cmdGats
	cmdSet
	cmdAdd
	cmdReplace
	cmdAppend
	cmdPrepend
	cmdCas
	cmdIncr
	cmdDecr
	cmdDelete
	cmdTouch
	cmdFlushAll
	cmdVersion
	cmdVerbosity
	cmdQuit
	cmdStats
	cmdMg
	cmdMs
	cmdMd
	cmdMa
	cmdMn
	cmdMe
	cmdBin // a binary-protocol request (binary.go)
)

// request is one parsed command. Its byte slices alias the connection's read buffer or the parser's arena and
// stay valid until the connection compacts its buffer, which it does only after every request parsed so far
// has been answered.
type request struct {
	cmd     command
	noreply bool
	err     string // cmdError, cmdClose: the reply line without "\r\n"
	key     []byte
	keys    []byte // get family: the space-separated keys; stats: the arguments after the first
	data    []byte // storage commands: the data block without "\r\n"
	flags   uint32
	exptime int64  // memcached exptime as sent (seconds; see expiresAt)
	cas     uint64 // cas unique; incr/decr delta
	sub     []byte // stats: the first argument, if any
	nargs   int    // stats: tokens after the command
	// tooLarge is the storage command refused for its size (with cmdError), whose key memcached then drops.
	tooLarge command
	meta     metaFlags
	bin      binHeader // cmdBin
	extras   []byte    // cmdBin: the extras of the body
	// gatMore: this gat request is a part of one whose later keys are planned as further parts (textWrite).
	gatMore bool
	// flushGen: an immediate flush_all's Handler.flushGeneration as it was read, for cancelFlush once applied.
	flushGen uint64
}

// status tells what parser.next found.
type status uint8

const (
	needMore status = iota // no complete request yet
	parsed                 // a request, in *request
	skipped                // bytes of a rejected data block were discarded
)

// parser splits a byte stream into requests. It is resumable: next looks only at the bytes it is given, keeps
// what it must remember between calls (bytes still to discard, how far a partial line was searched), and gives
// the same requests however the stream is split. It holds no socket.
type parser struct {
	maxKey     int // longest key: 250, or the store's key limit if smaller
	maxValue   int // largest data block accepted
	maxGetLine int // longest get/gets line
	swallow    int // bytes of a refused data block still to discard
	scanned    int // leading bytes of the pending input known to hold no '\n'
	need       int // when needMore: total bytes the pending request needs, if known (0: unknown)
	// unauthed: the connection has not authenticated, so a binary request's body is not buffered unless it
	// is a SASL exchange of at most maxAuthData bytes (the others are answered from their header).
	unauthed bool
	// arena holds base64-decoded meta keys until reset; slices taken from it stay valid when it grows.
	arena []byte
	tok   [maxTokens][]byte
}

func newParser(maxKey, maxValue, maxGetLine int) *parser {
	return &parser{maxKey: min(maxKey, maxKeyLen), maxValue: maxValue, maxGetLine: maxGetLine}
}

// reset forgets the arena once every request parsed so far has been answered.
func (p *parser) reset() { p.arena = p.arena[:0] }

// skip discards what arrived of a refused data block or body (p.swallow bytes); ok is false when nothing is
// to be discarded.
func (p *parser) skip(buf []byte) (n int, st status, ok bool) {
	if p.swallow == 0 {
		return 0, needMore, false
	}
	n = min(p.swallow, len(buf))
	if n == 0 {
		return 0, needMore, true
	}
	p.swallow -= n
	return n, skipped, true
}

// next parses one request from the front of buf and returns how many bytes it used. With needMore it used
// nothing and p.need says how many bytes the request needs, when the line already tells.
func (p *parser) next(buf []byte, r *request) (int, status) {
	p.need = 0
	if n, st, ok := p.skip(buf); ok {
		return n, st
	}
	limit := maxLineLen
	if len(buf) > maxLineLen && isGetLine(buf) {
		limit = p.maxGetLine
	}
	nl := bytes.IndexByte(buf[p.scanned:min(len(buf), limit+1)], '\n')
	if nl < 0 {
		if len(buf) > limit {
			p.scanned = 0
			*r = request{cmd: cmdClose, err: "CLIENT_ERROR line too long"}
			return len(buf), parsed
		}
		p.scanned = len(buf)
		return 0, needMore
	}
	nl += p.scanned
	line := buf[:nl]
	if len(line) > 1 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if i := bytes.IndexByte(line, 0); i >= 0 { // memcached reads the line as a C string
		line = line[:i]
	}
	used := nl + 1
	*r = request{}
	vlen := p.parseLine(line, r)
	if vlen < 0 {
		p.scanned = 0
		return used, parsed
	}
	// A storage command: its data block and "\r\n" follow the line.
	total := used + vlen + 2
	if r.cmd == cmdError { // a meta set whose flags were refused: the block is discarded
		p.scanned = 0
		p.swallow = vlen + 2
		return used, parsed
	}
	if vlen > p.maxValue {
		// memcached answers once the line is read and then discards the block as it arrives. Its set (and
		// meta set) also drops the key's old item, so that a failed store leaves no stale value behind.
		p.scanned = 0
		p.swallow = vlen + 2
		r.tooLarge = r.cmd
		r.cmd, r.err = cmdError, "SERVER_ERROR object too large for cache"
		if r.meta.isMeta {
			r.noreply = false
		}
		return used, parsed
	}
	if len(buf) < total {
		p.need = total
		p.scanned = nl // the line is complete; do not search it again
		return 0, needMore
	}
	p.scanned = 0
	block := buf[used:total]
	if block[vlen] != '\r' || block[vlen+1] != '\n' {
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad data chunk"
		if r.meta.isMeta {
			r.noreply = false // meta commands always report errors
		}
		return total, parsed
	}
	r.data = block[:vlen]
	return total, parsed
}

// isGetLine reports whether buf starts a key list (get, gets, gat, gats), which may grow beyond maxLineLen.
// memcached lets only get and gets lines grow, but accepts any line whose newline arrives in the same read;
// anykv decides from the bytes alone, so it lets gat and gats lines grow too.
func isGetLine(buf []byte) bool {
	i := 0
	for i < len(buf) && buf[i] == ' ' {
		i++
	}
	if i > 100 {
		return false
	}
	b := buf[i:]
	return bytes.HasPrefix(b, []byte("get ")) || bytes.HasPrefix(b, []byte("gets ")) ||
		bytes.HasPrefix(b, []byte("gat ")) || bytes.HasPrefix(b, []byte("gats "))
}

// tokenize splits line at spaces as memcached's tokenize_command does: at most maxTokens-1 tokens, and rest
// holds what follows the last of them when the line had more. It returns memcached's ntokens, which counts
// one terminal token beyond the real ones.
func (p *parser) tokenize(line []byte) (nt int, rest []byte) {
	n := 0
	s := 0
	for e := 0; e < len(line); e++ {
		if line[e] != ' ' {
			continue
		}
		if s != e {
			p.tok[n] = line[s:e]
			n++
			if n == maxTokens-1 {
				if e+1 < len(line) {
					return maxTokens, line[e+1:]
				}
				return n + 1, nil
			}
		}
		s = e + 1
	}
	if s != len(line) {
		p.tok[n] = line[s:]
		n++
	}
	return n + 1, nil
}

// parseLine fills r from one command line. For a storage command whose line is valid it returns the length
// of the data block to read; otherwise -1.
func (p *parser) parseLine(line []byte, r *request) int {
	nt, rest := p.tokenize(line)
	tok := p.tok[:nt-1]
	if nt < 2 || len(tok[0]) < 2 {
		r.cmd, r.err = cmdError, "ERROR"
		return -1
	}
	name := tok[0]
	if name[0] == 'm' && len(name) == 2 {
		return p.parseMeta(line, nt, r)
	}
	switch string(name) {
	case "get", "gets", "gat", "gats", "bget":
		if nt < 3 {
			break
		}
		p.parseRetrieval(line, string(name), r)
		return -1
	case "set", "add", "replace", "append", "prepend":
		if nt != 6 && nt != 7 {
			break
		}
		return p.parseStorage(tok, nt, storageCmd(string(name)), r)
	case "cas":
		if nt != 7 && nt != 8 {
			break
		}
		return p.parseStorage(tok, nt, cmdCas, r)
	case "incr", "decr":
		if nt != 4 && nt != 5 {
			break
		}
		r.cmd = cmdIncr
		if name[0] == 'd' {
			r.cmd = cmdDecr
		}
		p.noreply(tok, r)
		if !p.key(tok[1], r) {
			return -1
		}
		d, ok := parseUint(tok[2], 64)
		if !ok {
			r.cmd, r.err = cmdError, "CLIENT_ERROR invalid numeric delta argument"
			return -1
		}
		r.cas = d
		return -1
	case "delete":
		if nt < 3 || nt > 5 {
			break
		}
		p.parseDelete(tok, nt, r)
		return -1
	case "touch":
		if nt != 4 && nt != 5 {
			break
		}
		r.cmd = cmdTouch
		p.noreply(tok, r)
		if !p.key(tok[1], r) {
			return -1
		}
		if !p.exptime(tok[2], r) {
			return -1
		}
		return -1
	case "flush_all":
		if nt < 2 || nt > 4 {
			break
		}
		r.cmd = cmdFlushAll
		p.noreply(tok, r)
		want := 2
		if r.noreply {
			want = 3
		}
		if nt != want && !p.exptime(tok[1], r) {
			return -1
		}
		return -1
	case "version":
		r.cmd = cmdVersion
		return -1
	case "quit":
		r.cmd = cmdQuit
		return -1
	case "verbosity":
		if nt != 3 && nt != 4 {
			break
		}
		r.cmd = cmdVerbosity
		p.noreply(tok, r)
		v, ok := parseUint(tok[1], 32)
		if !ok {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
			return -1
		}
		r.cas = v
		return -1
	case "stats":
		r.cmd = cmdStats
		r.nargs = nt - 2
		if rest != nil {
			r.nargs = maxTokens // more than any stats form takes
		}
		if nt > 2 {
			r.sub = tok[1]
			r.keys = skipToken(skipToken(line))
		}
		return -1
	case "shutdown":
		r.cmd, r.err = cmdError, "ERROR: shutdown not enabled"
		return -1
	default:
		if isHTTPLine(tok) {
			r.cmd = cmdClose
			return -1
		}
	}
	r.cmd, r.err = cmdError, "ERROR"
	return -1
}

// isHTTPLine reports whether an unknown command line is what memcached 1.6 takes for an HTTP request line
// and closes the connection on, unanswered: its last token starts with "HTTP/" ("GET / HTTP/1.1"). memcached
// looks only after the commands it dispatches by first letter (a, c, d, g, i, s, t: those answer ERROR) and
// the ones it knows by name.
func isHTTPLine(tok [][]byte) bool {
	switch tok[0][0] {
	case 'a', 'c', 'd', 'g', 'i', 's', 't':
		return false
	}
	switch string(tok[0]) {
	case "watch", "lru", "lru_crawler", "extstore":
		return false
	}
	return bytes.HasPrefix(tok[len(tok)-1], []byte("HTTP/"))
}

func storageCmd(name string) command {
	switch name {
	case "set":
		return cmdSet
	case "add":
		return cmdAdd
	case "replace":
		return cmdReplace
	case "append":
		return cmdAppend
	}
	return cmdPrepend
}

// noreply sets r.noreply if the last token is "noreply", as memcached's set_noreply_maybe does.
func (p *parser) noreply(tok [][]byte, r *request) {
	if string(tok[len(tok)-1]) == "noreply" {
		r.noreply = true
	}
}

// key checks a text-protocol key: at most 250 bytes, no control characters (spaces cannot occur in a token).
func (p *parser) key(k []byte, r *request) bool {
	if !p.validKey(k) {
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
		return false
	}
	r.key = k
	return true
}

// validKey checks a key's length and, for a key sent as text, that it has no control characters.
func (p *parser) validKey(k []byte) bool {
	if len(k) == 0 || len(k) > p.maxKey {
		return false
	}
	for _, c := range k {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func (p *parser) exptime(t []byte, r *request) bool {
	e, ok := parseInt(t)
	if !ok {
		r.cmd, r.err = cmdError, "CLIENT_ERROR invalid exptime argument"
		return false
	}
	r.exptime = e
	return true
}

func (p *parser) parseStorage(tok [][]byte, nt int, cmd command, r *request) int {
	r.cmd = cmd
	p.noreply(tok, r)
	if len(tok[1]) > maxKeyLen { // memcached checks this before anything else and reads no data block
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
		return -1
	}
	keyOK := p.key(tok[1], r)
	// The numbers are read as memcached reads them (cUint, cInt): a line it takes has a data block after it, and a
	// number it takes and anykv refused used to make that block run as commands.
	flags, ok1 := cUint(tok[2]) // memcached truncates flags to 32 bits; anykv refuses them below
	keyOK = keyOK && flags < 1<<32
	exp, ok2 := cInt(tok[3])
	vlen, ok3 := cInt(tok[4])
	if !ok1 || !ok2 || !ok3 || vlen < 0 || vlen > 1<<31-3 {
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
		return -1
	}
	if cmd == cmdCas {
		c, ok := cUint(tok[5])
		if !ok {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
			return -1
		}
		r.cas = c
	}
	if !keyOK {
		// A key or flags memcached accepts (a control character, a key longer than the store's smaller limit,
		// flags over 32 bits): to a client the line is valid, so what follows it is a value, never commands. The
		// request is refused and its block discarded (cmdError).
		r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
		return int(vlen)
	}
	r.flags, r.exptime = uint32(flags), exp
	return int(vlen)
}

func (p *parser) parseDelete(tok [][]byte, nt int, r *request) {
	r.cmd = cmdDelete
	if nt > 3 {
		holdIsZero := string(tok[2]) == "0"
		p.noreply(tok, r)
		valid := (nt == 4 && (holdIsZero || r.noreply)) || (nt == 5 && holdIsZero && r.noreply)
		if !valid {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
			return
		}
	}
	p.key(tok[1], r)
}

// parseRetrieval handles get, gets, gat and gats: the keys stay in one slice, split when executed.
func (p *parser) parseRetrieval(line []byte, name string, r *request) {
	switch name {
	case "get", "bget":
		r.cmd = cmdGet
	case "gets":
		r.cmd = cmdGets
	case "gat":
		r.cmd = cmdGat
	case "gats":
		r.cmd = cmdGats
	}
	rest := skipToken(line) // past the command name
	if r.cmd == cmdGat || r.cmd == cmdGats {
		t, after := nextToken(rest)
		if !p.exptime(t, r) {
			return
		}
		rest = after
	}
	// Check every key before any lookup: memcached answers a bad key with the error line alone.
	for k, after := nextToken(rest); len(k) > 0; k, after = nextToken(after) {
		if !p.validKey(k) {
			r.cmd, r.err = cmdError, "CLIENT_ERROR bad command line format"
			return
		}
	}
	r.keys = rest
}

// nextToken returns the first space-separated token of b and what follows it.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' {
		j++
	}
	return b[i:j], b[j:]
}

func skipToken(b []byte) []byte {
	_, rest := nextToken(b)
	return rest
}

// parseUint parses an unsigned decimal as memcached's safe_strtoul/safe_strtoull accept it (an optional '+',
// digits), within bits bits. memcached silently truncates 64-bit flags to 32; anykv refuses them instead.
func parseUint(b []byte, bits uint) (uint64, bool) {
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if bits < 64 && n >= 1<<bits {
		return 0, false
	}
	return n, true
}

// cNumber reads a decimal as C's strtoul and strtol do inside memcached's safe_strtoul and safe_strtol, which
// read a storage line's numbers: white space first, a sign, digits (at least one; past 64 bits is ERANGE), then
// white space or the end, and whatever follows that white space is ignored ("\t9", "9\r", "9\tjunk").
func cNumber(b []byte) (neg bool, n uint64, ok bool) {
	i := 0
	for i < len(b) && cSpace(b[i]) {
		i++
	}
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (1<<64-1-d)/10 {
			return false, 0, false
		}
		n = n*10 + d
	}
	if i == start || i < len(b) && !cSpace(b[i]) {
		return false, 0, false
	}
	return neg, n, true
}

// cSpace is C's isspace in the C locale.
func cSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// cUint is safe_strtoul's reading (cNumber): a negative number is refused, "-0" is 0.
func cUint(b []byte) (uint64, bool) {
	neg, n, ok := cNumber(b)
	return n, ok && (!neg || n == 0)
}

// cInt is safe_strtol's reading (cNumber) within int64.
func cInt(b []byte) (int64, bool) {
	neg, n, ok := cNumber(b)
	switch {
	case !ok || (!neg && n > 1<<63-1) || (neg && n > 1<<63):
		return 0, false
	case neg:
		return -int64(n-1) - 1, true
	}
	return int64(n), true
}

// parseInt parses a signed decimal (optional sign, digits) within int64.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseUint(b, 64)
	if !ok || (!neg && u > 1<<63-1) || (neg && u > 1<<63) {
		return 0, false
	}
	if neg {
		return -int64(u-1) - 1, true
	}
	return int64(u), true
}

// decodeKey base64-decodes a meta key into the arena; false if it is not valid padded base64 or decodes to
// nothing.
func (p *parser) decodeKey(k []byte) ([]byte, bool) {
	n := base64.StdEncoding.DecodedLen(len(k))
	start := len(p.arena)
	p.arena = append(p.arena, make([]byte, n)...)
	m, err := base64.StdEncoding.Decode(p.arena[start:], k)
	if err != nil || m == 0 {
		p.arena = p.arena[:start]
		return nil, false
	}
	p.arena = p.arena[:start+m]
	return p.arena[start : start+m : start+m], true
}
