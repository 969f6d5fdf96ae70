package auth

import (
	"crypto/sha256"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	far := &net.TCPAddr{IP: net.ParseIP("10.213.0.2"), Port: 1}
	for _, a := range []net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, &net.TCPAddr{IP: net.ParseIP("::1")},
		&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.2")}, &net.UnixAddr{Name: "/tmp/s", Net: "unix"}} {
		if !IsLoopback(a) {
			t.Errorf("%v is loopback", a)
		}
	}
	for _, p := range []*Policy{nil, New("")} {
		if p.Required() || !p.Check([]byte("anything")) || !p.CheckBearer("") || p.Admits(far) ||
			!p.Admits(&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}) || p.Password() != "" {
			t.Errorf("no password (%v): wrong answers", p)
		}
	}
	p := New("s3cret")
	if !p.Required() || !p.Admits(far) || p.Password() != "s3cret" {
		t.Error("password: wrong answers")
	}
	for pw, want := range map[string]bool{"s3cret": true, "s3cre": false, "s3cret ": false, "": false, "S3cret": false} {
		if p.Check([]byte(pw)) != want {
			t.Errorf("Check(%q) = %v", pw, !want)
		}
	}
	for h, want := range map[string]bool{"Bearer s3cret": true, "bearer  s3cret ": true, "Basic s3cret": false,
		"s3cret": false, "Bearer": false, "Bearer wrong": false, "": false} {
		if p.CheckBearer(h) != want {
			t.Errorf("CheckBearer(%q) = %v", h, !want)
		}
	}
	h := p.RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for hdr, want := range map[string]int{"": 401, "Bearer s3cret": 200} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/debug/pprof/", nil)
		r.Header.Set("Authorization", hdr)
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("RequireBearer with %q: %d", hdr, rec.Code)
		}
	}
}

// TestWrongPasswordsArePaced: past a burst, wrong passwords are answered at failureInterval apart, all clients
// together (an audit tried 50,000 in 0.06 s on one connection); the right password is never held up.
func TestWrongPasswordsArePaced(t *testing.T) {
	p := New("sekret")
	const tries, clients = 60, 6
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < tries/clients; i++ {
				if p.Check([]byte("guess")) {
					t.Error("a wrong password passed")
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // the burst is spent and the guesses queue
	ok := time.Now()
	if !p.Check([]byte("sekret")) || !p.CheckBearer("Bearer sekret") {
		t.Fatal("the right password failed")
	}
	rightTook := time.Since(ok)
	wg.Wait()
	if min := (tries - failureBurst) * failureInterval; time.Since(start) < min {
		t.Fatalf("%d wrong passwords answered in %v, want at least %v", tries, time.Since(start), min)
	}
	if rightTook > 200*time.Millisecond { // the guesses' queue is 400 ms long
		t.Fatalf("the right password waited %v behind the guesses", rightTook)
	}
}

// TestRestrictedDefaultUserRefusesEveryone: once ACL rules restrict the default user (or turn it off), memcached
// and HTTP clients (Check, CheckBearer) are refused whatever they send, and must authenticate; RESP clients still
// run as it without a password when it is nopass and on (RESPRequired); the exposure rule follows nopass.
func TestRestrictedDefaultUserRefusesEveryone(t *testing.T) {
	far := &net.TCPAddr{IP: net.ParseIP("10.213.0.2"), Port: 1}
	p := New("")
	p.SetDefaultUser("", nil, true, true, false) // nopass, on, restricted
	if !p.Required() || p.Check([]byte("x")) || p.CheckBearer("") || p.RESPRequired() || p.Admits(far) {
		t.Fatal("a restricted nopass default user: wrong answers")
	}
	p = New("pw")
	p.SetDefaultUser("pw", [][32]byte{sha256.Sum256([]byte("pw"))}, false, false, true) // off
	if p.Check([]byte("pw")) || !p.RESPRequired() || !p.Admits(far) {
		t.Fatal("a disabled default user: wrong answers")
	}
	p.SetDefaultUser("pw", [][32]byte{sha256.Sum256([]byte("pw")), sha256.Sum256([]byte("pw2"))}, false, true, true)
	if !p.Check([]byte("pw2")) || !p.Check([]byte("pw")) || p.Check([]byte("pw3")) {
		t.Fatal("a default user with two passwords: wrong answers")
	}
}
