package mysqlstore

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/kv"
	"anykv/internal/protocol/errmap"
)

// testLongKeyIsBadInput: a key longer than the key column (2816 bytes, within anykv's 64 KiB key limit) is the
// client's bad input, answered as one (HTTP 400, a RESP error that is not the server's failure) with nothing
// written; it was an internal error (HTTP 500 "internal", logged as the server's failure on every such request).
func testLongKeyIsBadInput(t *testing.T, server string) {
	s := kv.New(open(t, freshDB(t, server)), kv.Options{SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	res := s.Apply1(ctx, engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte(strings.Repeat("k", 3000)), Value: []byte("v")})
	if a := errmap.Of(res.Err); a.Status != http.StatusBadRequest {
		t.Fatalf("a 3000-byte key: %v answered %d %s, want 400", res.Err, a.Status, a.Code)
	}
	if n, err := s.Count(ctx, "t", kv.Query{}); err != nil || n != 0 {
		t.Fatalf("after the refused write: %d items, %v", n, err)
	}
}
