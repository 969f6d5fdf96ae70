package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/pebblestore"
)

// The defect of issue 10 end to end: keys in a corrupt sstable data block answer errors over RESP, not nil, 0,
// none or -2.
func TestCorruptSSTableAnswersErrors(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() *pebblestore.Store {
		t.Helper()
		// SkipOpenVerify: the store is damaged on purpose below, and Open's sstable check would refuse it.
		s, err := pebblestore.Open(pebblestore.Options{Dir: dir, Logger: quiet, CacheBytes: 1 << 20, SkipOpenVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// 200 items of 200 random (incompressible) bytes fill a few dozen 4 KiB data blocks. Reopening flushes the
	// WAL into sstables.
	s := open()
	const n = 200
	var muts []engine.Mutation
	for i := 0; i < n; i++ {
		v := make([]byte, 200)
		rand.Read(v)
		muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(fmt.Sprintf("key%03d", i)),
			Value: v, Expires: 1 << 50})
	}
	if _, err := s.Apply(context.Background(), &engine.Batch{Now: 1, Muts: muts}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	open().Close()

	// The flush cuts the store's own meta records into an sstable of their own (pebblestore's spans.go): the
	// items are in the largest.
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var sst string
	var data []byte
	for _, p := range ssts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > len(data) {
			sst, data = p, b
		}
	}
	if len(data) < n*200 {
		t.Fatalf("no sstable holds the %d items after reopening: %q", n, ssts)
	}
	// Corrupt a few bytes in the middle of the file: inside a data block, well before the index, filter and
	// footer at the end.
	mid := len(data) * 2 / 5
	for i := mid; i < mid+8; i++ {
		data[i] ^= 0xff
	}
	if err := os.WriteFile(sst, data, 0o644); err != nil {
		t.Fatal(err)
	}

	eng := open()
	var bad string
	for i := 0; i < n && bad == ""; i++ {
		k := fmt.Sprintf("key%03d", i)
		if _, err := eng.Get(context.Background(), "default", []byte(k), 2); err != nil && !errors.Is(err, engine.ErrNotFound) {
			bad = k
		}
	}
	if bad == "" {
		eng.Close()
		t.Fatal("no key reads an error after corrupting the sstable")
	}
	c := serveEngine(t, eng)
	ctx := context.Background()
	for _, args := range [][]any{
		{"get", bad}, {"mget", "key000", bad}, {"exists", bad}, {"type", bad}, {"ttl", bad}, {"pttl", bad},
		{"strlen", bad}, {"getrange", bad, "0", "-1"}, {"dbsize"}, {"keys", "*"}, {"scan", "0", "count", "1000"},
	} {
		err := c.Do(ctx, args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Errorf("%v over a corrupt block: %v, want an error", args, err)
		}
	}
}
