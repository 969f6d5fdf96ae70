package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"anykv/internal/auth"
	"anykv/internal/engine"
	"anykv/internal/protocol/errmap"
)

// apiError is a failure the API itself decides (a malformed parameter, a missing password), already carrying its
// status and stable code.
type apiError struct {
	status    int
	code, msg string
}

func (e *apiError) Error() string { return e.msg }

func newError(status int, code, msg string) error {
	return &apiError{status: status, code: code, msg: msg}
}

// badRequest reports a malformed request (400 bad_request).
func badRequest(format string, args ...any) error {
	return newError(http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...))
}

// unavailable wraps an engine failure that makes the server unable to answer now (503).
func unavailable(err error) error {
	return newError(http.StatusServiceUnavailable, "unavailable", errmap.Message(err))
}

var (
	errNoRoute      = newError(http.StatusNotFound, "not_found", "no such route")
	errUnauthorized = newError(http.StatusUnauthorized, "unauthorized",
		"missing or wrong password: send the header Authorization: Bearer <password>")
	errPrecondition = newError(http.StatusPreconditionFailed, "precondition_failed",
		"the precondition (If-Match or If-None-Match) does not hold")
	errProtectedMode  = newError(http.StatusForbidden, "forbidden", auth.ProtectedMode)
	errTooManyClients = newError(http.StatusServiceUnavailable, "unavailable",
		"max number of clients reached (--maxclients); try again later")
)

// bodyError classifies a failed read of a request body: over the size limit (413), too slow for the server's
// body timeout (408), or cut off by the client (400). None is the server's failure.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return newError(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time")
	}
	return badRequest("reading the request body: %v", err)
}

// rawReply is err as a whole HTTP/1.1 response that closes the connection, for the refusals the server sends on
// connections it does not hand to net/http.
func rawReply(err error) []byte {
	var body errorBody
	status, code, msg := classify(err)
	body.Error.Code, body.Error.Message = code, msg
	js, _ := json.Marshal(body)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Connection: close\r\nRetry-After: 1\r\n\r\n%s\n", status, http.StatusText(status), len(js)+1, js)
}

// classify returns the status, code and message that answer err.
func classify(err error) (status int, code, msg string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.msg
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, "value_too_large",
			"request body over the limit of " + strconv.FormatInt(mbe.Limit, 10) + " bytes"
	}
	a := errmap.Of(err) // the store's errors: the table all protocols share
	return a.Status, a.Code, errmap.Message(err)
}

// errorBody is the JSON of every error of the /v1 API.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers err as {"error":{"code":..., "message":...}}.
func writeError(w http.ResponseWriter, err error) {
	var body errorBody
	var status int
	status, body.Error.Code, body.Error.Message = classify(err)
	writeJSON(w, status, body)
}

// writeCompatError answers err in Active Cloud DB's shape, {"error": "message"}.
func writeCompatError(w http.ResponseWriter, err error) {
	status, _, msg := classify(err)
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeJSON writes v as the JSON reply with status. HTML characters are not escaped: the API serves data, not
// pages, and clients should see their keys as stored.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }
