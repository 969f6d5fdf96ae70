package memcache

import (
	"context"
	"testing"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestRefusedKeyDiscardsItsDataBlock checks that a storage command (set, cas, ms) refused for what memcached
// would accept (a key with a control character, a key longer than the store's limit but within memcached's 250
// bytes, client flags over 32 bits, which memcached truncates) has its data block discarded: memcached stores
// such a request, so its data is the client's value, never a command. Before, the block was read as a command
// line, so a value "flush_all" emptied the table.
func TestRefusedKeyDiscardsItsDataBlock(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1, Limits: kv.Limits{MaxKey: 8}})
	defer store.Close()
	h := New(store, Options{})
	in := "set keep 0 0 1\r\nx\r\n" +
		"set a\tb 0 0 9\r\nflush_all\r\n" + // a tab: memcached stores it
		"ms a\x01b 9\r\nflush_all\r\n" +
		"ms a\tb 9 q\r\nflush_all\r\n" +
		"set toolongkey 0 0 9\r\nflush_all\r\n" + // longer than the store's 8 bytes
		"ms toolongkey 9 T0\r\nflush_all\r\n" +
		"ms YWJjZGVmZ2hpams= 9 b\r\nflush_all\r\n" + // decodes to 10 bytes
		"set a\tb 0 0 9 noreply\r\nflush_all\r\n" +
		"set k 4294967296 0 9\r\nflush_all\r\n" + // memcached truncates the flags to 32 bits
		"cas k 4294967296 0 9 1\r\nflush_all\r\n" +
		"get keep\r\n"
	sc := &scriptConn{chunks: [][]byte{[]byte(in)}}
	h.ServeConn(context.Background(), sc)
	const refused = "CLIENT_ERROR bad command line format\r\n"
	want := "STORED\r\n" + refused + refused + refused + refused + refused + refused + refused + refused +
		"VALUE keep 0 1\r\nx\r\nEND\r\n"
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if _, err := store.Get(context.Background(), "default", []byte("keep")); err != nil {
		t.Fatalf("item lost: %v", err)
	}
}
