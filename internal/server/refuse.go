package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Bounds of answering refused connections.
const (
	// maxRefusing is how many refused connections are answered at once; beyond it they are closed unanswered,
	// so a flood of connections costs no more than this many goroutines.
	maxRefusing = 64
	// refuseWait bounds how long a refused connection is kept: reading an HTTP request's head, writing the
	// answer, and waiting for the client to close first.
	refuseWait = 2 * time.Second
	// maxRefusedRead bounds what is read from a refused connection (an HTTP request's head, then what follows).
	maxRefusedRead = 64 << 10
)

// admit applies the exposure policy and the connection limit to an accepted connection. It returns false when c
// was refused; the refusal (h's Deny or Reject) is then being sent in the background and c will be closed.
// isHTTP refusals wait for the request's head first, so that the client reads the answer as its response.
func (s *Server) admit(c net.Conn, h any, counts *Counts, isHTTP bool) bool {
	var answer func(net.Conn)
	switch {
	case !s.policy.Admits(c.RemoteAddr()):
		counts.Denied.Add(1)
		if d, ok := h.(Denier); ok {
			answer = d.Deny
		} else if isHTTP {
			answer = plainHTTP(http.StatusForbidden, "forbidden: protected mode, loopback clients only")
		}
	case counts.Max.Load() > 0 && counts.Current.Load() >= counts.Max.Load(),
		s.maxTotal.Load() > 0 && s.total.Load() >= s.maxTotal.Load():
		full := counts.Max.Load() > 0 && counts.Current.Load() >= counts.Max.Load()
		roomToEvict := counts.Current.Load() < 2*counts.Max.Load() || counts.Max.Load() == 0
		if !full {
			roomToEvict = s.total.Load() < 2*s.maxTotal.Load()
		}
		if roomToEvict && s.pending.evict(counts, !full) { // an unauthenticated connection made room (pending.go)
			return true
		}
		counts.Rejected.Add(1)
		if r, ok := h.(Rejecter); ok {
			answer = r.Reject
		} else if isHTTP {
			answer = plainHTTP(http.StatusServiceUnavailable, "max number of clients reached")
		}
	default:
		return true
	}
	if answer == nil {
		c.Close()
		return false
	}
	select {
	case s.refusing <- struct{}{}:
	default: // too many being answered already
		c.Close()
		return false
	}
	if !s.track(c) { // shutting down: Shutdown wakes the tracked ones
		<-s.refusing
		c.Close()
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.refusing }()
		defer s.untrack(c)
		refuse(c, answer, isHTTP)
	}()
	return false
}

// refuse answers a refused connection and closes it without losing the answer: it writes, shuts its sending side
// and reads until the client closes (or refuseWait passes), because closing a socket that still holds unread
// input resets the connection, and a reset can destroy the answer before the client has read it.
func refuse(c net.Conn, answer func(net.Conn), isHTTP bool) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseWait))
	lr := &io.LimitedReader{R: c, N: maxRefusedRead}
	if isHTTP { // an HTTP client reads nothing before it has sent its request
		br := bufio.NewReader(lr)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil || len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
				break
			}
		}
	}
	answer(c)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, lr)
}

// plainHTTP answers with a short text reply, for HTTP handlers that do not word refusals themselves (pprof).
func plainHTTP(status int, msg string) func(net.Conn) {
	return func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(status)+" "+http.StatusText(status)+"\r\nContent-Type: text/plain; charset=utf-8\r\n"+
			"Connection: close\r\nContent-Length: "+strconv.Itoa(len(msg)+1)+"\r\n\r\n"+msg+"\n")
	}
}
