package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"anykv/internal/auth"
)

// farListener makes every accepted connection look as if it came from another host, so that the exposure policy
// sees a non-loopback client. (cmd/anykv's exposure test does it for real, from a network namespace.)
type farListener struct{ net.Listener }

func (l farListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return farConn{c}, nil
}

type farConn struct{ net.Conn }

func (farConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5000} }

// CloseWrite reaches the TCP connection underneath, as refuse needs.
func (c farConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

type denyingHandler struct{ *lineHandler }

func (denyingHandler) Deny(c net.Conn) { c.Write([]byte("denied\n")) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestExposurePolicy: without a password a client from another host gets the handler's refusal and is closed;
// with a password it is served (and the protocol asks for the password); loopback clients are always served.
func TestExposurePolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   *auth.Policy
		far      bool
		want     string
		denied   int64
		isServed bool
	}{
		{"nil policy, far", nil, true, "denied", 1, false},
		{"no password, far", auth.New(""), true, "denied", 1, false},
		{"no password, loopback", auth.New(""), false, "ok a", 0, true},
		{"password, far", auth.New("pw"), true, "ok a", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(quiet())
			s.SetAuth(tc.policy)
			defer s.Shutdown(context.Background())
			ln := listen(t)
			var served net.Listener = ln
			if tc.far {
				served = farListener{ln}
			}
			counts := s.Serve("line", served, denyingHandler{newLineHandler()}, 0)
			c, r := dial(t, ln.Addr())
			if got := roundTrip(t, c, r, "a"); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if !tc.isServed {
				if rest, err := io.ReadAll(r); err != nil || len(rest) > 0 {
					t.Fatalf("a denied connection stayed open or said more: %q, %v", rest, err)
				}
			}
			if counts.Denied.Load() != tc.denied {
				t.Fatalf("denied %d, want %d", counts.Denied.Load(), tc.denied)
			}
		})
	}
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
}

// TestHTTPExposurePolicy: an HTTP listener applies the same rule; a handler that words no refusal of its own
// (pprof) gets a plain 403 after its request was read, and a client reads it as the response.
func TestHTTPExposurePolicy(t *testing.T) {
	s := New(quiet())
	defer s.Shutdown(context.Background())
	ln := listen(t)
	counts := s.ServeHTTP("http", farListener{ln}, okHandler(), HTTPOptions{})
	client := &http.Client{Timeout: 5 * time.Second}
	for range 3 {
		resp, err := client.Post("http://"+ln.Addr().String()+"/x", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !resp.Close || !strings.Contains(string(body), "protected mode") {
			t.Fatalf("far client: %d close=%v %q", resp.StatusCode, resp.Close, body)
		}
	}
	if counts.Denied.Load() != 3 || counts.Total.Load() != 0 {
		t.Fatalf("denied %d, served %d", counts.Denied.Load(), counts.Total.Load())
	}
}

// TestHTTPLimitAnswers503: at the connection limit a new HTTP client is answered at once with 503 and
// Connection: close, while the connections already open keep being served; it is not left waiting in Accept.
func TestHTTPLimitAnswers503(t *testing.T) {
	s := New(quiet())
	defer s.Shutdown(context.Background())
	ln := listen(t)
	counts := s.ServeHTTP("http", ln, okHandler(), HTTPOptions{MaxConns: 2})
	url := "http://" + ln.Addr().String() + "/"
	// Two idle connections hold both slots.
	for range 2 {
		c, r := dial(t, ln.Addr())
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("held connection: %q", line)
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for range 3 {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("over the limit: %v (a blocked Accept times out here)", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
			t.Fatalf("over the limit: %d close=%v", resp.StatusCode, resp.Close)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the 503 took %v", d)
		}
	}
	if counts.Rejected.Load() != 3 || counts.Current.Load() != 2 {
		t.Fatalf("rejected %d, current %d", counts.Rejected.Load(), counts.Current.Load())
	}
}

// TestHTTPBodyTimeout: a request body slower than BodyTimeout is cut off; net/http's handler sees a failed read.
func TestHTTPBodyTimeout(t *testing.T) {
	s := New(quiet())
	defer s.Shutdown(context.Background())
	ln := listen(t)
	readErr := make(chan error, 1)
	s.ServeHTTP("http", ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), HTTPOptions{HeaderTimeout: 500 * time.Millisecond, BodyTimeout: 500 * time.Millisecond})
	c, _ := dial(t, ln.Addr())
	c.Write([]byte("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"))
	select {
	case err := <-readErr:
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("body read: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled body was not cut off")
	}
	br := bufio.NewReader(c)
	if _, err := io.ReadAll(br); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("connection after the timeout: %v", err)
	}
}
