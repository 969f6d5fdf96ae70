package memcache

import "encoding/binary"

// The memcached binary protocol: framing and parsing. memcached tells it from the text protocol by the first
// byte of a connection (the request magic 0x80); a connection then speaks it to the end. Every request is a
// 24-byte header (magic, opcode, key length, extras length, data type, vbucket, total body length, opaque,
// CAS) and a body of extras, key and value; every response echoes the opcode and the opaque. binconn.go runs
// the commands.
const (
	binaryRequestMagic  = 0x80
	binaryResponseMagic = 0x81
	binaryHeaderLen     = 24
)

// Opcodes of the binary protocol: those memcached 1.6 serves. The quiet variants (…Q) answer only failures (get:
// only hits); the K variants of get return the key.
const (
	opGet       = 0x00
	opSet       = 0x01
	opAdd       = 0x02
	opReplace   = 0x03
	opDelete    = 0x04
	opIncr      = 0x05
	opDecr      = 0x06
	opQuit      = 0x07
	opFlush     = 0x08
	opGetQ      = 0x09
	opNoop      = 0x0a
	opVersion   = 0x0b
	opGetK      = 0x0c
	opGetKQ     = 0x0d
	opAppend    = 0x0e
	opPrepend   = 0x0f
	opStat      = 0x10
	opSetQ      = 0x11
	opAddQ      = 0x12
	opReplaceQ  = 0x13
	opDeleteQ   = 0x14
	opIncrQ     = 0x15
	opDecrQ     = 0x16
	opQuitQ     = 0x17
	opFlushQ    = 0x18
	opAppendQ   = 0x19
	opPrependQ  = 0x1a
	opVerbosity = 0x1b // answered "Unknown command", as memcached 1.6.18 does
	opTouch     = 0x1c
	opGAT       = 0x1d
	opGATQ      = 0x1e
	opSASLList  = 0x20
	opSASLAuth  = 0x21
	opSASLStep  = 0x22
	opGATK      = 0x23
	opGATKQ     = 0x24
)

// Response statuses, with the bodies memcached sends for them.
const (
	stOK             = 0x0000
	stNotFound       = 0x0001
	stExists         = 0x0002
	stTooLarge       = 0x0003
	stInvalid        = 0x0004
	stNotStored      = 0x0005
	stNonNumeric     = 0x0006
	stAuthError      = 0x0020
	stUnknownCommand = 0x0081
	stInternal       = 0x0084
)

// binFailure reports whether a status is an error for metrics, as ERROR, CLIENT_ERROR and SERVER_ERROR are on
// the text protocol (a miss or a failed condition is an answer, not an error).
func binFailure(status uint16) bool {
	switch status {
	case stTooLarge, stInvalid, stNonNumeric, stAuthError, stUnknownCommand, stInternal:
		return true
	}
	return false
}

var statusText = map[uint16]string{
	stNotFound:       "Not found",
	stExists:         "Data exists for key.",
	stTooLarge:       "Too large.",
	stInvalid:        "Invalid arguments",
	stNotStored:      "Not stored.",
	stNonNumeric:     "Non-numeric server-side value for incr or decr",
	stAuthError:      "Auth failure.",
	stUnknownCommand: "Unknown command",
}

// binHeader is what a request's header says that its response needs, plus how to treat it.
type binHeader struct {
	op     byte   // as sent (a quiet opcode stays quiet in the response)
	base   byte   // the opcode without its quiet or K variant: opGet, opSet, ...
	quiet  bool   // answer failures only (get: hits only)
	withK  bool   // a get variant that returns the key
	opaque uint32 // echoed
	cas    uint64
	status uint16 // not 0: the request was refused while parsing, answer this
	close  bool   // close the connection once the refusal is answered (memcached's close_after_write)
}

// binVariants maps the quiet and K opcodes to their base opcode.
var binVariants = map[byte]struct {
	base         byte
	quiet, withK bool
}{
	opGetQ: {opGet, true, false}, opGetK: {opGet, false, true}, opGetKQ: {opGet, true, true},
	opSetQ: {opSet, true, false}, opAddQ: {opAdd, true, false}, opReplaceQ: {opReplace, true, false},
	opDeleteQ: {opDelete, true, false}, opIncrQ: {opIncr, true, false}, opDecrQ: {opDecr, true, false},
	opQuitQ: {opQuit, true, false}, opFlushQ: {opFlush, true, false}, opAppendQ: {opAppend, true, false},
	opPrependQ: {opPrepend, true, false}, opGATQ: {opGAT, true, false}, opGATK: {opGAT, false, true},
	opGATKQ: {opGAT, true, true},
}

// binShape is the body a base opcode takes: extras length (-1: 0 or 4, for flush), whether it needs a key,
// and whether it may carry a value.
func binShape(base byte) (extras int, key, value, known bool) {
	switch base {
	case opGet, opDelete:
		return 0, true, false, true
	case opSet, opAdd, opReplace:
		return 8, true, true, true
	case opAppend, opPrepend:
		return 0, true, true, true
	case opIncr, opDecr:
		return 20, true, false, true
	case opQuit, opNoop, opVersion:
		return 0, false, false, true
	case opFlush:
		return -1, false, false, true
	case opTouch, opGAT:
		return 4, true, false, true
	case opStat, opSASLList:
		return 0, false, false, true
	case opSASLAuth, opSASLStep:
		return 0, true, true, true
	}
	return 0, false, false, false
}

// nextBinary parses one binary request from the front of buf, as next does for the text protocol. A request
// refused from its header is returned with its status set and its body discarded as it arrives, in
// memcached's order of checks (dispatch_bin_command): a header whose key and extras are longer than its body
// ("Unknown command"), a request other than SASL or version from a client that has not authenticated ("Auth
// failure."), a shape wrong for its opcode ("Invalid arguments"), each answered and the connection then
// closed; an unknown opcode, or a value over the item limit, answered and the connection served on. A byte
// other than the request magic where a header should start ends the connection (cmdClose without a reply),
// as in memcached.
func (p *parser) nextBinary(buf []byte, r *request) (int, status) {
	p.need = 0
	if n, st, ok := p.skip(buf); ok {
		return n, st
	}
	if len(buf) < binaryHeaderLen {
		return 0, needMore
	}
	*r = request{cmd: cmdBin}
	if buf[0] != binaryRequestMagic {
		r.cmd = cmdClose
		return len(buf), parsed
	}
	h := &r.bin
	h.op, h.base = buf[1], buf[1]
	if v, ok := binVariants[h.op]; ok {
		h.base, h.quiet, h.withK = v.base, v.quiet, v.withK
	}
	keyLen, extLen := int(binary.BigEndian.Uint16(buf[2:])), int(buf[4])
	bodyLen := int(binary.BigEndian.Uint32(buf[8:]))
	h.opaque, h.cas = binary.BigEndian.Uint32(buf[12:]), binary.BigEndian.Uint64(buf[16:])
	valueLen := bodyLen - keyLen - extLen
	if valueLen < 0 { // a header that contradicts itself
		h.status, h.close = stUnknownCommand, true
		return binaryHeaderLen, parsed
	}
	wantExt, wantKey, hasValue, known := binShape(h.base)
	switch {
	case p.unauthed && !authFree(h.base):
		h.status, h.close = stAuthError, true // refused from its header: its body is never held
	case !known:
		h.status = stUnknownCommand
	case wantExt >= 0 && extLen != wantExt, wantExt < 0 && extLen != 0 && extLen != 4,
		wantKey && keyLen == 0, !wantKey && h.base != opStat && keyLen != 0, !hasValue && valueLen != 0,
		keyLen > p.maxKey:
		h.status, h.close = stInvalid, true
	case hasValue && valueLen > p.maxValue:
		h.status = stTooLarge
	case p.unauthed && bodyLen > maxAuthData:
		h.status = stAuthError // a SASL exchange too long to hold: refused, the connection served on
	}
	if h.status != stOK { // the body is bounded only when the status is OK: discard it
		if h.status == stTooLarge && h.base == opSet {
			// memcached drops the old item of a set refused for its size: wait for the key (at most 250 bytes).
			if len(buf) < binaryHeaderLen+extLen+keyLen {
				p.need = binaryHeaderLen + extLen + keyLen
				return 0, needMore
			}
			r.tooLarge, r.key = cmdSet, buf[binaryHeaderLen+extLen:binaryHeaderLen+extLen+keyLen]
		}
		p.swallow = bodyLen - min(bodyLen, len(buf)-binaryHeaderLen)
		return min(len(buf), binaryHeaderLen+bodyLen), parsed
	}
	total := binaryHeaderLen + bodyLen
	if len(buf) < total {
		p.need = total
		return 0, needMore
	}
	body := buf[binaryHeaderLen:total]
	r.extras = body[:extLen]
	r.key = body[extLen : extLen+keyLen]
	r.data = body[extLen+keyLen:]
	return total, parsed
}

// appendBinResponse appends one response: header, extras, key, value.
func appendBinResponse(out []byte, h *binHeader, status uint16, cas uint64, extras, key, value []byte) []byte {
	var hdr [binaryHeaderLen]byte
	hdr[0], hdr[1] = binaryResponseMagic, h.op
	binary.BigEndian.PutUint16(hdr[2:], uint16(len(key)))
	hdr[4] = byte(len(extras))
	binary.BigEndian.PutUint16(hdr[6:], status)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(hdr[12:], h.opaque)
	binary.BigEndian.PutUint64(hdr[16:], cas)
	out = append(out, hdr[:]...)
	out = append(out, extras...)
	out = append(out, key...)
	return append(out, value...)
}
