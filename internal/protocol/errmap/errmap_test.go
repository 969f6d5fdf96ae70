package errmap

import (
	"errors"
	"fmt"
	"net/http"
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
