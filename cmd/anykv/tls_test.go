package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// TestTLSOnEveryProtocol: with --resp-tls, --memcache-tls and --http-tls, redis-cli --tls, a memcached client
// over TLS and curl https:// reach one keyspace; with --tls-ca a client without a certificate is refused and
// one with a certificate signed by the CA is served.
func TestTLSOnEveryProtocol(t *testing.T) {
	for _, tool := range []string{"redis-cli", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed", tool)
			}
			t.Skipf("%s not installed (CI unset: skipping)", tool)
		}
	}
	certs := servertest.MakeCerts(t)
	respTLS, mcTLS, httpTLS := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
	s := servertest.Start(t, servertest.Options{Args: []string{"--resp-tls", respTLS, "--memcache-tls", mcTLS,
		"--http-tls", httpTLS, "--tls-cert", certs.Cert, "--tls-key", certs.Key}})

	host, port := splitAddr(t, respTLS)
	cli := func(args ...string) string {
		out, err := exec.Command("redis-cli", append([]string{"--tls", "--cacert", certs.CA, "-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := cli("SET", "greeting", "hello"); got != "OK" {
		t.Fatalf("SET over TLS: %q", got)
	}
	if got := cli("GET", "greeting"); got != "hello" {
		t.Fatalf("GET over TLS: %q", got)
	}

	c, err := tls.Dial("tcp", mcTLS, &tls.Config{RootCAs: caPool(t, certs.CA), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("get greeting\r\n"))
	r := bufio.NewReader(c)
	var got string
	for !strings.HasSuffix(got, "END\r\n") {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("memcached over TLS: %q, %v", got, err)
		}
		got += line
	}
	if got != "VALUE greeting 0 5\r\nhello\r\nEND\r\n" {
		t.Fatalf("memcached over TLS: %q", got)
	}

	out, err := exec.Command("curl", "-sS", "--cacert", certs.CA, "https://"+httpTLS+"/v1/tables/default/keys/greeting").CombinedOutput()
	if err != nil || string(out) != "hello" {
		t.Fatalf("curl https: %q, %v", out, err)
	}
	// The plain listeners are still there.
	if v, err := client(t, s.RESP).Get(ctx, "greeting").Result(); err != nil || v != "hello" {
		t.Fatalf("plain RESP: %q, %v", v, err)
	}

	// Mutual TLS: a certificate signed by --tls-ca is required.
	mutual := servertest.FreePort(t)
	servertest.Start(t, servertest.Options{Args: []string{"--resp-tls", mutual, "--tls-cert", certs.Cert,
		"--tls-key", certs.Key, "--tls-ca", certs.CA}})
	host, port = splitAddr(t, mutual)
	if out, err := exec.Command("redis-cli", "--tls", "--cacert", certs.CA, "-h", host, "-p", port, "PING").CombinedOutput(); err == nil && strings.Contains(string(out), "PONG") {
		t.Fatalf("a client without a certificate was served: %s", out)
	}
	out, err = exec.Command("redis-cli", "--tls", "--cacert", certs.CA, "--cert", certs.ClientCert, "--key", certs.ClientKey,
		"-h", host, "-p", port, "PING").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Fatalf("client with a certificate: %q, %v", out, err)
	}
}

func caPool(t *testing.T, path string) *x509.CertPool {
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pem)
	return p
}

func splitAddr(t *testing.T, addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		t.Fatalf("address %q", addr)
	}
	return addr[:i], addr[i+1:]
}

// TestTLSNeedsItsFiles: a TLS listener without a certificate stops the server with one clear line.
func TestTLSNeedsItsFiles(t *testing.T) {
	out, err := exec.Command(servertest.Binary(t), "serve", "--dir", t.TempDir(), "--resp", servertest.FreePort(t),
		"--memcache", "", "--http", "", "--resp-tls", servertest.FreePort(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TLS listeners need --tls-cert and --tls-key") {
		t.Fatalf("exit %v: %s", err, out)
	}
}
