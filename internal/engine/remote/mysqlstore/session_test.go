package mysqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"anykv/internal/engine"
)

// testServerAutocommitOff: a server whose sessions start with autocommit off (autocommit=0 in its configuration,
// or SET GLOBAL) must not change what the engine does: its version reservation and reads are statements of
// their own. Until 2026-12-02 the engine relied on the server's default: with autocommit off the reservation's
// UPDATE left a transaction open on the pooled connection, holding the counter row's lock, and the later reads on
// that connection saw that transaction's old snapshot.
func testServerAutocommitOff(t *testing.T, server string) {
	url := freshDB(t, server)
	admin := sqlDB(t, url)
	if _, err := admin.Exec("SET GLOBAL autocommit = 0"); err != nil { // for sessions opened from now
		t.Fatal(err)
	}
	a, b := open(t, url), open(t, url)
	if _, err := admin.Exec("SET GLOBAL autocommit = 1"); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	a.b.db.SetMaxOpenConns(1) // one connection each, so each store's reads and commits share it
	b.b.db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	set := func(s *Store, v string) {
		t.Helper()
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t",
			Key: []byte("k"), Incr: engine.IncrArgs{Delta: 1, Create: true}}}}); err != nil {
			t.Fatalf("INCR through %s: %v", v, err)
		}
	}
	for i := 1; i <= 3; i++ {
		set(a, "a")
		set(b, "b")
		for _, s := range []*Store{a, b} {
			it, err := s.Get(ctx, "t", []byte("k"), 1)
			if err != nil || string(it.Value) != fmt.Sprint(2*i) {
				t.Fatalf("round %d: k = %q, %v; want %d", i, it.Value, err, 2*i)
			}
		}
	}
}

// testServerSafeUpdates: a server whose sessions start with sql_safe_updates on (which refuses a DELETE without a
// key in its WHERE) still flushes: until 2026-12-02 FLUSHALL's "DELETE FROM anykv_items" was refused there
// (error 1175), every FLUSHALL failing.
func testServerSafeUpdates(t *testing.T, server string) {
	url := freshDB(t, server)
	admin := sqlDB(t, url)
	if _, err := admin.Exec("SET GLOBAL sql_safe_updates = 1"); err != nil { // for sessions opened from now
		t.Fatal(err)
	}
	defer admin.Exec("SET GLOBAL sql_safe_updates = 0")
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpFlush}}}); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	if _, err := s.Get(ctx, "t", []byte("k"), 1); err != engine.ErrNotFound {
		t.Fatalf("k after FLUSHALL: %v, want not found", err)
	}
}

// testServerReadUncommitted: a server whose sessions default to READ UNCOMMITTED must not let the engine read
// what another transaction has not committed (a commit may still fail, and is not durable before it commits):
// until 2026-12-02 the engine's reads ran at the server's default level, and a GET answered a row another
// transaction had inserted and not committed.
func testServerReadUncommitted(t *testing.T, server string) {
	url := freshDB(t, server)
	admin := sqlDB(t, url)
	if _, err := admin.Exec("SET GLOBAL TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"); err != nil { // for sessions opened from now
		t.Fatal(err)
	}
	s := open(t, url)
	if _, err := admin.Exec("SET GLOBAL TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("INSERT INTO anykv_items (tbl, k, v, flags, expires, version) VALUES ('t', 'k', 'dirty', 0, 0, 1)"); err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, "t", []byte("k"), 1); err != engine.ErrNotFound {
		t.Fatalf("GET of a row not committed: %q, %v; want not found", it.Value, err)
	}
	res, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpGet, Table: "t", Key: []byte("k")}}})
	if err != nil || res[0].Err != engine.ErrNotFound {
		t.Fatalf("a batch's read of a row not committed: %+v, %v; want not found", res, err)
	}
}
