package redis

import (
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeTarget listens for one MIGRATE connection, drains what it is sent, and runs answer on it.
func fakeTarget(t *testing.T, answer func(c net.Conn)) (host, port string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		go io.Copy(io.Discard, c)
		answer(c)
	}()
	host, port, _ = net.SplitHostPort(l.Addr().String())
	return host, port
}

// TestMigrateBoundsTargetReplies: a target that sends bytes without end and no newline is read a line of at most
// migrateMaxReply bytes (before, anykv held all it sent within the timeout: 1.5 GB in seconds, more as fast as the
// target could send).
func TestMigrateBoundsTargetReplies(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.raw(t)
	c.do("SET", "k", "v")
	var sent atomic.Int64
	const most = 256 << 20
	h, p := fakeTarget(t, func(c net.Conn) {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = 'A'
		}
		for sent.Load() < most {
			n, err := c.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	if r := c.do("MIGRATE", h, p, "k", "0", "500"); !strings.HasPrefix(r, "-IOERR") {
		t.Errorf("MIGRATE to an endless target: %q", r)
	}
	if n := sent.Load(); n >= 64<<20 {
		t.Errorf("the server read %d MiB of a reply line", n>>20)
	}
	if r := c.do("GET", "k"); r != "$1\r\nv\r\n" {
		t.Errorf("k after the failed MIGRATE: %q", r)
	}
}

// TestMigrateKeepsKeysUnlessTargetSaysOK: MIGRATE deletes a key only when the target answered its RESTORE +OK.
// Redis (and anykv before) took any reply but an error for success: MIGRATE to an HTTP server, or to anything that
// answers lines, deleted the keys it never stored.
func TestMigrateKeepsKeysUnlessTargetSaysOK(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.raw(t)
	for name, reply := range map[string]string{
		"http":       "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
		"empty line": "+OK\r\n\r\n\r\n",
		"bare LF":    "+OK\n+OK\n",
		"queued":     "+OK\r\n+QUEUED\r\n",
		"integer":    "+OK\r\n:1\r\n",
	} {
		c.do("SET", "a", "1")
		c.do("SET", "b", "2")
		h, p := fakeTarget(t, func(c net.Conn) { c.Write([]byte(reply)) })
		r := c.do("MIGRATE", h, p, "", "0", "500", "KEYS", "a", "b")
		if !strings.HasPrefix(r, "-IOERR") {
			t.Errorf("%s: MIGRATE answered %q", name, r)
		}
		if r := c.do("EXISTS", "a", "b"); r != ":2\r\n" {
			t.Errorf("%s: EXISTS a b after MIGRATE: %q", name, r)
		}
	}
	// The keys the target did answer +OK to are moved, the others kept.
	h, p := fakeTarget(t, func(c net.Conn) { c.Write([]byte("+OK\r\n+OK\r\n+FOO\r\n")) })
	if r := c.do("MIGRATE", h, p, "", "0", "500", "KEYS", "a", "b"); !strings.HasPrefix(r, "-IOERR") {
		t.Errorf("MIGRATE answered %q", r)
	}
	if r := c.do("EXISTS", "a") + c.do("EXISTS", "b"); r != ":0\r\n:1\r\n" {
		t.Errorf("EXISTS a, b after MIGRATE: %q", r)
	}
}
