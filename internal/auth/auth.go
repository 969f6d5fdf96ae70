// Package auth is anykv's one authentication and exposure policy: the password every protocol asks for and the
// rule that decides which remote addresses are served at all. The server applies the exposure rule to every
// accepted connection of every listener (internal/server); each protocol asks Check or CheckBearer when its client
// presents the password (RESP AUTH/HELLO, memcached's authenticating set, HTTP's Bearer token).
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProtectedMode explains, in every protocol's refusal, why a client from another host was turned away.
const ProtectedMode = "anykv is running in protected mode because no password is set (--requirepass): " +
	"only clients on the loopback interface are served. To serve other hosts set a password with " +
	"--requirepass (ANYKV_REQUIREPASS), or bind to loopback only (the default)."

// Policy holds the password and the exposure rule. A nil *Policy is the policy of no password: loopback only.
// It is safe for concurrent use; SetPassword (Redis's CONFIG SET requirepass) changes it for every protocol.
type Policy struct {
	secret atomic.Pointer[secret]
	pace   pacer // wrong passwords, all protocols and clients together
}

// secret is one password and its digest, swapped whole.
type secret struct {
	password string
	digest   [sha256.Size]byte
}

// New returns the policy for password; "" means no password, so only loopback clients are served.
func New(password string) *Policy {
	p := &Policy{}
	p.SetPassword(password)
	return p
}

// SetPassword replaces the password ("" for none). Clients already authenticated stay so, as in Redis; the
// exposure rule follows at once for the connections accepted after it.
func (p *Policy) SetPassword(password string) {
	p.secret.Store(&secret{password: password, digest: sha256.Sum256([]byte(password))})
}

func (p *Policy) current() *secret {
	if p == nil {
		return &secret{}
	}
	return p.secret.Load()
}

// Required reports whether clients must give a password.
func (p *Policy) Required() bool { return p.current().password != "" }

// Password returns the configured password ("" for none), for CONFIG GET requirepass.
func (p *Policy) Password() string { return p.current().password }

// Check reports whether password opens the server: always when no password is required (as Redis's nopass
// default user accepts any). Digests are compared in constant time, so neither the password's bytes nor its
// length leak through timing.
func (p *Policy) Check(password []byte) bool {
	sec := p.current()
	if sec.password == "" {
		return true
	}
	got := sha256.Sum256(password)
	if subtle.ConstantTimeCompare(got[:], sec.digest[:]) == 1 {
		return true
	}
	p.pace.wait()
	return false
}

// Wrong passwords are paced: past a burst of failureBurst, each waits its turn at failureInterval after the
// last, whoever sent it and over whichever protocol, before it is answered. One connection tried 50,000 wrong
// passwords in 0.06 s (an audit), which a dictionary attack on a weak password would use; 100 a second, server
// wide, leaves it years for a random password of 8 characters. A right password is never delayed, so while an
// attack runs only clients that mistype wait (behind the attack's queue, at most --maxclients attempts long).
const (
	failureInterval = 10 * time.Millisecond
	failureBurst    = 20
)

// pacer is a virtual schedule of failures (the generic cell rate algorithm): next is when the next failure
// would be answered if the burst were used up.
type pacer struct {
	mu   sync.Mutex
	next time.Time
}

// wait blocks the caller until its failure's turn.
func (pc *pacer) wait() {
	now := time.Now()
	pc.mu.Lock()
	if pc.next.Before(now) {
		pc.next = now
	}
	pc.next = pc.next.Add(failureInterval)
	turn := pc.next.Add(-failureBurst * failureInterval)
	pc.mu.Unlock()
	if d := turn.Sub(now); d > 0 {
		time.Sleep(d)
	}
}

// CheckBearer reports whether an HTTP Authorization header value ("Bearer <password>") opens the server.
func (p *Policy) CheckBearer(authorization string) bool {
	if !p.Required() {
		return true
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return p.Check([]byte(strings.TrimSpace(token)))
}

// Admits reports whether a client at remote may be served at all: with a password set every client may (and
// must then authenticate); without one only loopback clients (protected mode, as Redis has it).
func (p *Policy) Admits(remote net.Addr) bool {
	return p.Required() || IsLoopback(remote)
}

// IsLoopback reports whether a connection's remote address is on this host's loopback interface. Addresses
// that are not TCP (unix sockets, pipes) are local.
func IsLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return true
	}
	return ta.IP.IsLoopback()
}

// RequireBearer wraps an HTTP handler that has no authentication of its own (the pprof profiles) so that, with a
// password set, it answers 401 unless the request carries "Authorization: Bearer <password>".
func (p *Policy) RequireBearer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.CheckBearer(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="anykv"`)
			http.Error(w, "missing or wrong password: send the header Authorization: Bearer <password>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
