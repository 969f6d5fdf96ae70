//go:build unix

package redis

import (
	"net"
	"testing"
	"time"
)

// TestPeerClosedWhileAReadWaits: peerClosed answers at once while the connection's own goroutine waits in a read
// (CLIENT LIST asks it of idle connections); a peek that took the read lock waited for that read to end.
func TestPeerClosedWhileAReadWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	read := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := server.Read(b[:])
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // the read waits
	answer := make(chan bool, 1)
	go func() { answer <- peerClosed(server) }()
	select {
	case closed := <-answer:
		if closed {
			t.Fatal("peerClosed: true for a connected client")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peerClosed waited for the connection's read")
	}
	client.Close()
	if err := <-read; err == nil {
		t.Fatal("the read ended without an error after the close")
	}
	if !peerClosed(server) {
		t.Fatal("peerClosed: false after the client closed")
	}
}
