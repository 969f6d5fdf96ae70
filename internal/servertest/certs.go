package servertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are PEM files for TLS tests: a CA, a server certificate for 127.0.0.1 and localhost, and a client
// certificate, both signed by the CA.
type Certs struct {
	CA, Cert, Key, ClientCert, ClientKey string
}

// MakeCerts writes a fresh CA and the certificates it signs into a temporary directory of the test.
func MakeCerts(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCert(t, nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "anykv test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	c := Certs{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client.key")}
	writePEM(t, c.CA, "CERTIFICATE", caDER)
	sKey, _, sDER := newCert(t, caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "anykv test server"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	})
	writePEM(t, c.Cert, "CERTIFICATE", sDER)
	writeKey(t, c.Key, sKey)
	cKey, _, cDER := newCert(t, caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "anykv test client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	})
	writePEM(t, c.ClientCert, "CERTIFICATE", cDER)
	writeKey(t, c.ClientKey, cKey)
	return c
}

var serial int64

// newCert makes a key and a certificate from tmpl, signed by parent (self-signed when parent is nil).
func newCert(t testing.TB, parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "PRIVATE KEY", der)
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
