package resp

import (
	"math"
	"strconv"
)

// dropAbove is the capacity past which Reset lets the buffer go, so one huge
// reply does not pin its memory to an idle connection.
const dropAbove = 1 << 20

// Writer appends replies in RESP2 or RESP3 to one byte slice that the caller
// flushes in a single write, so the replies to a pipelined batch leave in one
// syscall. The zero value writes RESP2. Not safe for concurrent use.
//
// A reply type RESP2 lacks is written as its RESP2 stand-in, as Redis does:
// maps and sets as flat arrays, doubles as bulk strings, booleans as
// integers. Appending never allocates except to grow the buffer.
type Writer struct {
	buf   []byte
	proto int
	// OnError, if set, is told every error reply written (its text without the '-'): Redis's error statistics.
	OnError func(msg string)
}

// NewWriter returns a writer speaking protocol version proto (2 or 3).
func NewWriter(proto int) *Writer {
	w := &Writer{}
	w.SetProto(proto)
	return w
}

// SetProto switches the protocol for the replies that follow (HELLO 2 or
// HELLO 3). Any version other than 3 means 2.
func (w *Writer) SetProto(v int) {
	if v == 3 {
		w.proto = 3
	} else {
		w.proto = 2
	}
}

// Proto returns the protocol version in use, 2 or 3.
func (w *Writer) Proto() int {
	if w.proto == 3 {
		return 3
	}
	return 2
}

// Bytes returns the replies appended since the last Reset. The slice is
// valid until the next call that appends or resets.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns how many bytes are waiting to be flushed.
func (w *Writer) Len() int { return len(w.buf) }

// Truncate drops what was written after the first n bytes (a reply CLIENT REPLY OFF or SKIP silences).
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// Reset empties the writer after a flush, keeping its memory for the next
// batch unless it grew past 1 MiB.
func (w *Writer) Reset() {
	if cap(w.buf) > dropAbove {
		w.buf = nil
		return
	}
	w.buf = w.buf[:0]
}

// SimpleString appends a status reply such as "+OK". CR and LF in s become
// spaces, since a status reply is one line.
func (w *Writer) SimpleString(s string) {
	w.line('+', s)
}

// Error appends an error reply. msg is the full text, e.g. "ERR unknown
// command 'foo'", written after a '-' (unless it already starts with one);
// CR and LF become spaces, as Redis does, so the reply stays one line.
func (w *Writer) Error(msg string) {
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	if w.OnError != nil {
		w.OnError(msg)
	}
	w.line('-', msg)
}

// ErrorCounted appends an error reply as Error does, without telling OnError: one counted already (a script's
// error that a command it called answered, counted then).
func (w *Writer) ErrorCounted(msg string) {
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	w.line('-', msg)
}

// line appends prefix, s with CR and LF replaced by spaces, and CRLF.
func (w *Writer) line(prefix byte, s string) {
	w.buf = append(w.buf, prefix)
	start := len(w.buf)
	w.buf = append(w.buf, s...)
	for i := start; i < len(w.buf); i++ {
		if c := w.buf[i]; c == '\r' || c == '\n' {
			w.buf[i] = ' '
		}
	}
	w.buf = append(w.buf, '\r', '\n')
}

// header appends prefix, n in decimal, and CRLF: the shape of integers,
// lengths and counts.
func (w *Writer) header(prefix byte, n int64) {
	w.buf = append(w.buf, prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Int appends an integer reply.
func (w *Writer) Int(n int64) { w.header(':', n) }

// Bulk appends a bulk string reply holding b, which may be any bytes.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkString appends a bulk string reply holding s, without converting it
// to a byte slice first.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Null appends a missing value: RESP2's null bulk "$-1", RESP3's "_".
func (w *Writer) Null() {
	if w.proto == 3 {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "$-1\r\n"...)
	}
}

// NullArray appends a missing aggregate (e.g. a timed-out BLPOP): RESP2's
// null array "*-1", RESP3's "_".
func (w *Writer) NullArray() {
	if w.proto == 3 {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "*-1\r\n"...)
	}
}

// ArrayHeader starts an array of n replies, which the caller appends next.
func (w *Writer) ArrayHeader(n int) { w.header('*', int64(n)) }

// MapHeader starts a map of n key-value pairs, the caller appending key,
// value, key, value... In RESP2 it is an array of 2n replies.
func (w *Writer) MapHeader(n int) {
	if w.proto == 3 {
		w.header('%', int64(n))
	} else {
		w.header('*', 2*int64(n))
	}
}

// SetHeader starts a set of n replies. In RESP2 it is an array.
func (w *Writer) SetHeader(n int) {
	if w.proto == 3 {
		w.header('~', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

// PushHeader starts an out-of-band push of n replies (pub/sub messages,
// client-side caching invalidations). In RESP2 it is an array.
func (w *Writer) PushHeader(n int) {
	if w.proto == 3 {
		w.header('>', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

// Double appends a floating point reply: RESP3 ",<f>" with inf, -inf and
// nan spelled out, RESP2 a bulk string of the same text, as Redis does.
func (w *Writer) Double(f float64) {
	if w.proto == 3 {
		w.buf = append(w.buf, ',')
		w.buf = appendDouble(w.buf, f)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	var tmp [32]byte
	txt := appendDouble(tmp[:0], f)
	w.header('$', int64(len(txt)))
	w.buf = append(w.buf, txt...)
	w.buf = append(w.buf, '\r', '\n')
}

// AppendDouble appends f as Double writes it (Redis 7.2's shortest form): for callers that turn numbers into
// arguments as Redis does (a script's redis.call).
func AppendDouble(b []byte, f float64) []byte { return appendDouble(b, f) }

// appendDouble formats f the way clients and Redis users expect: the
// shortest text that reads back as f, in plain notation for magnitudes from
// 1e-4 up to 1e17 (so integral scores print as integers, as %.17g does) and
// with an exponent otherwise; inf, -inf and nan spelled out.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e17) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'e', -1, 64)
}

// Bool appends a boolean: RESP3 "#t"/"#f", RESP2 the integer 1 or 0.
func (w *Writer) Bool(b bool) {
	switch {
	case w.proto == 3 && b:
		w.buf = append(w.buf, "#t\r\n"...)
	case w.proto == 3:
		w.buf = append(w.buf, "#f\r\n"...)
	case b:
		w.buf = append(w.buf, ":1\r\n"...)
	default:
		w.buf = append(w.buf, ":0\r\n"...)
	}
}

// Verbatim appends text meant to be shown as is (INFO, CLIENT LIST, LATENCY
// DOCTOR): RESP3 "=<len>\r\n<fmt>:<s>", RESP2 a bulk string of s. format is
// the three-letter type, "txt" or "mkd"; any other length means "txt".
func (w *Writer) Verbatim(format string, s string) {
	if w.proto != 3 {
		w.BulkString(s)
		return
	}
	if len(format) != 3 {
		format = "txt"
	}
	w.header('=', int64(len(s)+4))
	w.buf = append(w.buf, format...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Raw appends bytes that already are one or more encoded replies (a script's result, encoded where it ran).
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }
