package errmap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
