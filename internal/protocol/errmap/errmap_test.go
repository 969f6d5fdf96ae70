package errmap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/kv"
)

func TestEveryProtocolWordsEachError(t *testing.T) {
	wrapped := fmt.Errorf("pebblestore: %w", engine.ErrWrongType)
	if a := Of(wrapped); a.Redis[:9] != "WRONGTYPE" || a.Status != http.StatusConflict || a.Code != "wrong_type" {
		t.Fatalf("wrapped ErrWrongType: %+v", a)
	}
	if a := Of(fmt.Errorf("%w: 70000 bytes", kv.ErrKeyTooLarge)); a.Redis != "ERR key exceeds maximum allowed size (key too large: 70000 bytes)" {
		t.Fatalf("key too large: %q", a.Redis)
	}
	if a := Of(errors.New("checksum\r\nmismatch")); a.Redis != "ERR checksum  mismatch" || a.Memcache != "SERVER_ERROR checksum  mismatch" ||
		a.Status != http.StatusInternalServerError || a.Code != "internal" {
		t.Fatalf("an unknown error: %+v", a)
	}
	for _, e := range table {
		if a := Of(e.err); a.Status == 0 || a.Code == "" || a.Redis == "" || a.Memcache == "" {
			t.Errorf("%v is missing an answer: %+v", e.err, a)
		}
	}
}

// TestAddressesAreNotAnswered: a datastore driver's error names the server's and the datastore's addresses; the
// answer shows neither (an audit saw them in replies), and a timeout answers in anykv's words.
func TestAddressesAreNotAnswered(t *testing.T) {
	err := fmt.Errorf("redis: %w: read tcp 127.0.0.1:59014->10.1.2.3:6379: i/o timeout", engine.ErrUnknownOutcome)
	if a := Of(err); strings.Contains(a.Redis, "127.0.0.1") || strings.Contains(a.Memcache, "10.1.2.3") ||
		!strings.Contains(a.Redis, "read tcp <address>-><address>: i/o timeout") {
		t.Errorf("answers %q / %q", a.Redis, a.Memcache)
	}
	if a := Of(errors.New("dial tcp [::1]:5432: connection refused")); strings.Contains(a.Redis, "::1") {
		t.Errorf("IPv6 address answered: %q", a.Redis)
	}
	if a := Of(fmt.Errorf("pg read: %w", context.DeadlineExceeded)); a.Redis != "ERR the datastore did not answer in time (--engine-timeout)" {
		t.Errorf("timeout answered %q", a.Redis)
	}
}

// TestNetworkErrorsAreUnavailable: a datastore node that refuses or drops connections is 503 unavailable (send
// again), not 500 internal, which is the server's own failure (an audit killed a Redis Cluster master).
func TestNetworkErrorsAreUnavailable(t *testing.T) {
	err := fmt.Errorf("redis-cluster: %w", &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19206}, Err: syscall.ECONNREFUSED})
	a := Of(err)
	if a.Status != http.StatusServiceUnavailable || a.Code != "unavailable" || strings.Contains(Message(err), "19206") {
		t.Fatalf("a refused dial: %+v, message %q", a, Message(err))
	}
	if a := Of(errors.New("checksum mismatch")); a.Status != http.StatusInternalServerError {
		t.Fatalf("an unknown error: %+v", a)
	}
	// A read that kept failing on an unreachable etcd member (it answered 500 "... concurrent write").
	gaveUp := fmt.Errorf("remote: gave up after 64 attempts: etcd: %w (%w): rpc error", engine.ErrUnavailable, errors.New("conflict"))
	if a := Of(gaveUp); a.Status != http.StatusServiceUnavailable || a.Code != "unavailable" {
		t.Fatalf("an unavailable datastore: %+v", a)
	}
}
