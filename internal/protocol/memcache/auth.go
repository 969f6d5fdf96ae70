package memcache

import (
	"bytes"
	"strconv"

	"anykv/internal/server"
)

// Authentication, as memcached 1.6 does it with -Y (an auth file) on the text protocol. Until a connection has
// authenticated, each request line is answered CLIENT_ERROR unauthenticated, except a set: its data block must
// be "<user> <password>", and the set answers STORED when the password is the server's (the connection is then
// served as usual) or CLIENT_ERROR authentication failure. The key, flags and exptime of that set are ignored and
// nothing is stored. anykv has one password and no user list, so any user name is accepted; everything after the
// first space is the password, so a password may hold spaces. The binary protocol authenticates with SASL
// instead (binconn.go).
const (
	errUnauthenticated = "CLIENT_ERROR unauthenticated"
	errAuthFailure     = "CLIENT_ERROR authentication failure"
	errAuthFormat      = "CLIENT_ERROR bad authentication token format"
	errAuthTermination = "CLIENT_ERROR bad command line termination"
	// maxAuthData bounds the data block of the authenticating set; a longer one is refused and the connection
	// closed, so an unauthenticated client cannot make the server hold more than a line and this.
	maxAuthData = 4096
)

// authenticate handles the next request of a connection that has not authenticated, from buf[r:w]. It returns
// false when that request is not complete yet (nothing is consumed then).
func (c *conn) authenticate() bool {
	in := c.buf[c.r:c.w]
	eol := bytes.IndexByte(in, '\n')
	if eol < 0 {
		if len(in) > maxLineLen { // as memcached: no newline in 2048 bytes is junk
			c.closing = true
		}
		return false
	}
	line := bytes.TrimSuffix(in[:eol], []byte{'\r'})
	f := bytes.Fields(line)
	size := -1
	if len(f) >= 5 && string(f[0]) == "set" {
		if n, err := strconv.ParseUint(string(f[4]), 10, 32); err == nil {
			size = int(n)
		}
	}
	if size < 0 {
		c.r += eol + 1
		c.line(errUnauthenticated)
		return true
	}
	if size > maxAuthData {
		c.line(errAuthFormat)
		c.closing = true
		return true
	}
	end := eol + 1 + size + 2
	if len(in) < end {
		return false
	}
	c.r += end
	c.st[sAuthCmds]++
	data := in[eol+1 : end]
	if data[size] != '\r' || data[size+1] != '\n' {
		c.line(errAuthTermination)
		return true
	}
	user, pass, ok := bytes.Cut(data[:size], []byte{' '})
	if !ok || len(user) == 0 || len(pass) == 0 {
		c.line(errAuthFormat)
		return true
	}
	if !c.h.auth.Check(pass) {
		c.st[sAuthErrors]++
		c.line(errAuthFailure)
		return true
	}
	c.authenticated()
	c.line("STORED")
	return true
}

// authenticated records that the client gave the password; the server then no longer counts its connection among
// those that may be closed to make room at the connection limit (server.Authenticated).
func (c *conn) authenticated() {
	c.authed = true
	server.Authenticated(c.ctx)
}
