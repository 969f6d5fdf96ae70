//go:build !unix

package redis

import "net"

// peerClosed cannot look at the socket here: a vanished client is noticed by the blocked wait's tick alone.
func peerClosed(net.Conn) bool { return false }
