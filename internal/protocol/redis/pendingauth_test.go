package redis

// A client from another host that never authenticated stays refused once the password is removed.

import (
	"bufio"
	"context"
	"net"
	"testing"
)

// rvRemoteConn is one end of a net.Pipe that claims to come from another host.
type rvRemoteConn struct{ net.Conn }

func (rvRemoteConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}
}

// serveRemote serves a pipe whose client end claims another host, as if the listener had admitted it while a
// password was required (server.Admits: every host may connect then, and must authenticate).
func serveRemote(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	srv, cli := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ts.h.ServeConn(ctx, rvRemoteConn{srv}) }()
	t.Cleanup(func() { cancel(); cli.Close(); srv.Close(); <-done })
	return &rawConn{t: t, c: cli, r: bufio.NewReader(cli)}
}

// TestRemotePendingClientStaysRefusedWithoutPassword: a client from another host, admitted while a password
// was required and never authenticated, must not be served once the password is removed: without a password the
// server is in protected mode, where docs/security.md says another host is refused. 6e05e1c (reverted) served it,
// and marked it authenticated for good, so it kept full access even after a new password was set.
func TestRemotePendingClientStaysRefusedWithoutPassword(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "s3cret")
	admin.expect("+OK\r\n", "AUTH", "s3cret")
	admin.expect("+OK\r\n", "SET", "k", "v")

	remote := serveRemote(t, ts) // an attacker without the password, connected from another host
	remote.expect("-NOAUTH Authentication required.\r\n", "GET", "k")

	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "") // protected mode: other hosts are refused
	remote.send(respCmd("GET", "k"))
	if got := remote.reply(); got == "$1\r\nv\r\n" {
		t.Errorf("a client from another host that never authenticated read a key in protected mode: %q", got)
	}

	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "n3w") // the password is back
	remote.send(respCmd("GET", "k"))
	if got := remote.reply(); got == "$1\r\nv\r\n" {
		t.Errorf("after CONFIG SET requirepass n3w, a client that never gave any password still reads: %q", got)
	}
}
