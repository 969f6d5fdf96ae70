//go:build unix

package redis

import (
	"net"
	"syscall"
)

// peerClosed reports whether the client closed its end of c (or the connection failed), without waiting and
// without taking any byte: a peek at the socket, which returns 0 bytes once the peer's FIN arrived. A client
// that left while blocked in BLPOP must not be handed an element it would never receive, and one that left
// while its goroutine waits to read is not listed by CLIENT LIST. The peek runs under Control, not Read: Read
// takes the descriptor's read lock, which the connection's own goroutine holds while it waits in a read. A
// connection closed on this side (CLIENT KILL) counts as closed: Control refuses it.
func peerClosed(c net.Conn) bool {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS: the socket underneath
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	if err := rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (err == nil && n == 0) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR) ||
			(err == nil && hungUp(fd)) // bytes sent before the close hide it from the peek
	}); err != nil {
		return true
	}
	return closed
}
