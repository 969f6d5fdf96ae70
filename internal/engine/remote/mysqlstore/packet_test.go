package mysqlstore

import (
	"bytes"
	"context"
	"testing"

	"anykv/internal/engine"
)

// testPacketAboveDriverDefault: a server whose max_allowed_packet is above the driver's own default (64 MiB)
// takes a value that fits it. Until 2026-12-02 the driver kept its 64 MiB limit while fits judged by the
// server's: a batch between the two was not interpolated, the driver prepared the multi-statement query instead,
// and the server refused it as a syntax error (1064), a puzzling answer for a value the server allows.
func testPacketAboveDriverDefault(t *testing.T, server string) {
	url := freshDB(t, server)
	admin := sqlDB(t, url)
	if _, err := admin.Exec("SET GLOBAL max_allowed_packet = 128 << 20"); err != nil { // for sessions opened from now
		t.Fatal(err)
	}
	defer admin.Exec("SET GLOBAL max_allowed_packet = 16 << 20")
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	v := make([]byte, 70<<20)
	for i := range v {
		v[i] = byte(i % 251)
	}
	_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("big"), Value: v}}})
	if err != nil {
		t.Fatalf("a 70 MiB value under a max_allowed_packet of 128 MiB: %v", err)
	}
	it, err := s.Get(ctx, "t", []byte("big"), 1)
	if err != nil || !bytes.Equal(it.Value, v) {
		t.Fatalf("read back %d bytes, %v; want the 70 MiB written", len(it.Value), err)
	}
}
