package resp

import (
	"io"
	"math"

	"anykv/internal/membudget"
)

// Limits bound what one request may hold; the parser checks a length before
// allocating for it. A zero field takes its DefaultLimits value.
type Limits struct {
	MaxBulk   int // largest bulk string argument (Redis proto-max-bulk-len, default 512 MiB)
	MaxArgs   int // most arguments in one multibulk (Redis: 1024*1024)
	MaxInline int // longest inline command line, and longest "*"/"$" header line (Redis: 64 KiB)
	// MaxQuery bounds the unparsed bytes one connection may hold, that is the incomplete command being read
	// (Redis client-query-buffer-limit, default 1 GiB). A command that would need more fails with
	// ErrQueryBufferLimit.
	MaxQuery int
}

// DefaultLimits returns the limits redis-server 7 applies out of the box.
func DefaultLimits() Limits {
	return Limits{
		MaxBulk:   512 << 20,
		MaxArgs:   1024 * 1024,
		MaxInline: 64 << 10,
		MaxQuery:  1 << 30,
	}
}

const (
	// initialBufSize is the first buffer allocated, Redis's PROTO_IOBUF_LEN.
	initialBufSize = 16 << 10
	// minRead is the least free space Fill offers to a Read.
	minRead = 4 << 10
)

// parseState says what the parser is waiting for. Every state resumes from
// fields of Parser, so a command may be split across any number of reads.
type parseState uint8

const (
	stCommand  parseState = iota // at the first byte of a command
	stInline                     // looking for the '\n' ending an inline command
	stCount                      // looking for the '\r' ending "*<count>"
	stBulkLen                    // looking for the '\r' ending "$<len>"
	stBulkData                   // waiting for <len> bytes and the two after them
)

// span locates one parsed argument of the command being read, relative to
// the command's first byte (Parser.r), so compacting the buffer, which moves
// the whole command, leaves spans valid.
type span struct{ off, n int }

// Parser splits a client's byte stream into commands. Not safe for
// concurrent use; one per connection.
//
// All bytes of the command being parsed stay in one buffer, so every
// argument Next returns is a slice of that buffer: no copy per argument and
// no allocation per command once the buffer and the argument slice have
// grown to the workload. Buffered is therefore the size of Redis's query
// buffer, which a caller may compare with a client-query-buffer-limit.
type Parser struct {
	lim Limits

	buf []byte // len(buf) == cap(buf); the bytes held are buf[r:w]
	// small is the connection's own buffer of initialBufSize, allocated once. While a command does not fit
	// it, buf is a big one from acct's pools (big is true), given back once the held bytes fit small again.
	small []byte
	big   bool
	acct  *membudget.Account
	r, w  int // r is the first byte of the command being parsed
	pos   int // parse cursor: buf[r:pos] is the part of the command already parsed
	scan  int // where the search for the current line's terminator resumes

	state parseState
	left  int // elements still to come in the current multibulk
	bulk  int // length of the bulk being read, in stBulkData

	spans []span   // arguments of the current multibulk so far
	args  [][]byte // reused result of Next

	err *ProtocolError // sticky: once set, the stream is unusable

	unauth bool // SetUnauthenticated: counts over unauthMaxArgs and bulks over unauthMaxBulk fail
}

// What a client that has not authenticated may send in one multibulk, Redis's bounds since 6.2: enough for AUTH
// and HELLO, not enough to make the server buffer much before the password is checked.
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16 << 10
	// redisMaxBulk is Redis's default proto-max-bulk-len.
	redisMaxBulk = 512 << 20
)

// SetUnauthenticated turns the bounds for a client that has not authenticated on or off (between commands):
// while on, a multibulk of more than 10 arguments or a bulk over 16 KiB is a protocol error, as in Redis.
func (p *Parser) SetUnauthenticated(on bool) { p.unauth = on }

// NewParser returns a parser enforcing l (zero fields take defaults). It
// allocates its buffer on the first Fill or Feed.
func NewParser(l Limits) *Parser {
	p := &Parser{}
	p.SetLimits(l)
	return p
}

// SetLimits changes the limits between commands (zero fields take defaults), as Redis's CONFIG SET
// proto-max-bulk-len and client-query-buffer-limit do for connections already open.
func (p *Parser) SetLimits(l Limits) {
	d := DefaultLimits()
	if l.MaxBulk <= 0 {
		l.MaxBulk = d.MaxBulk
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = d.MaxArgs
	}
	if l.MaxInline <= 0 {
		l.MaxInline = d.MaxInline
	}
	if l.MaxQuery <= 0 {
		l.MaxQuery = d.MaxQuery
	}
	// Keep index arithmetic (a bulk plus its CRLF plus a read) in range.
	l.MaxBulk = min(l.MaxBulk, math.MaxInt/4)
	l.MaxQuery = min(l.MaxQuery, math.MaxInt/4)
	p.lim = l
}

// SetAccount makes the parser take its big buffers from a, so they count against the budget of all
// connections; a refusal (or the connection's eviction) fails the stream with ErrClientMemory. Without it
// big buffers are pooled but not counted. Call before the first Fill.
func (p *Parser) SetAccount(a *membudget.Account) { p.acct = a }

// Release gives back a big buffer the parser holds, with the bytes in it. Call it (deferred) when the
// connection ends.
func (p *Parser) Release() {
	if p.big {
		p.acct.Drop(p.buf)
		p.buf, p.big = p.small, false
		p.r, p.w, p.pos, p.scan = 0, 0, 0, 0
		p.state = stCommand
	}
}

// Detach leaves the arguments Next returned last to the caller: the next command gets an outer slice of its own
// instead of reusing theirs (a caller keeping a big command's arguments past the next Next, without a copy).
func (p *Parser) Detach() { p.args = nil }

// Limits returns the limits in force, defaults filled in.
func (p *Parser) Limits() Limits { return p.lim }

// Fill reads once from r into the parser's buffer (growing it only as
// needed, never to a size taken on trust from the peer beyond the limits).
// Call Next until it returns nil before calling Fill again: Fill makes room
// for the command still incomplete, and grows the buffer when that command
// fills it, at most doubling it per call. When the command outgrows
// Limits.MaxQuery or the memory budget, Fill reads nothing and Next returns
// the error (ErrQueryBufferLimit, ErrClientMemory).
func (p *Parser) Fill(r io.Reader) (int, error) {
	if !p.reserve(minRead) {
		return 0, nil
	}
	end := min(len(p.buf), p.r+p.lim.MaxQuery)
	n, err := r.Read(p.buf[p.w:end])
	if n > 0 {
		p.w += n
		if p.big {
			// A big command coming in slowly but steadily is not idle (membudget's idleEvict): its buffer doubles,
			// and reserves, only now and then. Only for a big buffer: small commands pay nothing.
			p.acct.Progress(n)
		}
	}
	if err != nil && p.err == nil && p.acct.Evicted() {
		p.err = ErrClientMemory
	}
	return n, err
}

// Feed appends bytes (for tests and fuzzing). Beyond Limits.MaxQuery it
// keeps what fits and Next returns ErrQueryBufferLimit.
func (p *Parser) Feed(b []byte) {
	for len(b) > 0 && p.reserve(len(b)) {
		end := min(len(p.buf), p.r+p.lim.MaxQuery)
		n := copy(p.buf[p.w:end], b)
		p.w += n
		b = b[n:]
	}
}

// Buffered reports how many unparsed bytes are held, counting the part of
// an incomplete command already looked at.
func (p *Parser) Buffered() int { return p.w - p.r }

// Size reports the bytes of the buffer the parser holds (0 before the first Fill or Feed).
func (p *Parser) Size() int { return len(p.buf) }

// reserve makes len(p.buf)-p.w >= want (less when the command being read
// needs less, or may hold no more), moving the held bytes to the front of
// the buffer, into a bigger one, or back into the small one. It invalidates
// slices Next returned. It reports false, with p.err set, when the command
// may not grow.
func (p *Parser) reserve(want int) bool {
	if p.err != nil {
		return false
	}
	if p.r == p.w {
		// Nothing held, so no command is in progress: start at the front.
		p.r, p.w, p.pos, p.scan = 0, 0, 0, 0
	}
	held := p.w - p.r
	if room := p.lim.MaxQuery - held; room < want {
		if room <= 0 {
			p.err = ErrQueryBufferLimit
			return false
		}
		want = room
	}
	if p.state == stBulkData {
		// Ask only for what the current bulk still lacks, so a buffer sized
		// to the command is not outgrown by its last read.
		if left := p.pos + p.bulk + 2 - p.w; left > 0 && left < want {
			want = left
		}
	}
	need := held + want
	if p.big && need <= initialBufSize {
		// The big command is done: let go of its buffer.
		return p.moveTo(initialBufSize)
	}
	if len(p.buf)-p.w >= want {
		return true
	}
	if p.r > 0 && len(p.buf) >= need && held <= len(p.buf)/2 {
		copy(p.buf, p.buf[p.r:p.w])
		p.shift(p.r)
		return true
	}
	size := initialBufSize
	if len(p.buf) >= initialBufSize {
		size = membudget.NextSize(len(p.buf))
	}
	size = max(size, need)
	if p.state == stBulkData {
		// The current bulk tells how much more this command needs at
		// least; do not double far past it. This only ever lowers the
		// size, so a declared length is never allocated on trust.
		if full := p.pos + p.bulk + 2 - p.r; full >= need && full < size {
			size = full
		}
	}
	size = min(size, max(need, p.lim.MaxQuery))
	return p.moveTo(size)
}

// moveTo moves the held bytes to the front of a buffer of at least size
// bytes: the small one when it fits, else one from the account's pools. It
// reports false, with p.err set, when the budget refuses.
func (p *Parser) moveTo(size int) bool {
	var nb []byte
	if size <= initialBufSize {
		if p.small == nil {
			p.small = make([]byte, initialBufSize)
		}
		nb = p.small
	} else {
		var err error
		if p.big {
			nb, err = p.acct.Grow(p.buf, size) // outgrown mid-command: its bytes pass to the new buffer
		} else {
			nb, err = p.acct.Alloc(size)
		}
		if err != nil {
			p.err = ErrClientMemory
			return false
		}
	}
	copy(nb, p.buf[p.r:p.w])
	if p.big && size <= initialBufSize {
		p.acct.Free(p.buf) // the big command is done: pool its buffer for the next
	}
	p.buf, p.big = nb, size > initialBufSize
	p.shift(p.r)
	return true
}

// shift moves every index back by d after the held bytes moved to the front.
func (p *Parser) shift(d int) {
	p.r -= d
	p.w -= d
	p.pos -= d
	p.scan -= d
}

// Next returns the next complete command's arguments, or (nil, nil) when it
// needs more input. The returned slices are valid only until the next
// Fill/Feed call (callers copy what they keep), and the outer slice is
// reused by the next Next. A *ProtocolError means the stream is unusable:
// the caller writes the error reply and closes the connection (as Redis
// does); every later call returns the same error.
//
// Like Redis, a request starting with '*' is a multibulk and anything else
// an inline command; "*0", negative counts and blank inline lines are
// skipped; the two bytes after a bulk, and the byte after a header line's
// '\r', are skipped without being checked.
func (p *Parser) Next() ([][]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	for {
		switch p.state {
		case stCommand:
			if p.pos == p.w {
				return nil, nil
			}
			p.scan = p.pos
			if p.buf[p.pos] == '*' {
				p.state = stCount
			} else {
				p.state = stInline
			}

		case stInline:
			args, done, err := p.inline()
			if err != nil {
				return p.fail(err)
			}
			if !done {
				return nil, nil
			}
			if len(args) > 0 {
				return args, nil
			}

		case stCount:
			cr, err := p.headerLine(ErrTooBigMbulkCount)
			if err != nil {
				return p.fail(err)
			}
			if cr < 0 {
				return nil, nil
			}
			n, ok := parseInt(p.buf[p.pos+1 : cr])
			if !ok || n > int64(p.lim.MaxArgs) {
				return p.fail(ErrInvalidMultibulkLength)
			}
			if p.unauth && n > unauthMaxArgs {
				return p.fail(ErrUnauthMultibulkLength)
			}
			p.pos = cr + 2
			if n <= 0 {
				p.r = p.pos
				p.state = stCommand
				continue
			}
			p.left = int(n)
			p.spans = p.spans[:0]
			p.scan = p.pos
			p.state = stBulkLen

		case stBulkLen:
			cr, err := p.headerLine(ErrTooBigBulkCount)
			if err != nil {
				return p.fail(err)
			}
			if cr < 0 {
				return nil, nil
			}
			if c := p.buf[p.pos]; c != '$' {
				return p.fail(expectedDollar(c))
			}
			n, ok := parseInt(p.buf[p.pos+1 : cr])
			if ok && p.unauth && n > unauthMaxBulk && n <= max(redisMaxBulk, int64(p.lim.MaxBulk)) {
				// Before the bound: Redis checks its proto-max-bulk-len (512 MiB by default) first, anykv's is
				// lower (the value limit), and a bulk Redis calls unauthenticated gets Redis's error here too.
				return p.fail(ErrUnauthBulkLength)
			}
			if !ok || n < 0 || n > int64(p.lim.MaxBulk) {
				return p.fail(ErrInvalidBulkLength)
			}
			p.pos = cr + 2
			p.bulk = int(n)
			p.state = stBulkData

		case stBulkData:
			if p.w-p.pos < p.bulk+2 {
				return nil, nil
			}
			p.spans = append(p.spans, span{p.pos - p.r, p.bulk})
			p.pos += p.bulk + 2
			p.left--
			if p.left > 0 {
				p.scan = p.pos
				p.state = stBulkLen
				continue
			}
			args := p.args[:0]
			for _, s := range p.spans {
				o := p.r + s.off
				args = append(args, p.buf[o:o+s.n:o+s.n])
			}
			p.args = args
			p.r = p.pos
			p.state = stCommand
			return args, nil
		}
	}
}

// fail makes err sticky and returns it.
func (p *Parser) fail(err *ProtocolError) ([][]byte, error) {
	p.err = err
	return nil, err
}

// headerLine finds the '\r' ending the "*" or "$" line that starts at
// p.pos. It returns the index of the '\r' once the byte after it is held
// too, -1 when more input is needed, and tooBig when none of the first
// MaxInline+1 bytes of the line is a '\r' (Redis's test, made independent
// of how the bytes were split across reads).
func (p *Parser) headerLine(tooBig *ProtocolError) (int, *ProtocolError) {
	end := p.w
	if p.w-p.pos > p.lim.MaxInline {
		end = p.pos + p.lim.MaxInline + 1
	}
	i := p.scan
	for i < end && p.buf[i] != '\r' {
		i++
	}
	p.scan = i
	if i == end {
		if p.w-p.pos > p.lim.MaxInline {
			return -1, tooBig
		}
		return -1, nil
	}
	if i+1 >= p.w {
		return -1, nil
	}
	return i, nil
}
