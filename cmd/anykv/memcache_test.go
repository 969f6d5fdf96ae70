package main

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// libmemcached runs one libmemcached tool (Debian's libmemcached-tools) and returns its output; err is the
// tool's exit status.
func libmemcached(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not found: install the Debian package libmemcached-tools (%v)", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// TestLibmemcachedToolsOnBinary runs libmemcached's memcping, memcstat and memcdump against the real binary:
// they parse the reply of `version`, so it must read as a memcached version, with anykv's own after it.
func TestLibmemcachedToolsOnBinary(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true})
	servers := "--servers=" + s.Memcache
	if out, err := libmemcached(t, "memcping", servers); err != nil {
		t.Errorf("memcping: %v\n%s", err, out)
	}
	out, err := libmemcached(t, "memcstat", servers)
	if err != nil || !strings.Contains(out, "version: 1.6.18-anykv-"+version) {
		t.Errorf("memcstat: %v\n%s", err, out)
	}
	if out, err := libmemcached(t, "memccp", servers, "--flag=3", "memcache_test.go"); err != nil {
		t.Fatalf("memccp: %v\n%s", err, out)
	}
	if out, err := libmemcached(t, "memcdump", servers); err != nil || out != "memcache_test.go\n" {
		t.Errorf("memcdump: %v\n%s", err, out)
	}
}

// TestMemcapable runs libmemcached's conformance checker (memccapable on Debian, memcapable upstream) against
// the real binary, text and binary protocols: every check must pass, as it does against memcached 1.6.
func TestMemcapable(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true})
	host, port, _ := net.SplitHostPort(s.Memcache)
	for _, proto := range []string{"-a", "-b"} {
		out, err := libmemcached(t, "memccapable", "-h", host, "-p", port, proto, "-t", "10")
		if err != nil || strings.Contains(out, "[FAIL]") || !strings.Contains(out, "All tests passed") {
			t.Errorf("memccapable %s: %v\n%s", proto, err, out)
		}
	}
}

// TestStaleMarkSurvivesKill checks that memcached's meta-protocol stale mark (md I) is stored with the item:
// after kill -9 and a restart the item still reads stale, and its first reader wins the recache.
func TestStaleMarkSurvivesKill(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true})
	send := func(req, want string) {
		t.Helper()
		c, err := net.Dial("tcp", s.Memcache)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("%q: got %q (%v), want %q", req, got, err, want)
		}
	}
	send("ms k 5\r\nvalue\r\nmd k I\r\n", "HD\r\nHD\r\n")
	s.Kill()
	s.Restart()
	send("mg k v\r\nmg k v\r\n", "VA 5 X W\r\nvalue\r\nVA 5 Z X\r\nvalue\r\n")
}
