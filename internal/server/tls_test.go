package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

func clientTLS(t *testing.T, certs servertest.Certs, withCert bool) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if withCert {
		c, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// tlsRoundTrip sends a line over TLS and returns the answer, or the error of the handshake or the read.
func tlsRoundTrip(addr net.Addr, cfg *tls.Config, line string) (string, error) {
	c, err := tls.Dial("tcp", addr.String(), cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// TestTLSListener: the handler serves TLS clients; a plain-text client gets no answer of the handler; with a CA,
// a client without a certificate signed by it is refused during the handshake.
func TestTLSListener(t *testing.T) {
	certs := servertest.MakeCerts(t)
	s := New(quiet())
	defer s.Shutdown(t.Context())
	cfg, err := TLSFiles{Cert: certs.Cert, Key: certs.Key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	addr, _, err := s.ListenTLS("line", "127.0.0.1:0", cfg, newLineHandler(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tlsRoundTrip(addr, clientTLS(t, certs, false), "hello"); err != nil || got != "ok hello\n" {
		t.Fatalf("TLS client: %q, %v", got, err)
	}
	plain, r := dial(t, addr)
	plain.Write([]byte("hello\n"))
	if line, _ := r.ReadString('\n'); strings.Contains(line, "ok hello") {
		t.Fatalf("a plain-text client was served on the TLS listener: %q", line)
	}

	mutual, err := TLSFiles{Cert: certs.Cert, Key: certs.Key, CA: certs.CA}.Config()
	if err != nil {
		t.Fatal(err)
	}
	maddr, _, err := s.ListenTLS("line", "127.0.0.1:0", mutual, newLineHandler(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tlsRoundTrip(maddr, clientTLS(t, certs, false), "hello"); err == nil {
		t.Fatalf("a client without a certificate was served: %q", got)
	}
	if got, err := tlsRoundTrip(maddr, clientTLS(t, certs, true), "hello"); err != nil || got != "ok hello\n" {
		t.Fatalf("client with a certificate: %q, %v", got, err)
	}
}

// TestTLSListenerSharesTheLimit: a plain and a TLS listener of one protocol share their connection limit.
func TestTLSListenerSharesTheLimit(t *testing.T) {
	certs := servertest.MakeCerts(t)
	s := New(quiet())
	defer s.Shutdown(t.Context())
	cfg, err := TLSFiles{Cert: certs.Cert, Key: certs.Key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	h := newLineHandler()
	plainAddr, counts, err := s.Listen("line", "127.0.0.1:0", h, 1)
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr, shared, err := s.ListenTLS("line", "127.0.0.1:0", cfg, h, 1, counts)
	if err != nil || shared != counts {
		t.Fatalf("counts not shared (%v)", err)
	}
	c, r := dial(t, plainAddr)
	if got := roundTrip(t, c, r, "one"); got != "ok one" {
		t.Fatalf("plain: %q", got)
	}
	if got, err := tlsRoundTrip(tlsAddr, clientTLS(t, certs, false), "two"); err != nil || got != "full\n" {
		t.Fatalf("TLS client past the shared limit: %q, %v; want the handler's refusal", got, err)
	}
}

func TestTLSFilesErrorsNameTheFile(t *testing.T) {
	if _, err := (TLSFiles{}).Config(); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("no files: %v", err)
	}
	certs := servertest.MakeCerts(t)
	if _, err := (TLSFiles{Cert: certs.Cert, Key: certs.ClientKey}).Config(); err == nil || !strings.Contains(err.Error(), certs.ClientKey) {
		t.Fatalf("mismatched key: %v", err)
	}
	if _, err := (TLSFiles{Cert: certs.Cert, Key: certs.Key, CA: certs.Key}).Config(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a key as CA: %v", err)
	}
}

// CloseNow of a TLS connection whose client does not read returns at once, where Close waits up to 5 s to send
// its close_notify; the client then finds the connection closed.
func TestCloseNowDoesNotWaitForTheClient(t *testing.T) {
	certs := servertest.MakeCerts(t)
	cert, err := tls.LoadX509KeyPair(certs.Cert, certs.Key)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe() // synchronous: a write waits until the other side reads
	srv := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}})
	cli := tls.Client(b, clientTLS(t, certs, false))
	done := make(chan error, 1)
	go func() { done <- cli.Handshake() }()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	CloseNow(srv) // the client reads nothing
	if took := time.Since(start); took > time.Second {
		t.Fatalf("CloseNow took %v", took)
	}
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cli.Read(make([]byte, 1)); err == nil {
		t.Fatal("the client read from a closed connection")
	}
}
