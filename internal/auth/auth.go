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

// Policy holds the default user's credentials and the exposure rule. A nil *Policy is the policy of no password:
// loopback only. It is safe for concurrent use; SetPassword (Redis's CONFIG SET requirepass) and SetDefaultUser
// (the RESP server's ACL SETUSER default) change it for every protocol.
//
// memcached and HTTP clients act as Redis's default user, and only while that user may do everything: when it is
// enabled, has every command and every key and channel (Full). A default user restricted by ACL rules (or
// disabled) refuses them all, since those protocols cannot apply its rules.
type Policy struct {
	secret atomic.Pointer[secret]
	pace   pacer // wrong passwords, all protocols and clients together
}

// secret is the default user's credentials, swapped whole.
type secret struct {
	password string              // the requirepass value, for CONFIG GET requirepass ("" when none was set)
	digests  [][sha256.Size]byte // SHA-256 of each password the default user accepts
	nopass   bool                // any password passes
	disabled bool                // the default user is off: no client authenticates as it
	limited  bool                // its ACL rules restrict it (not every command, key and channel)
}

// New returns the policy for password; "" means no password, so only loopback clients are served.
func New(password string) *Policy {
	p := &Policy{}
	p.SetPassword(password)
	return p
}

// SetPassword replaces the default user's passwords with password ("" for none: nopass), as Redis's requirepass
// does; its other rules stay. Clients already authenticated stay so, as in Redis; the exposure rule follows at
// once for the connections accepted after it.
func (p *Policy) SetPassword(password string) {
	old := p.secret.Load()
	sec := &secret{password: password, nopass: password == ""}
	if password != "" {
		sec.digests = [][sha256.Size]byte{sha256.Sum256([]byte(password))}
	}
	if old != nil {
		sec.disabled, sec.limited = old.disabled, old.limited
	}
	p.secret.Store(sec)
}

// SetDefaultUser records the default user as ACL rules left it: the SHA-256 digests of its passwords, whether it
// is nopass, enabled, and unrestricted (every command, key and channel). password is kept for CONFIG GET
// requirepass.
func (p *Policy) SetDefaultUser(password string, digests [][sha256.Size]byte, nopass, enabled, full bool) {
	p.secret.Store(&secret{password: password, digests: append([][sha256.Size]byte(nil), digests...), nopass: nopass,
		disabled: !enabled, limited: !full})
}

func (p *Policy) current() *secret {
	if p == nil {
		return &secret{nopass: true}
	}
	return p.secret.Load()
}

// Required reports whether memcached and HTTP clients (and the server's accounting of unauthenticated
// connections) must give a password: unless the default user is nopass, enabled and unrestricted.
func (p *Policy) Required() bool {
	sec := p.current()
	return !sec.nopass || sec.disabled || sec.limited
}

// RESPRequired reports whether a new RESP connection must authenticate before its commands run: Redis's rule,
// unless the default user is nopass and enabled (a restricted nopass default user serves RESP clients within its
// rules).
func (p *Policy) RESPRequired() bool {
	sec := p.current()
	return !sec.nopass || sec.disabled
}

// DefaultUnrestricted reports whether memcached and HTTP clients may act as the default user at all: while it is
// on and unrestricted. A memcached connection authenticated (or served without a password) before ACL rules
// restricted or disabled the default user asks it before each command, and is refused from then on as a new one
// would be: it cannot apply the rules, and would otherwise keep reading and writing every key.
func (p *Policy) DefaultUnrestricted() bool {
	sec := p.current()
	return !sec.disabled && !sec.limited
}

// Password returns the configured password ("" for none), for CONFIG GET requirepass.
func (p *Policy) Password() string { return p.current().password }

// Check reports whether password opens the server to a memcached or HTTP client, as the default user: always when
// the default user is nopass (as Redis's nopass default user accepts any), never when it is disabled or restricted
// by ACL rules. Digests are compared in constant time, so neither the password's bytes nor its length leak
// through timing.
func (p *Policy) Check(password []byte) bool {
	sec := p.current()
	if sec.disabled || sec.limited {
		p.pace.wait()
		return false
	}
	if sec.nopass {
		return true
	}
	if MatchDigest(sec.digests, password) {
		return true
	}
	p.pace.wait()
	return false
}

// MatchDigest reports whether password's SHA-256 is one of digests, comparing every one in constant time.
func MatchDigest(digests [][sha256.Size]byte, password []byte) bool {
	got := sha256.Sum256(password)
	ok := 0
	for i := range digests {
		ok |= subtle.ConstantTimeCompare(got[:], digests[i][:])
	}
	return ok == 1
}

// Pace holds up a failed authentication that did not go through Check (a RESP user's), in the same queue.
func (p *Policy) Pace() {
	if p != nil {
		p.pace.wait()
	}
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

// Admits reports whether a client at remote may be served at all: with a password set for the default user
// every client may (and must then authenticate); while the default user is nopass only loopback clients
// (protected mode, as Redis has it: other ACL users do not lift it).
func (p *Policy) Admits(remote net.Addr) bool {
	return !p.current().nopass || IsLoopback(remote)
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
