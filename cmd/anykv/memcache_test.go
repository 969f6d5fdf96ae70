package main

import (
	"context"
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
// the real binary: every check must pass, as it does against memcached 1.6.
func TestMemcapable(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true})
	host, port, _ := net.SplitHostPort(s.Memcache)
	out, err := libmemcached(t, "memccapable", "-h", host, "-p", port, "-a", "-t", "10")
	if err != nil || strings.Contains(out, "[FAIL]") || !strings.Contains(out, "All tests passed") {
		t.Fatalf("memccapable -a: %v\n%s", err, out)
	}
}
