package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// TLSFiles names the PEM files of the TLS listeners: the server's certificate chain and key, and optionally the
// CA whose signed client certificates are then required (mutual TLS, as Redis's tls-ca-cert-file with
// tls-auth-clients yes).
type TLSFiles struct {
	Cert, Key, CA string
}

// Config loads the files into a TLS configuration (TLS 1.2 or later). An error names the file at fault.
func (f TLSFiles) Config() (*tls.Config, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("TLS listeners need --tls-cert and --tls-key")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", f.Cert, f.Key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", f.CA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// CloseNow closes c at once. Closing a TLS connection first sends its close_notify, which waits up to 5 s for a
// client that does not read (a subscriber cut off at its output limit, a client killed): the connection under
// the TLS one is closed instead, without it, so that no caller, lock held or not, waits on such a client.
func CloseNow(c net.Conn) error {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return c.Close()
}
