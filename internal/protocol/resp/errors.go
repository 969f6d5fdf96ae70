package resp

// ProtocolError reports a request the stream cannot recover from. Its
// message is the exact error reply Redis 7 sends (without the leading '-'),
// so the caller writes it with Writer.Error and then closes the connection,
// as Redis does after a protocol error.
type ProtocolError struct {
	// Msg is the full reply text, e.g. "ERR Protocol error: invalid bulk length".
	Msg string
}

// Error returns the reply text.
func (e *ProtocolError) Error() string { return e.Msg }

// The protocol errors with a fixed text. The parser returns these very
// values, so callers may compare with == or errors.Is.
var (
	// ErrInvalidMultibulkLength: a "*<n>" count that is not a canonical
	// integer or exceeds Limits.MaxArgs.
	ErrInvalidMultibulkLength = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	// ErrInvalidBulkLength: a "$<n>" length that is not a canonical
	// integer, is negative, or exceeds Limits.MaxBulk.
	ErrInvalidBulkLength = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	// ErrUnauthMultibulkLength: a count over 10 from a client that has not authenticated (SetUnauthenticated),
	// Redis's bound since 6.2 (CVE-2021-32675).
	ErrUnauthMultibulkLength = &ProtocolError{"ERR Protocol error: unauthenticated multibulk length"}
	// ErrUnauthBulkLength: a bulk over 16 KiB from a client that has not authenticated.
	ErrUnauthBulkLength = &ProtocolError{"ERR Protocol error: unauthenticated bulk length"}
	// ErrTooBigInline: an inline command line longer than Limits.MaxInline.
	ErrTooBigInline = &ProtocolError{"ERR Protocol error: too big inline request"}
	// ErrTooBigMbulkCount: a "*" count line with no '\r' within Limits.MaxInline bytes.
	ErrTooBigMbulkCount = &ProtocolError{"ERR Protocol error: too big mbulk count string"}
	// ErrTooBigBulkCount: a "$" length line with no '\r' within Limits.MaxInline bytes.
	ErrTooBigBulkCount = &ProtocolError{"ERR Protocol error: too big bulk count string"}
	// ErrUnbalancedQuotes: an inline command with an unterminated quote, or
	// a closing quote followed by something other than a space.
	ErrUnbalancedQuotes = &ProtocolError{"ERR Protocol error: unbalanced quotes in request"}
)

// The errors of the bounds on memory, anykv's own texts: Redis closes such a
// client without a reply (and logs it), anykv tells the client why first.
var (
	// ErrQueryBufferLimit: the command being read outgrew Limits.MaxQuery
	// (client-query-buffer-limit).
	ErrQueryBufferLimit = &ProtocolError{"ERR Protocol error: client query buffer limit reached (client-query-buffer-limit)"}
	// ErrClientMemory: the connection's request buffer could not grow within
	// the budget of all connections (maxmemory-clients) because it is the
	// largest, or it was evicted to make room for another's request.
	ErrClientMemory = &ProtocolError{"ERR client closed: request buffers reached maxmemory-clients and this client's is the largest"}
)

// expectedDollar builds the error for a multibulk element that does not
// start with '$'. Redis prints the offending byte with %c and then replaces
// CR and LF with spaces so the reply stays one line; we do the same.
func expectedDollar(got byte) *ProtocolError {
	if got == '\r' || got == '\n' {
		got = ' '
	}
	return &ProtocolError{"ERR Protocol error: expected '$', got '" + string([]byte{got}) + "'"}
}
