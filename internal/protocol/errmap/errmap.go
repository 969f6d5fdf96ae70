// Package errmap is the one table of how every protocol answers the store's errors: for each sentinel of the
// engine and the command layer, Redis's error text, memcached's error line and HTTP's status and stable code.
// A new sentinel is added here once and every protocol answers it; a protocol's own rules (memcached's
// NOT_STORED for a failed condition, Redis's nil) stay in its handlers.
package errmap

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

// Answer is how each protocol words one error.
type Answer struct {
	// Redis is the error reply, code first ("ERR ...", "WRONGTYPE ..."); "" means "ERR " and the error's text, and
	// a %s in it is replaced by the error's text.
	Redis string
	// Memcache is the error line ("SERVER_ERROR ..." or "CLIENT_ERROR ..."); "" means "SERVER_ERROR " and the
	// error's text.
	Memcache string
	// Status and Code are the HTTP answer: the status and the stable code in the JSON error body.
	Status int
	Code   string
}

// table lists the errors in the order they are matched (errors.Is): the first match wins.
var table = []struct {
	err error
	Answer
}{
	{engine.ErrNotFound, Answer{Redis: "ERR no such key", Status: http.StatusNotFound, Code: "not_found"}},
	{engine.ErrWrongType, Answer{Redis: "WRONGTYPE Operation against a key holding the wrong kind of value",
		Memcache: "CLIENT_ERROR the key holds a Redis collection, not a value", Status: http.StatusConflict, Code: "wrong_type"}},
	{engine.ErrExists, Answer{Status: http.StatusPreconditionFailed, Code: "precondition_failed"}},
	{engine.ErrVersionMismatch, Answer{Status: http.StatusPreconditionFailed, Code: "precondition_failed"}},
	{engine.ErrAborted, Answer{Status: http.StatusPreconditionFailed, Code: "precondition_failed"}},
	{engine.ErrConditionFailed, Answer{Status: http.StatusPreconditionFailed, Code: "precondition_failed"}},
	{engine.ErrNotInteger, Answer{Redis: "ERR value is not an integer or out of range",
		Memcache: "CLIENT_ERROR cannot increment or decrement non-numeric value", Status: http.StatusConflict, Code: "not_integer"}},
	{engine.ErrOverflow, Answer{Redis: "ERR increment or decrement would overflow", Status: http.StatusConflict, Code: "overflow"}},
	{engine.ErrNotFloat, Answer{Redis: "ERR value is not a valid float", Status: http.StatusConflict, Code: "not_float"}},
	{engine.ErrNaN, Answer{Redis: "ERR increment would produce NaN or Infinity", Status: http.StatusConflict, Code: "not_float"}},
	{engine.ErrTooLarge, Answer{Redis: "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
		Memcache: "SERVER_ERROR object too large for cache", Status: http.StatusRequestEntityTooLarge, Code: "value_too_large"}},
	{kv.ErrValueTooLarge, Answer{Redis: "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
		Memcache: "SERVER_ERROR object too large for cache", Status: http.StatusRequestEntityTooLarge, Code: "value_too_large"}},
	{kv.ErrKeyTooLarge, Answer{Redis: "ERR key exceeds maximum allowed size (%s)", Status: http.StatusBadRequest, Code: "key_too_large"}},
	{kv.ErrEmptyTable, Answer{Status: http.StatusBadRequest, Code: "bad_request"}},
	{kv.ErrReservedTable, Answer{Status: http.StatusBadRequest, Code: "bad_request"}},
	{kv.ErrTableTooLong, Answer{Status: http.StatusBadRequest, Code: "table_name_too_long"}},
	{kv.ErrBatchTooLarge, Answer{Redis: "ERR too many commands in one transaction", Status: http.StatusRequestEntityTooLarge, Code: "too_large"}},
	{engine.ErrBatchTooBig, Answer{Status: http.StatusRequestEntityTooLarge, Code: "too_large"}},
	{engine.ErrInvalid, Answer{Status: http.StatusBadRequest, Code: "bad_request"}},
	{engine.ErrCrossSlot, Answer{Redis: "%s", Status: http.StatusBadRequest, Code: "cross_slot"}},
	{engine.ErrNotSupported, Answer{Status: http.StatusNotImplemented, Code: "not_supported"}},
	{engine.ErrClosed, Answer{Redis: "ERR server is shutting down", Status: http.StatusServiceUnavailable, Code: "unavailable"}},
	{engine.ErrNoSpace, Answer{Redis: "MISCONF disk is full (free space below --min-free-space): writes are refused until space is freed; reads still work",
		Memcache: "SERVER_ERROR out of space", Status: http.StatusInsufficientStorage, Code: "insufficient_storage"}},
	{engine.ErrUnknownOutcome, Answer{Status: http.StatusServiceUnavailable, Code: "unknown_outcome"}},
	{engine.ErrUnavailable, Answer{Status: http.StatusServiceUnavailable, Code: "unavailable"}},
	{context.Canceled, Answer{Status: http.StatusServiceUnavailable, Code: "unavailable"}},
	{context.DeadlineExceeded, Answer{Redis: "ERR the datastore did not answer in time (--engine-timeout)",
		Memcache: "SERVER_ERROR the datastore did not answer in time", Status: http.StatusServiceUnavailable, Code: "unavailable"}},
}

// unavailable answers a datastore that cannot be reached now (a node down, a connection refused or reset):
// the request may succeed if sent again, so it is 503, not the server's own failure.
var unavailable = Answer{Status: http.StatusServiceUnavailable, Code: "unavailable"}

// Of returns how the protocols answer err; any error not in the table is the server's failure (500 internal),
// but a network error reaching a datastore is 503 unavailable.
func Of(err error) Answer {
	a, ok := lookup(err)
	var ne *net.OpError
	switch {
	case ok:
	case errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET):
		a = unavailable
	default:
		a = Answer{Status: http.StatusInternalServerError, Code: "internal"}
	}
	msg := Message(err)
	a.Redis = strings.Replace(a.Redis, "%s", msg, 1)
	if a.Redis == "" {
		a.Redis = "ERR " + msg
	}
	if a.Memcache == "" {
		a.Memcache = "SERVER_ERROR " + msg
	}
	return a
}

// Message is err's text as an answer may carry it: one line, no network addresses.
func Message(err error) string { return oneLine(err.Error()) }

// lookup finds err's answer in the table, its texts not yet filled in.
func lookup(err error) (Answer, bool) {
	for _, e := range table {
		if errors.Is(err, e.err) {
			return e.Answer, true
		}
	}
	return Answer{}, false
}

// oneLine replaces line breaks, so an error text never splits a protocol's reply line, and network addresses
// (a datastore driver's "read tcp 127.0.0.1:40416->10.0.0.5:6379: i/o timeout"), which are the server's to log,
// not its clients' to learn.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	return address.ReplaceAllString(s, "<address>")
}

// address matches an IPv4 or bracketed IPv6 address with its port.
var address = regexp.MustCompile(`(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.%]+\]):\d+`)

// Codes lists every HTTP code the table can answer, "internal" included (the API documents each).
func Codes() []string {
	out := []string{"internal"}
	for _, e := range table {
		out = append(out, e.Code)
	}
	return out
}
